package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// hostActor stands for an actor of the host's that backs a tool. Its behaviour on each call is
// chosen by the call's "mode" argument; every ActorCancel it receives is passed to cancels.
type hostActor struct {
	cancels chan *tools.ActorCancel
	calls   chan *tools.ActorCall
	arrived chan string // the tool of each call, when there is room: never blocks the actor
}

func (h *hostActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *tools.ActorCall:
		if h.calls != nil {
			h.calls <- m
		}
		select {
		case h.arrived <- m.Tool:
		default:
		}
		var in struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(m.Arguments, &in)
		switch in.Mode {
		case "ok":
			ctx.Respond(&tools.ActorResult{Result: tools.TextResult("done by " + m.Tool)})
		case "structured":
			ctx.Respond(&tools.ActorResult{Result: &tools.Result{
				Content:           []protocol.Content{protocol.TextContent("structured")},
				StructuredContent: map[string]string{"greeting": "hi"},
			}})
		case "bad-output":
			ctx.Respond(&tools.ActorResult{Result: &tools.Result{StructuredContent: map[string]int{"greeting": 5}}})
		case "public":
			ctx.Respond(&tools.ActorResult{Result: tools.ErrorResult("public failure message")})
		case "error":
			ctx.Respond(&tools.ActorError{Err: errors.New("actor failed: " + demo.Marker)})
		case "error-value":
			ctx.Respond(errors.New("plain error reply: " + demo.Marker))
		case "panic":
			panic("actor crashed: " + demo.Marker)
		case "stop":
			ctx.Stop(ctx.Self())
		case "wrong":
			ctx.Respond("not a reply of the contract")
		case "later":
			// Replies from outside Receive, through ReplyTo.
			root, to := ctx.ActorSystem().Root, m.ReplyTo
			time.AfterFunc(20*time.Millisecond, func() {
				root.Send(to, &tools.ActorResult{Result: tools.TextResult("later")})
			})
		case "progress":
			if m.Progress {
				ctx.Send(m.ReplyTo, &tools.ActorProgress{Progress: 1, Message: "half"})
				ctx.Send(m.ReplyTo, &tools.ActorProgress{Progress: 2, Message: "all"})
			}
			ctx.Respond(&tools.ActorResult{Result: tools.TextResult("progressed")})
		case "silent":
			// Never replies.
		}
	case *tools.ActorCancel:
		if h.cancels != nil {
			h.cancels <- m
		}
	}
}

// newHostSystem returns an actor system as a host would make it, with protoactor's own log
// lines discarded to keep test output readable.
func newHostSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
}

var modeSchema = json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string"}},"required":["mode"]}`)

// hostFixture is a host's actor system with one host actor, and a server on that system whose
// tool "host" is backed by the host actor and whose tool "spawned" by an actor the server
// spawns from Props.
type hostFixture struct {
	system  *actor.ActorSystem
	host    *actor.PID
	srv     *toolgrain.Server
	client  *toolgrain.InMemoryClient
	rec     *mcptest.Recorder
	metrics *metrics.Memory
	cancels chan *tools.ActorCancel
	arrived chan string // the tool of each call the fixture's actors received
}

func newHostFixture(t *testing.T, timeout time.Duration, mw ...tools.Middleware) *hostFixture {
	t.Helper()
	f := &hostFixture{
		system:  newHostSystem(),
		rec:     mcptest.NewRecorder(),
		metrics: metrics.NewMemory(),
		cancels: make(chan *tools.ActorCancel, 16),
		arrived: make(chan string, 64),
	}
	f.host = f.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &hostActor{cancels: f.cancels, arrived: f.arrived} }))
	spawned := actor.PropsFromProducer(func() actor.Actor { return &hostActor{cancels: f.cancels, arrived: f.arrived} })
	srv, err := toolgrain.NewServer(toolgrain.Config{
		ActorSystem: f.system,
		OnError:     f.rec.OnError,
		Telemetry:   toolgrain.TelemetryConfig{Metrics: f.metrics},
		Middleware:  mw,
		Tools: []tools.Tool{
			{Name: "host", Description: "Backed by a host actor.", InputSchema: modeSchema, Timeout: timeout,
				Handler: tools.NewActorHandler(f.system, f.host)},
			{Name: "spawned", Description: "Backed by an actor the server spawns.", InputSchema: modeSchema, Timeout: timeout,
				Handler: tools.NewActorPropsHandler(spawned)},
			{Name: "shaped", Description: "Backed by a host actor, with an output schema.", InputSchema: modeSchema, Timeout: timeout,
				OutputSchema: json.RawMessage(`{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"]}`),
				Handler:      tools.NewActorHandler(f.system, f.host)},
		},
	})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	f.srv = srv
	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatalf("ConnectInMemory: %v", err)
	}
	f.client = c
	t.Cleanup(func() {
		_ = c.Close()
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		_ = f.system.Root.StopFuture(f.host).Wait()
		f.system.Shutdown()
	})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return f
}

func resultText(r *protocol.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// TestActorToolErrorModel runs every row of the error model through actor-backed tools, without
// middleware and through a middleware that passes every call on (which then runs on a handler
// goroutine and reaches the actor through the request actor): the outcomes are the same.
func TestActorToolErrorModel(t *testing.T) {
	t.Parallel()
	passOn := func(next tools.Handler) tools.Handler {
		return tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
			return next.Handle(ctx, req)
		})
	}
	t.Run("direct", func(t *testing.T) { testActorToolErrorModel(t) })
	t.Run("middleware", func(t *testing.T) { testActorToolErrorModel(t, passOn, passOn) })
}

func testActorToolErrorModel(t *testing.T, mw ...tools.Middleware) {
	tests := []struct {
		name       string
		tool       string
		mode       string
		wantText   string
		wantError  bool
		wantReport string // substring of the reported error; "" means no report
		wantKind   any    // an error type the report must contain, for errors.As
		outcome    metrics.Outcome
	}{
		{name: "success", tool: "host", mode: "ok", wantText: "done by host", outcome: metrics.OK},
		{name: "success, spawned", tool: "spawned", mode: "ok", wantText: "done by spawned", outcome: metrics.OK},
		{name: "structured success", tool: "shaped", mode: "structured", wantText: "structured", outcome: metrics.OK},
		{name: "reply from outside Receive", tool: "host", mode: "later", wantText: "later", outcome: metrics.OK},
		{name: "public error passes through", tool: "host", mode: "public", wantText: "public failure message", wantError: true, outcome: metrics.ToolError},
		{name: "ActorError", tool: "host", mode: "error", wantText: toolgrain.FailedText, wantError: true, wantReport: demo.Marker, outcome: metrics.Failed},
		{name: "error value", tool: "spawned", mode: "error-value", wantText: toolgrain.FailedText, wantError: true, wantReport: demo.Marker, outcome: metrics.Failed},
		{name: "output breaks the schema", tool: "shaped", mode: "bad-output", wantText: toolgrain.FailedText, wantError: true, wantReport: "output", wantKind: new(*tools.OutputError), outcome: metrics.Failed},
		{name: "crash of a spawned actor", tool: "spawned", mode: "panic", wantText: toolgrain.FailedText, wantError: true, wantReport: demo.Marker, wantKind: new(*tools.ActorPanicError), outcome: metrics.Failed},
		{name: "crash of a host actor ends at the timeout", tool: "host", mode: "panic", wantText: toolgrain.FailedText, wantError: true, wantReport: "timed out", outcome: metrics.Timeout},
		{name: "actor stops", tool: "host", mode: "stop", wantText: toolgrain.FailedText, wantError: true, wantReport: "not running", wantKind: new(*tools.ActorStoppedError), outcome: metrics.Failed},
		{name: "no reply", tool: "host", mode: "silent", wantText: toolgrain.FailedText, wantError: true, wantReport: "timed out", outcome: metrics.Timeout},
		{name: "reply outside the contract", tool: "host", mode: "wrong", wantText: toolgrain.FailedText, wantError: true, wantReport: "string, which is not a reply", outcome: metrics.Timeout},
		{name: "invalid arguments", tool: "host", mode: "", wantText: "invalid arguments: mode: missing property", wantError: true, outcome: metrics.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newHostFixture(t, 300*time.Millisecond, mw...)
			ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
			defer cancel()
			args := map[string]string{"mode": tt.mode}
			if tt.mode == "" {
				args = map[string]string{}
			}
			res, err := f.client.CallTool(ctx, tt.tool, args)
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if got := resultText(res); got != tt.wantText || res.IsError != tt.wantError {
				t.Errorf("result = %q (isError %v), want %q (isError %v)", got, res.IsError, tt.wantText, tt.wantError)
			}
			if tt.wantError && tt.wantText == toolgrain.FailedText && len(res.StructuredContent) != 0 {
				t.Errorf("a failure carries structuredContent: %s", res.StructuredContent)
			}
			if tt.wantReport == "" {
				time.Sleep(20 * time.Millisecond) // room for a report that must not come
				if got := f.rec.Snapshot(); len(got) != 0 {
					t.Fatalf("onError called for an expected outcome: %v", got[0].Err)
				}
			} else {
				r := f.rec.Wait(t, 1)[0]
				if !strings.Contains(r.Err.Error(), tt.wantReport) {
					t.Errorf("reported %q, want it to contain %q", r.Err, tt.wantReport)
				}
				if tt.wantKind != nil && !errors.As(r.Err, tt.wantKind) {
					t.Errorf("reported %T (%v), want a %T", r.Err, r.Err, tt.wantKind)
				}
				if r.Details.ToolName() != tt.tool {
					t.Errorf("details name tool %q, want %q", r.Details.ToolName(), tt.tool)
				}
			}
			if got := f.metrics.Snapshot().Calls(tt.tool, tt.outcome); got != 1 {
				t.Errorf("metrics: %d calls of %s ended %s, want 1 (%+v)", got, tt.tool, tt.outcome, f.metrics.Snapshot().Tools[tt.tool].Calls)
			}
			// The engine keeps serving, and the tool's actor keeps answering (after a restart,
			// for the crashes).
			if tt.mode != "stop" {
				next := "ok"
				if tt.tool == "shaped" {
					next = "structured"
				}
				res, err = f.client.CallTool(ctx, tt.tool, map[string]string{"mode": next})
				if err != nil || res.IsError {
					t.Fatalf("next call: %v %+v", err, res)
				}
			}
		})
	}
}

// TestActorToolTimeoutTellsTheActor: a call with no reply fails at the tool's timeout and the
// actor is told with an ActorCancel carrying the call's ID.
func TestActorToolTimeoutTellsTheActor(t *testing.T) {
	t.Parallel()
	f := newHostFixture(t, 100*time.Millisecond)
	calls := make(chan *tools.ActorCall, 1)
	silent := f.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &hostActor{cancels: f.cancels, calls: calls}
	}))
	defer f.system.Root.Stop(silent)
	srv, err := toolgrain.NewServer(toolgrain.Config{
		ActorSystem: f.system,
		OnError:     f.rec.OnError,
		Tools: []tools.Tool{{Name: "silent", InputSchema: modeSchema, Timeout: 100 * time.Millisecond,
			Handler: tools.NewActorHandler(f.system, silent)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := c.CallTool(ctx, "silent", map[string]string{"mode": "silent"})
	if err != nil || resultText(res) != toolgrain.FailedText {
		t.Fatalf("CallTool = %+v, %v", res, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("answered after %v, before the timeout", d)
	}
	call := <-calls
	if call.Deadline.IsZero() || call.ReplyTo == nil || call.ID == "" || call.Tool != "silent" {
		t.Errorf("call = %+v", call)
	}
	select {
	case m := <-f.cancels:
		if m.ID != call.ID || m.Cause == nil || !strings.Contains(m.Cause.Error(), "timed out") {
			t.Errorf("cancel = %+v, want ID %s and a timeout cause", m, call.ID)
		}
	case <-time.After(mcptest.Watchdog):
		t.Fatal("the actor was not told")
	}
}

// TestActorToolCancellation: a client's cancellation ends the call at once, without any
// response or report, and the actor receives an ActorCancel for that call.
func TestActorToolCancellation(t *testing.T) {
	t.Parallel()
	f := newHostFixture(t, 0) // no timeout: DefaultActorTimeout
	for _, tool := range []string{"host", "spawned"} {
		t.Run(tool, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := f.client.CallTool(ctx, tool, map[string]string{"mode": "silent"})
				done <- err
			}()
			select { // the call reached the actor
			case got := <-f.arrived:
				if got != tool {
					t.Fatalf("the actor received a call of %s, want %s", got, tool)
				}
			case <-time.After(mcptest.Watchdog):
				t.Fatal("the call did not reach the actor")
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("CallTool = %v, want context.Canceled", err)
			}
			select {
			case m := <-f.cancels:
				if m.ID == "" || !strings.Contains(m.Cause.Error(), "cancelled by the client") {
					t.Errorf("cancel = %+v", m)
				}
			case <-time.After(mcptest.Watchdog):
				t.Fatal("the actor was not told about the cancellation")
			}
			// Nothing arrives for the cancelled call.
			rctx, rcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer rcancel()
			if msg, err := f.client.Receive(rctx); err == nil {
				t.Fatalf("message after cancellation: %s", msg)
			}
			if got := f.rec.Snapshot(); len(got) != 0 {
				t.Errorf("a cancelled call was reported: %v", got[0].Err)
			}
			if got := f.metrics.Snapshot().Calls(tool, metrics.Cancelled); got != 1 {
				t.Errorf("cancelled calls = %d, want 1", got)
			}
		})
	}
	if n := f.metrics.Snapshot().InFlight; n != 0 {
		t.Errorf("in flight = %d after every call ended", n)
	}
}

// TestActorToolProgress: an actor's ActorProgress messages become progress notifications,
// before the result, when the client asked for progress.
func TestActorToolProgress(t *testing.T) {
	t.Parallel()
	f := newHostFixture(t, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	raw, err := f.client.Call(ctx, protocol.MethodToolsCall, json.RawMessage(`{"name":"host","arguments":{"mode":"progress"},"_meta":{"progressToken":"p1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "progressed") {
		t.Fatalf("result = %s", raw)
	}
	for _, want := range []string{`"progress":1,"message":"half"`, `"progress":2,"message":"all"`} {
		msg, err := f.client.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(msg), `"progressToken":"p1"`) || !strings.Contains(string(msg), want) {
			t.Errorf("notification = %s, want %s", msg, want)
		}
	}
}

func TestActorToolConstruction(t *testing.T) {
	t.Parallel()
	other := newHostSystem()
	pid := other.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	defer other.Root.Stop(pid)
	tests := []struct {
		name string
		give tools.Tool
		want string
	}{
		{"actor on another system", tools.Tool{Name: "t", Handler: tools.NewActorHandler(other, pid)}, "another actor system"},
		{"no pid", tools.Tool{Name: "t", Handler: tools.NewActorHandler(other, nil)}, "no PID and no Props"},
		{"no system", tools.Tool{Name: "t", Handler: tools.NewActorHandler(nil, pid)}, "nil actor system"},
		{"no props", tools.Tool{Name: "t", Handler: tools.NewActorPropsHandler(nil)}, "no PID and no Props"},
		{"providers", tools.Tool{Name: "t", Handler: tools.NewActorPropsHandler(actor.PropsFromFunc(func(actor.Context) {})),
			Providers: []tools.Provider{tools.NewDependency("d", func(context.Context) (int, error) { return 1, nil })}}, "providers need a Go handler"},
		{"props with a guardian", tools.Tool{Name: "t", Handler: tools.NewActorPropsHandler(actor.PropsFromFunc(func(actor.Context) {},
			actor.WithGuardian(actor.NewRestartingStrategy())))}, "spawn its actor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{tt.give}})
			if err == nil {
				_ = srv.Close()
				t.Fatal("NewServer succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestIdentityReachesTools: the caller's identity reaches a Go handler through its context and
// a tool actor in its ActorCall; here from an in-memory client that stands for an
// authenticated one.
func TestIdentityReachesTools(t *testing.T) {
	t.Parallel()
	system := newHostSystem()
	defer system.Shutdown()
	whoami := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if c, ok := ctx.Message().(*tools.ActorCall); ok {
			subject := "anonymous"
			if c.Identity.HasScope("inventory:read") {
				subject = c.Identity.Subject
			}
			ctx.Respond(&tools.ActorResult{Result: tools.TextResult(subject)})
		}
	}))
	defer system.Root.Stop(whoami)
	srv, err := toolgrain.NewServer(toolgrain.Config{ActorSystem: system, Tools: []tools.Tool{
		{Name: "actor", Handler: tools.NewActorHandler(system, whoami)},
		{Name: "func", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			return tools.TextResult(tools.IdentityFromContext(ctx).Subject), nil
		})},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := srv.ConnectInMemoryAs(&toolgrain.Identity{Subject: "ada", Scopes: []string{"inventory:read"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"actor", "func"} {
		res, err := c.CallTool(ctx, name, nil)
		if err != nil || resultText(res) != "ada" {
			t.Errorf("%s: %+v, %v", name, res, err)
		}
	}
}
