package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/time/rate"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/tools/middleware"
)

// Middleware end to end: order, the error model's rows through a middleware, silence after a
// cancellation whatever a middleware does, for Go and actor-backed tools, over stdio and HTTP
// in both eras, and for tasks.

// mwIn is the input of the tools these tests call: the text to echo, and what middleware "b"
// does with the call.
type mwIn struct {
	Text string `json:"text"`
	B    string `json:"b,omitempty" jsonschema:"enum=error,enum=panic,enum=refuse,enum=late-result,enum=late-error,enum=late-panic"`
}

// wrapper is a middleware that wraps the text of every result that is not an error in
// name(...), and records each request it sees.
type wrapper struct {
	name string
	mu   sync.Mutex
	seen []string // tool and text of each call
}

func (w *wrapper) middleware(next tools.Handler) tools.Handler {
	return tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
		var in mwIn
		_ = json.Unmarshal(req.Arguments, &in)
		w.mu.Lock()
		w.seen = append(w.seen, req.Tool+":"+in.Text)
		w.mu.Unlock()
		if w.name == "b" {
			switch in.B {
			case "error":
				return nil, fmt.Errorf("middleware b refused: %w (%s)", errCanary, demo.Marker)
			case "panic":
				panic("middleware b broke: " + demo.Marker)
			case "refuse":
				return tools.ErrorResult("refused by b"), nil
			}
		}
		res, err := next.Handle(ctx, req)
		if w.name == "b" && strings.HasPrefix(in.B, "late-") {
			<-ctx.Done() // what a middleware does after the cancellation never reaches the client
			switch in.B {
			case "late-error":
				return nil, errors.New("late: " + demo.Marker)
			case "late-panic":
				panic("late: " + demo.Marker)
			}
			return tools.TextResult("late " + demo.Marker), nil
		}
		if err != nil || res == nil || res.IsError {
			return res, err
		}
		return tools.TextResult(w.name + "(" + res.Content[0].Text + ")"), nil
	})
}

func (w *wrapper) calls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

// echoActor backs the "actor" tool: it answers "actor:<text>", or never for "block"; every
// ActorCancel it gets goes to cancels.
type echoActor struct{ cancels chan<- string }

func (a *echoActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *tools.ActorCall:
		var in mwIn
		_ = json.Unmarshal(m.Arguments, &in)
		if in.Text != "block" {
			ctx.Respond(&tools.ActorResult{Result: tools.TextResult("actor:" + in.Text)})
		}
	case *tools.ActorCancel:
		select {
		case a.cancels <- m.ID:
		default:
		}
	}
}

// mwFixture is a server config with two wrappers a and b and three tools: "go" (a typed Go
// handler, which blocks until cancelled on the text "block"), "actor" (backed by an echoActor)
// and "task" (the go tool as a task).
type mwFixture struct {
	a, b    *wrapper
	rec     *mcptest.Recorder
	cancels chan string
}

func (f *mwFixture) config() toolgrain.Config {
	f.a, f.b, f.rec, f.cancels = &wrapper{name: "a"}, &wrapper{name: "b"}, mcptest.NewRecorder(), make(chan string, 16)
	goHandler := tools.Func(func(ctx context.Context, in mwIn) (*tools.Result, error) {
		if in.Text == "block" {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		return tools.TextResult("go:" + in.Text), nil
	})
	cancels := f.cancels
	return toolgrain.Config{
		Middleware: []tools.Middleware{f.a.middleware, f.b.middleware},
		OnError:    f.rec.OnError,
		Tools: []tools.Tool{
			{Name: "go", Description: "A Go handler.", Handler: goHandler},
			{Name: "actor", Description: "An actor-backed tool.", InputType: typeOf[mwIn](),
				Handler: tools.NewActorPropsHandler(actor.PropsFromProducer(func() actor.Actor { return &echoActor{cancels: cancels} }))},
			{Name: "task", Description: "A Go handler as a task.", TaskSupport: tools.TaskOptional, Handler: goHandler},
		},
	}
}

// TestMiddlewareEndToEnd: the first middleware is the outermost, for Go and actor-backed tools;
// a middleware's error or panic is an unexpected failure reported with the original, its
// ErrorResult reaches the client unchanged, and validation comes first.
func TestMiddlewareEndToEnd(t *testing.T) {
	t.Parallel()
	f := &mwFixture{}
	failed := `"content":[{"type":"text","text":"Tool execution failed"}],"isError":true`
	forEachTransportAndEra(t, f.config, func(t *testing.T, c toolClient) {
		tests := []struct {
			tool, args, want string
		}{
			{"go", `{"text":"hi"}`, `"content":[{"type":"text","text":"a(b(go:hi))"}]`},
			{"actor", `{"text":"hi"}`, `"content":[{"type":"text","text":"a(b(actor:hi))"}]`},
			{"go", `{"text":"x","b":"refuse"}`, `"content":[{"type":"text","text":"refused by b"}],"isError":true`},
			{"actor", `{"text":"x","b":"refuse"}`, `"content":[{"type":"text","text":"refused by b"}],"isError":true`},
			{"go", `{"text":"x","b":"error"}`, failed},
			{"actor", `{"text":"x","b":"panic"}`, failed},
			{"go", `{"text":5}`, `"content":[{"type":"text","text":"invalid arguments: text: must be string, got number"}],"isError":true`},
		}
		for i, tt := range tests {
			if got := c.call(i+1, tt.tool, tt.args); got != tt.want {
				t.Errorf("%s %s\n got: %s\nwant: %s", tt.tool, tt.args, got, tt.want)
			}
		}
		reports := f.rec.Wait(t, 2)
		if len(reports) != 2 {
			t.Fatalf("%d reports, want 2", len(reports))
		}
		// A report leaves its request actor after the answer, so the next call's report may
		// arrive first: take them in the order of the calls.
		if reports[0].Details.ToolName() == "actor" {
			reports[0], reports[1] = reports[1], reports[0]
		}
		if r := reports[0]; !errors.Is(r.Err, errCanary) || r.Details.ToolName() != "go" {
			t.Errorf("report of the middleware's error: %v for %q, want the original for go", r.Err, r.Details.ToolName())
		}
		var pe *tools.PanicError
		if r := reports[1]; !errors.As(r.Err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), demo.Marker) || r.Details.ToolName() != "actor" || len(pe.Stack) == 0 {
			t.Errorf("report of the middleware's panic: %T %v for %q, want a *tools.PanicError for actor", r.Err, r.Err, r.Details.ToolName())
		}
		// Validation came first: the invalid call reached no middleware. b saw what a passed on.
		want := []string{"go:hi", "actor:hi", "go:x", "actor:x", "go:x", "actor:x"}
		if got := f.a.calls(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("a saw %v, want %v", got, want)
		}
		if got := f.b.calls(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("b saw %v, want %v", got, want)
		}
	})
}

// TestMiddlewareSilenceAfterCancel: once a call is cancelled, nothing reaches the client and
// nothing is reported, whatever a middleware then returns: a result, an error or a panic; an
// actor-backed tool's actor is told.
func TestMiddlewareSilenceAfterCancel(t *testing.T) {
	t.Parallel()
	f := &mwFixture{}
	forEachTransportAndEra(t, f.config, func(t *testing.T, c toolClient) {
		for i, late := range []string{"late-result", "late-error", "late-panic"} {
			for j, tool := range []string{"go", "actor"} {
				id := 10*i + j + 1
				cancelAndExpectSilence := c.start(id, tool, `{"text":"block","b":"`+late+`"}`)
				mcptest.Eventually(t, "b running the call", func() bool { return len(f.b.calls()) == 2*i+j+1 })
				cancelAndExpectSilence(50 * time.Millisecond)
				if tool == "actor" {
					select {
					case <-f.cancels:
					case <-time.After(mcptest.Watchdog):
						t.Errorf("%s: the actor was not told of the cancellation", late)
					}
				}
			}
		}
		if got := c.call(99, "go", `{"text":"after"}`); got != `"content":[{"type":"text","text":"a(b(go:after))"}]` {
			t.Errorf("the call after the cancellations: %s", got)
		}
		if r := f.rec.Snapshot(); len(r) != 0 {
			t.Errorf("a cancelled call was reported: %v", r[0].Err)
		}
	})
}

// TestMiddlewareTasks: a call that runs as a task passes through the middleware too.
func TestMiddlewareTasks(t *testing.T) {
	t.Parallel()
	f := &mwFixture{}
	onBoth(t, f.config, func(t *testing.T, c *taskConn) {
		got := c.await(c.start("task", `{"text":"hi"}`))
		if got.Result["status"] != "completed" || !strings.Contains(got.raw, `"text":"a(b(go:hi))"`) {
			t.Errorf("the task: %s", got.raw)
		}
		got = c.await(c.start("task", `{"text":"x","b":"error"}`))
		if got.Result["status"] != "failed" || strings.Contains(got.raw, demo.Marker) {
			t.Errorf("the task whose middleware failed: %s", got.raw)
		}
		if r := f.rec.Wait(t, 1)[0]; !errors.Is(r.Err, errCanary) || r.Details.TaskID() == "" {
			t.Errorf("report %v (task %q), want the middleware's error with the task's id", r.Err, r.Details.TaskID())
		}
	})
}

// TestMiddlewareConfigErrors: a nil middleware, or one that gives no handler, stops NewServer.
func TestMiddlewareConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give []tools.Middleware
		want string
	}{
		{"nil", []tools.Middleware{nil}, "middleware 0: nil"},
		{"nil handler", []tools.Middleware{func(tools.Handler) tools.Handler { return nil }}, `tool "echo": middleware 0 returned a nil handler`},
		{"panic", []tools.Middleware{func(tools.Handler) tools.Handler { panic("no") }}, `tool "echo": middleware panicked: no`},
	}
	for _, tt := range tests {
		_, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools()[:1], Middleware: tt.give})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestRateLimitMiddleware: each authenticated caller has its own limit; a limited call gets a
// public error result saying when to retry, and is not reported. Over stdio every call is the
// anonymous caller's.
func TestRateLimitMiddleware(t *testing.T) {
	t.Parallel()
	limit := middleware.RateLimit(middleware.RateLimitConfig{Limit: rate.Every(time.Hour), Burst: 2})
	t.Run("http", func(t *testing.T) {
		rec := mcptest.NewRecorder()
		cfg := authConfig(rec, nil)
		cfg.Middleware = []tools.Middleware{limit}
		e := startHTTP(t, cfg)
		for _, modern := range []bool{false, true} {
			alice, bob := e.Session(), e.Session()
			alice.Token, bob.Token = "alice-token", "bob-token"
			if !modern {
				alice.Initialize()
				bob.Initialize()
			}
			ha, hb := &httpTools{t: t, s: alice, modern: modern}, &httpTools{t: t, s: bob, modern: modern}
			wantOK := `"content":[{"type":"text","text":"user-alice tools:call,extra"}]`
			if modern {
				if got := ha.call(1, "whoami", `{}`); !strings.Contains(got, "Rate limit exceeded") {
					t.Errorf("alice's third call (modern, same limiter): %s", got)
				}
				continue
			}
			for i := 1; i <= 2; i++ {
				if got := ha.call(i, "whoami", `{}`); got != wantOK {
					t.Errorf("alice's call %d: %s", i, got)
				}
			}
			got := ha.call(3, "whoami", `{}`)
			if !strings.HasPrefix(got, `"content":[{"type":"text","text":"Rate limit exceeded for this caller; retry in `) ||
				!strings.Contains(got, `"isError":true`) || !strings.Contains(got, `"_meta":{"retryAfterMs":`) {
				t.Errorf("alice's call over the limit: %s", got)
			}
			if got := hb.call(1, "whoami", `{}`); got != `"content":[{"type":"text","text":"user-bob tools:call"}]` {
				t.Errorf("bob's call: %s", got)
			}
		}
		time.Sleep(20 * time.Millisecond) // room for a report that must not come
		if r := rec.Snapshot(); len(r) != 0 {
			t.Errorf("a limited call was reported: %v", r[0].Err)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		c := &stdioTools{c: startStdio(t, toolgrain.Config{Tools: demo.Tools(), Middleware: []tools.Middleware{
			middleware.RateLimit(middleware.RateLimitConfig{Limit: rate.Every(time.Hour), Burst: 1})}})}
		c.c.Initialize()
		if got := c.call(1, "echo", `{"text":"hi"}`); got != `"content":[{"type":"text","text":"hi"}]` {
			t.Errorf("first call: %s", got)
		}
		got := c.call(2, "greet", `{"name":"Ann"}`)
		var ms int64
		_, err := fmt.Sscanf(got[strings.Index(got, `"retryAfterMs":`)+1:], `retryAfterMs":%d}`, &ms)
		if !strings.HasPrefix(got, `"content":[{"type":"text","text":"Rate limit exceeded for this caller; retry in `) || err != nil || ms < 3_599_000 || ms > 3_600_000 {
			t.Errorf("second call: %s (retryAfterMs %d, %v), want a refusal saying to wait about an hour", got, ms, err)
		}
	})
}

// TestLogMiddleware: the call log writes tool, duration and outcome on the server's logger,
// and never the arguments.
func TestLogMiddleware(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	logger := zap.New(core)
	c := &stdioTools{c: startStdio(t, toolgrain.Config{Tools: demo.Tools(), Logger: logger,
		Middleware: []tools.Middleware{middleware.Log(logger)}})}
	c.c.Initialize()
	c.call(1, "echo", `{"text":"`+demo.Marker+`"}`)
	c.call(2, "fail", `{"mode":"result"}`)
	c.call(3, "fail", `{"mode":"panic"}`)
	c.call(4, "sleep", `{"ms":-1}`) // invalid: answered before any middleware
	c.start(5, "sleep", `{"ms":600000}`)(20 * time.Millisecond)
	mcptest.Eventually(t, "four calls logged", func() bool { return logs.FilterMessage("tool call").Len() == 4 })
	var got []string
	for _, e := range logs.FilterMessage("tool call").AllUntimed() {
		m := e.ContextMap()
		got = append(got, fmt.Sprintf("%s %s %s", e.Level, m["tool"], m["outcome"]))
		if strings.Contains(fmt.Sprint(m), demo.Marker) {
			t.Errorf("the line holds an argument: %v", m)
		}
		if _, ok := m["duration"].(time.Duration); !ok || len(m) != 3 {
			t.Errorf("fields %v, want tool, duration and outcome", m)
		}
	}
	if want := "info echo ok|info fail tool_error|warn fail panic|info sleep cancelled"; strings.Join(got, "|") != want {
		t.Errorf("lines %q, want %q", strings.Join(got, "|"), want)
	}
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// TestMiddlewareAddedTools: a tool added while the server runs is wrapped like the others.
func TestMiddlewareAddedTools(t *testing.T) {
	t.Parallel()
	a := &wrapper{name: "a"}
	c := &stdioTools{c: startStdio(t, toolgrain.Config{Tools: demo.Tools()[:1], Middleware: []tools.Middleware{a.middleware}})}
	c.c.Initialize()
	if err := c.c.srv.AddTools(tools.Tool{Name: "later", Description: "Added later.",
		Handler: tools.Func(func(_ context.Context, in mwIn) (*tools.Result, error) {
			return tools.TextResult("later:" + in.Text), nil
		})}); err != nil {
		t.Fatal(err)
	}
	if got := c.c.Recv(); !strings.Contains(got, "notifications/tools/list_changed") {
		t.Fatalf("after AddTools: %s", got)
	}
	if got := c.call(1, "later", `{"text":"x"}`); got != `"content":[{"type":"text","text":"a(later:x)"}]` {
		t.Errorf("the added tool: %s", got)
	}
	if got := c.call(2, "echo", `{"text":"y"}`); got != `"content":[{"type":"text","text":"a(y)"}]` {
		t.Errorf("the first tool: %s", got)
	}
}
