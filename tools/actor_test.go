package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/tools"
)

func quietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
}

// replier answers every ActorCall with what reply returns (nothing when it returns nil) and
// passes every ActorCancel to cancels.
func replier(reply func(*tools.ActorCall) any, cancels chan<- *tools.ActorCancel) *actor.Props {
	return actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *tools.ActorCall:
			if r := reply(m); r != nil {
				ctx.Respond(r)
			}
		case *tools.ActorCancel:
			cancels <- m
		}
	})
}

// TestActorHandlerDirect: outside a server, Handle returns the actor's raw outcome.
func TestActorHandlerDirect(t *testing.T) {
	system := quietSystem()
	defer system.Shutdown()
	errBoom := errors.New("boom")
	tests := []struct {
		name     string
		reply    func(*tools.ActorCall) any
		wantText string
		wantErr  error
		wantIn   string
	}{
		{name: "result", reply: func(c *tools.ActorCall) any {
			return &tools.ActorResult{Result: tools.TextResult(c.Tool + " " + string(c.Arguments))}
		}, wantText: `direct {"x":1}`},
		{name: "public error", reply: func(*tools.ActorCall) any { return &tools.ActorResult{Result: tools.ErrorResult("nope")} }, wantText: "nope"},
		{name: "ActorError", reply: func(*tools.ActorCall) any { return &tools.ActorError{Err: errBoom} }, wantErr: errBoom},
		{name: "error value", reply: func(*tools.ActorCall) any { return errBoom }, wantErr: errBoom},
		{name: "wrong type", reply: func(*tools.ActorCall) any { return 42 }, wantIn: "replied with int"},
		{name: "empty result", reply: func(*tools.ActorCall) any { return &tools.ActorResult{} }, wantIn: "without a Result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid := system.Root.Spawn(replier(tt.reply, nil))
			defer system.Root.Stop(pid)
			h := tools.NewActorHandler(system, pid)
			res, err := h.Handle(context.Background(), &tools.Request{Tool: "direct", Arguments: json.RawMessage(`{"x":1}`)})
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			case tt.wantIn != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantIn) {
					t.Errorf("err = %v, want it to contain %q", err, tt.wantIn)
				}
			default:
				if err != nil || res.Content[0].Text != tt.wantText {
					t.Errorf("Handle = %+v, %v", res, err)
				}
			}
		})
	}
}

func TestActorHandlerDirectFailures(t *testing.T) {
	system := quietSystem()
	defer system.Shutdown()
	// silent returns an actor that never replies and passes on its cancellations.
	silent := func(t *testing.T) (*actor.PID, chan *tools.ActorCancel) {
		cancels := make(chan *tools.ActorCancel, 1)
		pid := system.Root.Spawn(replier(func(*tools.ActorCall) any { return nil }, cancels))
		t.Cleanup(func() { system.Root.Stop(pid) })
		return pid, cancels
	}

	t.Run("dead actor", func(t *testing.T) {
		dead := system.Root.Spawn(replier(func(*tools.ActorCall) any { return nil }, nil))
		_ = system.Root.StopFuture(dead).Wait()
		_, err := tools.NewActorHandler(system, dead).Handle(context.Background(), &tools.Request{Tool: "t"})
		var stopped *tools.ActorStoppedError
		if !errors.As(err, &stopped) || stopped.Tool != "t" || !stopped.PID.Equal(dead) {
			t.Errorf("err = %v, want an *ActorStoppedError", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		pid, cancels := silent(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		_, err := tools.NewActorHandler(system, pid).Handle(ctx, &tools.Request{Tool: "t"})
		if err == nil || !(strings.Contains(err.Error(), "no reply") || errors.Is(err, context.DeadlineExceeded)) {
			t.Errorf("err = %v, want no reply", err)
		}
		select {
		case <-cancels: // either way, the actor is told
		case <-time.After(5 * time.Second):
			t.Fatal("no ActorCancel")
		}
	})
	t.Run("cancel", func(t *testing.T) {
		pid, cancels := silent(t)
		ctx, cancel := context.WithCancelCause(context.Background())
		errWhy := errors.New("user left")
		time.AfterFunc(20*time.Millisecond, func() { cancel(errWhy) })
		_, err := tools.NewActorHandler(system, pid).Handle(ctx, nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		select {
		case m := <-cancels:
			if m.ID == "" || !errors.Is(m.Cause, errWhy) {
				t.Errorf("cancel = %+v", m)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no ActorCancel")
		}
	})
	t.Run("props outside a server", func(t *testing.T) {
		_, err := tools.NewActorPropsHandler(replier(nil, nil)).Handle(context.Background(), nil)
		if err == nil {
			t.Error("a Props handler ran outside a server")
		}
	})
}

func TestReadActorReply(t *testing.T) {
	errX := errors.New("x")
	tests := []struct {
		name    string
		give    any
		wantRes bool
		wantErr string
	}{
		{"result", &tools.ActorResult{Result: tools.TextResult("a")}, true, ""},
		{"nil result", &tools.ActorResult{}, false, "without a Result"},
		{"nil ActorResult", (*tools.ActorResult)(nil), false, "without a Result"},
		{"actor error", &tools.ActorError{Err: errX}, false, "x"},
		{"actor error without Err", &tools.ActorError{}, false, "without an Err"},
		{"error", errX, false, "x"},
		{"other", "text", false, "replied with string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tools.ReadActorReply("t", tt.give)
			if (res != nil) != tt.wantRes {
				t.Errorf("result = %v", res)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestActorErrors(t *testing.T) {
	pid := actor.NewPID("nonhost", "a")
	errCause := errors.New("cause")
	if got := (&tools.ActorPanicError{Tool: "t", PID: pid, Value: errCause}); !errors.Is(got, errCause) ||
		got.Error() != `tool "t": actor a panicked: cause` {
		t.Errorf("ActorPanicError = %q", got)
	}
	if got := (&tools.ActorStoppedError{Tool: "t", PID: actor.NewPID("node1:8000", "b"), Reason: "stopped"}).Error(); got != `tool "t": actor node1:8000/b is not running (stopped)` {
		t.Errorf("ActorStoppedError = %q", got)
	}
	if got := (&tools.ActorError{Err: errCause}); !errors.Is(got, errCause) || got.Error() != "cause" {
		t.Errorf("ActorError = %q", got)
	}
}

// TestComplete: a result from outside Run goes through Run's output checks.
func TestComplete(t *testing.T) {
	c := compileOne(t, tools.Tool{Name: "greet", OutputSchema: json.RawMessage(greetOutputSchema),
		Handler: tools.NewActorPropsHandler(replier(nil, nil))})
	if _, err := c.Complete(&tools.Result{StructuredContent: map[string]string{"greeting": "hi"}}); err != nil {
		t.Errorf("conforming result: %v", err)
	}
	var oe *tools.OutputError
	if _, err := c.Complete(&tools.Result{StructuredContent: map[string]int{"greeting": 1}}); !errors.As(err, &oe) {
		t.Errorf("breaking result: %v, want an *OutputError", err)
	}
	if _, err := c.Complete(nil); !errors.As(err, &oe) {
		t.Errorf("nil result: %v, want an *OutputError", err)
	}
	if out, err := c.Complete(tools.ErrorResult("public")); err != nil || !out.IsError {
		t.Errorf("public error result: %+v, %v", out, err)
	}
	var pe *tools.PanicError
	if _, err := c.Complete(&tools.Result{StructuredContent: panicky{}}); !errors.As(err, &pe) {
		t.Errorf("panicking marshaller: %v, want a *PanicError", err)
	}
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("marshal") }

func TestCompileActorHandlers(t *testing.T) {
	system := quietSystem()
	defer system.Shutdown()
	pid := actor.NewPID("nonhost", "somewhere")
	tests := []struct {
		name string
		give tools.Handler
		deps []tools.Provider
		want string
	}{
		{"nil handler pointer", (*tools.ActorHandler)(nil), nil, "no handler"},
		{"no pid", tools.NewActorHandler(system, nil), nil, "no PID and no Props"},
		{"no system", tools.NewActorHandler(nil, pid), nil, "nil actor system"},
		{"nil props", tools.NewActorPropsHandler(nil), nil, "no PID and no Props"},
		{"providers", tools.NewActorHandler(system, pid), []tools.Provider{tools.NewDependency("d", func(context.Context) (int, error) { return 0, nil })}, "providers need a Go handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tools.Compile([]tools.Tool{{Name: "t", Handler: tt.give, Providers: tt.deps}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := tools.Compile([]tools.Tool{{Name: "ok", Handler: tools.NewActorHandler(system, pid)}}); err != nil {
		t.Errorf("valid actor tool: %v", err)
	}
}
