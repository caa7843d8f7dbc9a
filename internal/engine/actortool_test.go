package engine_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/actors"
	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/tools"
)

// echoActor answers every ActorCall with its arguments' text.
func echoActor(ctx actor.Context) {
	if c, ok := ctx.Message().(*tools.ActorCall); ok {
		var in echoIn
		_ = json.Unmarshal(c.Arguments, &in)
		ctx.Respond(&tools.ActorResult{Result: tools.TextResult(in.Text)})
	}
}

// actorToolEngine starts an engine on system whose tool "actor-echo" is backed by pid.
func actorToolEngine(tb testing.TB, system *actor.ActorSystem, pid *actor.PID, rec metrics.Recorder) (*engine.Connection, chanStream) {
	tb.Helper()
	set := testTools(tb, tools.Tool{Name: "actor-echo", Handler: tools.NewActorHandler(system, pid)})
	_, conn, s := start(tb, engine.Config{System: system, Tools: set, Metrics: rec})
	return conn, s
}

// TestActorToolUnwatches: the request actors stop watching the tool's actor when their call
// ends, so a long-lived host actor collects no watchers: when it stops, no Terminated goes to
// a request actor that is gone.
func TestActorToolUnwatches(t *testing.T) {
	system := actors.NewSystem(zap.NewNop())
	var stale atomic.Int32
	sub := system.EventStream.Subscribe(func(evt any) {
		if dl, ok := evt.(*actor.DeadLetterEvent); ok {
			if _, ok := dl.Message.(*actor.Terminated); ok {
				stale.Add(1)
			}
		}
	})
	defer system.EventStream.Unsubscribe(sub)
	pid := system.Root.Spawn(actor.PropsFromFunc(echoActor))
	conn, s := actorToolEngine(t, system, pid, nil)
	const n = 50
	for i := range n {
		conn.Deliver(callMsg(int64(i+1), "actor-echo", `{"text":"x"}`), s)
	}
	for range n {
		if frame := <-s.ch; !strings.Contains(string(frame), `"text":"x"`) {
			t.Fatalf("frame %s", frame)
		}
	}
	time.Sleep(50 * time.Millisecond) // let the request actors stop
	if err := system.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if got := stale.Load(); got != 0 {
		t.Errorf("%d Terminated messages went to request actors that had stopped", got)
	}
}

// BenchmarkCallActorTool is BenchmarkCall with the tool backed by an actor: the request actor
// sends an ActorCall, watches the actor and waits for its reply as a message.
func BenchmarkCallActorTool(b *testing.B) {
	system := actors.NewSystem(zap.NewNop())
	pid := system.Root.Spawn(actor.PropsFromFunc(echoActor))
	defer system.Root.Stop(pid)
	conn, s := actorToolEngine(b, system, pid, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		conn.Deliver(callMsg(int64(i+1), "actor-echo", `{"text":"hi"}`), s)
		<-s.ch
	}
}

// BenchmarkCallWithMetrics is BenchmarkCall recording into metrics.Memory, to show what the
// recorder costs on the call path.
func BenchmarkCallWithMetrics(b *testing.B) {
	_, conn, s := start(b, engine.Config{Tools: testTools(b), Metrics: metrics.NewMemory()})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		conn.Deliver(callMsg(int64(i+1), "echo", `{"text":"hi"}`), s)
		<-s.ch
	}
}
