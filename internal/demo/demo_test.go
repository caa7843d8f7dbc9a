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

// TestSchemas pins the schemas clients see, inferred from the tools' Go types, and the
// validation feedback they give: a contract of the clients and conformance suites.
func TestSchemas(t *testing.T) {
	set, err := tools.Compile(append(demo.Tools(), demo.TaskTools()...))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"echo":  {`{"properties":{"text":{"type":"string"}},"additionalProperties":false,"type":"object","required":["text"]}`, ``},
		"greet": {`{"properties":{"name":{"type":"string"}},"additionalProperties":false,"type":"object","required":["name"]}`, `{"properties":{"greeting":{"type":"string"}},"additionalProperties":false,"type":"object","required":["greeting"]}`},
		"sleep": {`{"properties":{"ms":{"type":"integer","maximum":600000,"minimum":0}},"additionalProperties":false,"type":"object","required":["ms"]}`, ``},
		"fail": {`{"properties":{"mode":{"type":"string","enum":["result","error","panic","bad-output","provider"]}},"additionalProperties":false,"type":"object","required":["mode"]}`,
			`{"properties":{"status":{"type":"string"}},"additionalProperties":false,"type":"object","required":["status"]}`},
		"spin":       {`{"properties":{"ms":{"type":"integer","maximum":600000,"minimum":0}},"additionalProperties":false,"type":"object","required":["ms"]}`, ``},
		"sleep_task": {`{"properties":{"ms":{"type":"integer","maximum":86400000,"minimum":0}},"additionalProperties":false,"type":"object","required":["ms"]}`, ``},
	}
	for _, c := range set.List() {
		d := c.Descriptor()
		if got := [2]string{string(d.InputSchema), string(d.OutputSchema)}; got != want[c.Name()] {
			t.Errorf("%s: schemas\n got: %s\nwant: %s", c.Name(), got, want[c.Name()])
		}
	}
	feedback := []struct{ tool, args, want string }{
		{"echo", `{}`, "invalid arguments: text: missing property"},
		{"echo", `{"text":"a","x":1}`, "invalid arguments: x: unexpected property"},
		{"greet", `{"name":7}`, "invalid arguments: name: must be string, got number"},
		{"sleep", `{"ms":700000}`, "invalid arguments: ms: must be <= 600000"},
		{"sleep", `{"ms":-1}`, "invalid arguments: ms: must be >= 0"},
		{"sleep", `{"ms":1.5}`, "invalid arguments: ms: must be integer, got number"},
		{"fail", `{"mode":"nope"}`, `invalid arguments: mode: must be one of "result", "error", "panic", "bad-output", "provider"`},
		{"fail", `{"mode":5}`, "invalid arguments: mode: must be string, got number"},
		{"sleep_task", `{"ms":86400001}`, "invalid arguments: ms: must be <= 86400000"},
		{"spin", `{"ms":600001}`, "invalid arguments: ms: must be <= 600000"},
	}
	for _, tt := range feedback {
		c, _ := set.Lookup(tt.tool)
		_, fb := c.ValidateInput(json.RawMessage(tt.args))
		if fb == nil || len(fb.Content) != 1 || fb.Content[0].Text != tt.want {
			t.Errorf("%s %s: feedback %+v, want %q", tt.tool, tt.args, fb, tt.want)
		}
	}
}
