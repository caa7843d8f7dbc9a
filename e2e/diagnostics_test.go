package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

// TestPanickingOnErrorChangesNothing: a callback that always panics delays no response, and
// every report still reaches it.
func TestPanickingOnErrorChangesNothing(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	onError := func(err error, d *diagnostics.ToolErrorDetails) {
		mu.Lock()
		calls++
		mu.Unlock()
		panic("onError exploded")
	}
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: onError})
	c.Initialize()
	for i := 0; i < 5; i++ {
		c.Expect(call(fmt.Sprint(i), "fail", `{"mode":"panic"}`), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, i, failedResult))
	}
	c.Expect(call("9", "echo", `{"text":"alive"}`), `{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"alive"}]}}`)
	mcptest.Eventually(t, "5 callback runs, each a counted panic", func() bool {
		mu.Lock()
		n := calls
		mu.Unlock()
		return n == 5 && c.srv.Stats().CallbackPanics == 5
	})
}

// TestBlockingOnErrorChangesNothing: a callback that blocks until the test ends delays no
// response; after its timeout the next report goes to it.
func TestBlockingOnErrorChangesNothing(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var (
		mu     sync.Mutex
		errs   []string
		called = make(chan struct{}, 16)
	)
	onError := func(err error, d *diagnostics.ToolErrorDetails) {
		mu.Lock()
		errs = append(errs, err.Error())
		first := len(errs) == 1
		mu.Unlock()
		called <- struct{}{}
		if first {
			<-release // blocks "forever": until the test ends
		}
	}
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: onError, Diagnostics: toolgrain.DiagnosticsConfig{CallbackTimeout: 50 * time.Millisecond}})
	defer close(release) // runs before the cleanup that closes the server
	c.Initialize()
	c.Expect(call("1", "fail", `{"mode":"error"}`), `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`)
	<-called
	c.Expect(call("2", "fail", `{"mode":"panic"}`), `{"jsonrpc":"2.0","id":2,"result":`+failedResult+`}`)
	c.Expect(call("3", "echo", `{"text":"x"}`), `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"x"}]}}`)
	select {
	case <-called: // the second report got through once the first callback was abandoned
	case <-time.After(mcptest.Watchdog):
		t.Fatal("second report never delivered")
	}
	if got := c.srv.Stats().AbandonedCallbacks; got != 1 {
		t.Errorf("abandoned callbacks = %d, want 1", got)
	}
}

// TestDiagnosticsQueueDropsAndCounts: with a callback stuck and a queue of 2, extra reports are
// dropped and counted, and responses are unaffected.
func TestDiagnosticsQueueDropsAndCounts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	onError := func(error, *diagnostics.ToolErrorDetails) { <-release }
	c := startStdio(t, toolgrain.Config{
		Tools: demo.Tools(), OnError: onError,
		Diagnostics: toolgrain.DiagnosticsConfig{Queue: 2, CallbackTimeout: time.Hour},
	})
	defer close(release)
	c.Initialize()
	for i := 0; i < 10; i++ {
		c.Expect(call(fmt.Sprint(i), "fail", `{"mode":"error"}`), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, i, failedResult))
	}
	c.Expect(`{"jsonrpc":"2.0","id":"p","method":"ping"}`, `{"jsonrpc":"2.0","id":"p","result":{}}`)
	mcptest.Eventually(t, "7 reports dropped (1 running, 2 queued)", func() bool { return c.srv.Stats().DroppedReports == 7 })
}

// TestCanaryArgumentNeverReported: neither the reported error, nor the details, nor the JSON
// lines sink carry an argument value.
func TestCanaryArgumentNeverReported(t *testing.T) {
	t.Parallel()
	const canary = "CANARY-argument-value-7f3a"
	type in struct {
		Password string `json:"password"`
	}
	leaky := tools.Tool{
		Name:        "login",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"password":{"type":"string"}},"required":["password"]}`),
		Handler: tools.Func(func(ctx context.Context, v in) (*tools.Result, error) {
			return nil, errors.New("login rejected")
		}),
	}
	var buf syncBuffer
	rec := mcptest.NewRecorder()
	sink := diagnostics.JSONLinesSink(&buf)
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{leaky}, OnError: func(err error, d *diagnostics.ToolErrorDetails) {
		sink(err, d)
		rec.OnError(err, d)
	}})
	c.Initialize()
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"password":"` + canary + `"},"_meta":{"trace":"t-1"}}}`)
	if got := c.Recv(); strings.Contains(got, canary) || !strings.Contains(got, "Tool execution failed") {
		t.Fatalf("response: %s", got)
	}
	r := rec.Wait(t, 1)[0]
	seen := fmt.Sprintf("%v %+v %s %s %s", r.Err, r.Err, r.Details.ToolName(), r.Details.Request().ID(), r.Details.Request().Meta())
	if strings.Contains(seen, canary) {
		t.Errorf("report carries the argument: %s", seen)
	}
	if got := string(r.Details.Request().Meta()); got != `{"trace":"t-1"}` {
		t.Errorf("meta = %s", got)
	}
	if strings.Contains(buf.String(), canary) {
		t.Errorf("diagnostics file carries the argument: %s", buf.String())
	}
	var line diagnostics.Record
	if err := json.Unmarshal([]byte(strings.TrimSpace(buf.String())), &line); err != nil {
		t.Fatalf("diagnostics line %q: %v", buf.String(), err)
	}
	if line.Tool != "login" || string(line.RequestID) != "1" || line.Error != "login rejected" {
		t.Errorf("diagnostics line = %+v", line)
	}
}

func TestErrorOnlyCallback(t *testing.T) {
	t.Parallel()
	got := make(chan error, 1)
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: diagnostics.ErrorOnly(func(err error) { got <- err })})
	c.Initialize()
	c.Expect(call("1", "fail", `{"mode":"provider"}`), `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`)
	select {
	case err := <-got:
		var pe *tools.ProviderError
		if !errors.As(err, &pe) && !strings.Contains(err.Error(), demo.Marker) {
			t.Errorf("reported %v", err)
		}
	case <-time.After(mcptest.Watchdog):
		t.Fatal("no report")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
