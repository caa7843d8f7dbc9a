package demo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func handler(t *testing.T, name string) tools.Handler {
	t.Helper()
	for _, tl := range demo.Tools() {
		if tl.Name == name {
			return tl.Handler
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

// TestContract pins the names and the schemas' compilation: tests, benchmarks and outside
// clients rely on them.
func TestContract(t *testing.T) {
	var names []string
	for _, tl := range demo.Tools() {
		names = append(names, tl.Name)
		if tl.Description == "" {
			t.Errorf("%s has no description", tl.Name)
		}
	}
	if got := strings.Join(names, ","); got != "echo,greet,sleep,fail,spin" {
		t.Errorf("tools = %s", got)
	}
	if _, err := tools.Compile(demo.Tools()); err != nil {
		t.Fatal(err)
	}
}

// TestDirectCallsReturnRawErrors: outside the server, a handler's failure is its raw error; only
// a call through the server turns it into the generic result.
func TestDirectCallsReturnRawErrors(t *testing.T) {
	fail := handler(t, "fail")
	for _, mode := range []string{"error", "provider"} {
		_, err := fail.Handle(context.Background(), &tools.Request{Tool: "fail", Arguments: json.RawMessage(`{"mode":"` + mode + `"}`)})
		if err == nil || !strings.Contains(err.Error(), demo.Marker) {
			t.Errorf("mode %s: err = %v, want the raw error with the marker", mode, err)
		}
	}
	var pe *tools.ProviderError
	_, err := fail.Handle(context.Background(), &tools.Request{Tool: "fail", Arguments: json.RawMessage(`{"mode":"provider"}`)})
	if !errors.As(err, &pe) || pe.Provider != "backend" {
		t.Errorf("provider mode: %v is not a *tools.ProviderError for backend", err)
	}
	res, err := fail.Handle(context.Background(), &tools.Request{Tool: "fail", Arguments: json.RawMessage(`{"mode":"result"}`)})
	if err != nil || !res.IsError || res.Content[0].Text != "public failure message" {
		t.Errorf("result mode: %+v, %v", res, err)
	}
}

// TestSpin: the CPU-bound tool answers after its time, and a cancelled call stops spinning.
func TestSpin(t *testing.T) {
	res, err := handler(t, "spin").Handle(context.Background(), &tools.Request{Tool: "spin", Arguments: json.RawMessage(`{"ms":20}`)})
	if err != nil || res.IsError || res.Content[0].Text != "spun" {
		t.Fatalf("spin = %+v, %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := handler(t, "spin").Handle(ctx, &tools.Request{Tool: "spin", Arguments: json.RawMessage(`{"ms":600000}`)})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second): // a watchdog, not a timing assertion
		t.Fatal("spin ignored its cancelled context")
	}
}

func TestSleepHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := handler(t, "sleep").Handle(ctx, &tools.Request{Tool: "sleep", Arguments: json.RawMessage(`{"ms":600000}`)})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second): // a watchdog, not a timing assertion
		t.Fatal("sleep ignored its cancelled context")
	}
}
