package e2e_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/actors"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

// pingActor is a host actor that answers "ping" with "pong".
func pingActor(ctx actor.Context) {
	if ctx.Message() == "ping" {
		ctx.Respond("pong")
	}
}

func assertAlive(t *testing.T, system *actor.ActorSystem, pid *actor.PID) {
	t.Helper()
	res, err := system.Root.RequestFuture(pid, "ping", mcptest.Watchdog).Result()
	if err != nil || res != "pong" {
		t.Fatalf("host actor %s: %v, %v", pid.Id, res, err)
	}
}

// localIDs lists the ids of every process registered on system.
func localIDs(system *actor.ActorSystem) []string {
	var ids []string
	for _, bucket := range system.ProcessRegistry.LocalPIDs.LocalPIDs {
		ids = append(ids, bucket.Keys()...)
	}
	return ids
}

// TestServerOnHostActorSystem embeds a server in a host's actor system: its top-level name
// avoids the host's actors even when the host holds the name the server would pick first;
// Close, with calls in flight on a Go handler and on a host actor, stops every actor and
// goroutine of the server and leaves the host's system and actors running.
func TestServerOnHostActorSystem(t *testing.T) {
	system := newHostSystem()
	defer system.Shutdown()
	before := system.Root.Spawn(actor.PropsFromFunc(pingActor))

	// Hold the name the server would take first: read the next id, occupy it, rewind.
	seq := &system.ProcessRegistry.SequenceID
	squatted, err := system.Root.SpawnNamed(actor.PropsFromFunc(pingActor), actors.RootPrefix+system.ProcessRegistry.NextId())
	if err != nil {
		t.Fatal(err)
	}
	atomic.AddUint64(seq, ^uint64(0))

	baseline := goleak.IgnoreCurrent()
	cancels := make(chan *tools.ActorCancel, 1)
	calls := make(chan *tools.ActorCall, 1)
	host := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &hostActor{cancels: cancels, calls: calls} }))
	handlerStarted := make(chan struct{})
	srv, err := toolgrain.NewServer(toolgrain.Config{
		ActorSystem: system,
		Limits:      toolgrain.LimitsConfig{HandlerGrace: 2 * time.Second},
		Tools: []tools.Tool{
			{Name: "host", InputSchema: modeSchema, Handler: tools.NewActorHandler(system, host)},
			{Name: "block", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				close(handlerStarted)
				<-ctx.Done()
				return nil, ctx.Err()
			})},
			{Name: "spawned", InputSchema: modeSchema, Handler: tools.NewActorPropsHandler(actor.PropsFromProducer(func() actor.Actor { return &hostActor{} }))},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	root := srv.RootPID()
	if root.Equal(squatted) || !strings.HasPrefix(root.Id, actors.RootPrefix+"$") {
		t.Fatalf("server root %s, host actor %s", root.Id, squatted.Id)
	}
	assertAlive(t, system, squatted)

	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := c.CallTool(ctx, "spawned", map[string]string{"mode": "ok"}); err != nil || res.IsError {
		t.Fatalf("spawned: %+v, %v", res, err)
	}
	results := make(chan error, 2)
	for _, name := range []string{"host", "block"} {
		go func() {
			_, err := c.CallTool(ctx, name, map[string]string{"mode": "silent"})
			results <- err
		}()
	}
	<-calls
	<-handlerStarted

	var engineIDs int
	for _, id := range localIDs(system) {
		if strings.HasPrefix(id, root.Id+"/") {
			engineIDs++
		}
	}
	if engineIDs < 4 { // diagnostics, the spawned tool actor, the connection, two request actors
		t.Errorf("%d actors below %s, want at least 4", engineIDs, root.Id)
	}

	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range 2 {
		if err := <-results; !errors.Is(err, toolgrain.ErrClientClosed) {
			t.Errorf("call in flight at Close: %v, want ErrClientClosed", err)
		}
	}
	select {
	case m := <-cancels:
		if !strings.Contains(m.Cause.Error(), "connection closed") {
			t.Errorf("cancel cause = %v", m.Cause)
		}
	case <-time.After(mcptest.Watchdog):
		t.Fatal("the host actor was not told that its call ended")
	}
	if _, err := srv.ConnectInMemory(); !errors.Is(err, toolgrain.ErrServerClosed) {
		t.Errorf("ConnectInMemory after Close: %v", err)
	}

	// Nothing of the server is left: no actor, no goroutine.
	for _, id := range localIDs(system) {
		if id == root.Id || strings.HasPrefix(id, root.Id+"/") {
			t.Errorf("server actor %s still registered after Close", id)
		}
	}
	goleak.VerifyNone(t, baseline, goleak.IgnoreTopFunction(mcptest.DeadLetterThrottle))

	// The host's system and actors keep running, and new ones can start.
	assertAlive(t, system, before)
	assertAlive(t, system, squatted)
	assertAlive(t, system, system.Root.Spawn(actor.PropsFromFunc(pingActor)))
	if res, err := system.Root.RequestFuture(host, &tools.ActorCall{Arguments: []byte(`{"mode":"ok"}`)}, mcptest.Watchdog).Result(); err != nil {
		t.Fatalf("host tool actor after Close: %v", err)
	} else if r, _ := res.(*tools.ActorResult); r == nil {
		t.Fatalf("host tool actor replied %T", res)
	}
}

// TestServerOwnSystem: without Config.ActorSystem the server makes its own system and leaves
// no goroutine behind.
func TestServerOwnSystem(t *testing.T) {
	baseline := goleak.IgnoreCurrent()
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{{Name: "t", Handler: tools.HandlerFunc(
		func(context.Context, *tools.Request) (*tools.Result, error) { return tools.TextResult("ok"), nil })}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := c.CallTool(ctx, "t", nil); err != nil || resultText(res) != "ok" {
		t.Fatalf("CallTool: %+v, %v", res, err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, baseline, goleak.IgnoreTopFunction(mcptest.DeadLetterThrottle))
}

// logRecorder is a slog handler that keeps every record's text, for a host's actor system.
type logRecorder struct {
	mu    *sync.Mutex
	lines *[]string
}

func (h logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h logRecorder) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	h.mu.Lock()
	*h.lines = append(*h.lines, line)
	h.mu.Unlock()
	return nil
}
func (h logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logRecorder) WithGroup(string) slog.Handler      { return h }

// TestNoDeadLetterNoiseInTheHostLog: the engine's own messages that reach its actors after
// they stopped (cancellations racing completions, timers after shutdown, a client closing after
// the server) leave no line in the host's actor-system log.
func TestNoDeadLetterNoiseInTheHostLog(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var lines []string
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(logRecorder{&mu, &lines})
	}))
	defer system.Shutdown()
	srv, err := toolgrain.NewServer(toolgrain.Config{ActorSystem: system, Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{HandlerGrace: 50 * time.Millisecond},
		OnError: func(error, *toolgrain.ToolErrorDetails) {}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		// Cancellations that race the call's own completion.
		cctx, ccancel := context.WithTimeout(ctx, time.Duration(i%5)*time.Millisecond)
		_, _ = c.CallTool(cctx, "sleep", map[string]int{"ms": 2})
		ccancel()
	}
	go func() { _, _ = c.CallTool(ctx, "sleep", map[string]int{"ms": 60000}) }()
	time.Sleep(20 * time.Millisecond)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	time.Sleep(200 * time.Millisecond) // past the close grace and the timers
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, "DeadLetter") {
			t.Errorf("host log: %s", l)
		}
	}
}
