package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// frames collects what a connection sends.
type frames chan []byte

func (f frames) Send(frame []byte) { f <- frame }
func (frames) Close()              {}

func (f frames) next(t *testing.T) string {
	t.Helper()
	select {
	case b := <-f:
		return string(b)
	case <-time.After(10 * time.Second):
		t.Fatal("no frame within 10 s")
		return ""
	}
}

func (f frames) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case b := <-f:
		t.Fatalf("unexpected frame %s", b)
	case <-time.After(d):
	}
}

func passivationEngine(t *testing.T, extra ...tools.Tool) *Engine {
	t.Helper()
	defs := append([]tools.Tool{{
		Name:        "wait",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: tools.Func(func(ctx context.Context, _ struct{}) (*tools.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	}}, extra...)
	set, err := tools.Compile(defs)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := Start(Config{Tools: set})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := eng.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return eng
}

func deliver(t *testing.T, c *Connection, raw string, s Stream) {
	t.Helper()
	m, werr := protocol.Decode([]byte(raw))
	if werr != nil {
		t.Fatal(werr)
	}
	c.Deliver(m, s)
}

// passivateAndWait passivates c and waits until c has no actor, and checks that its actor left the registry and
// that the connection no longer holds its PID (whose cached process would keep it reachable).
func passivateAndWait(t *testing.T, e *Engine, c *Connection) {
	t.Helper()
	c.pmu.Lock()
	pid := c.pid
	c.pmu.Unlock()
	c.Passivate()
	deadline := time.Now().Add(10 * time.Second)
	for !c.Passive() {
		if time.Now().After(deadline) {
			t.Fatal("the connection did not passivate")
		}
		time.Sleep(time.Millisecond)
	}
	c.pmu.Lock()
	held := c.pid
	c.pmu.Unlock()
	if held != nil {
		t.Error("a passive connection holds its former actor's PID")
	}
	for {
		if _, ok := e.system.ProcessRegistry.GetLocal(pid.Id); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the passive connection's actor %s is still registered", pid.Id)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPassivation: an idle connection lets its actor go and keeps its state; a message brings
// it back as it was (initialized, its version, its subscriptions, its log level); a connection
// with a call in flight does not passivate; broadcasts reach a passive connection's
// notification path; closing a passive connection ends it.
func TestPassivation(t *testing.T) {
	e := passivationEngine(t)
	notify := make(frames, 64)
	c, err := e.ConnectNotify("http", notify)
	if err != nil {
		t.Fatal(err)
	}
	out := make(frames, 64)
	deliver(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`, out)
	if got := out.next(t); !strings.Contains(got, `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize: %s", got)
	}
	deliver(t, c, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"demo://a"}}`, out)
	out.next(t)
	deliver(t, c, `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"error"}}`, out)
	out.next(t)

	passivateAndWait(t, e, c)

	// Broadcasts are sent from the record: a list change, an update of the subscribed
	// resource, none of another resource.
	e.ResourceUpdated("demo://other")
	e.ResourceUpdated("demo://a")
	if got := notify.next(t); got != `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"demo://a"}}` {
		t.Errorf("update: %s", got)
	}
	e.broadcast(&listChanged{method: protocol.MethodToolsListChanged})
	if got := notify.next(t); got != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
		t.Errorf("list change: %s", got)
	}
	if !c.Passive() {
		t.Fatal("a broadcast brought the actor back")
	}

	// A request brings it back, initialized, with what the client declared and its level.
	deliver(t, c, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, out)
	if got := out.next(t); !strings.Contains(got, `"name":"wait"`) {
		t.Fatalf("tools/list after passivation: %s", got)
	}
	c.pmu.Lock()
	pid := c.pid
	c.pmu.Unlock()
	if c.Passive() {
		t.Fatal("still passive after a request")
	}
	if _, ok := e.system.ProcessRegistry.GetLocal(pid.Id); !ok {
		t.Fatal("no actor after a request")
	}
	e.ResourceUpdated("demo://a") // the subscription survived on the live actor too
	if got := notify.next(t); !strings.Contains(got, `"uri":"demo://a"`) {
		t.Errorf("update after activation: %s", got)
	}

	// A call in flight keeps the actor.
	deliver(t, c, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","arguments":{}}}`, out)
	time.Sleep(50 * time.Millisecond)
	c.Passivate()
	time.Sleep(100 * time.Millisecond)
	if c.Passive() {
		t.Fatal("passivated with a call in flight")
	}
	deliver(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`, out)
	out.none(t, 100*time.Millisecond) // a cancelled call is not answered
	passivateAndWait(t, e, c)
	// The state went through an actor brought back and out again.
	c.pmu.Lock()
	snap := c.snap
	c.pmu.Unlock()
	level, _ := protocol.LogSeverity(protocol.LevelError)
	if !snap.initialized || snap.version != "2025-06-18" || !snap.caps.HasRoots() || snap.info.Name != "t" ||
		snap.level != int32(level) || len(snap.subs) != 1 {
		t.Errorf("state after a round trip: %+v", snap)
	}

	c.Close()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("closing a passive connection did not end it")
	}
	if n := e.Occupancy().Connections; n != 0 {
		t.Errorf("%d connections after close", n)
	}
}
