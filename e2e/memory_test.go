package e2e_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// memoryClient returns an initialized in-memory client of a new server built from cfg.
func memoryClient(t *testing.T, cfg toolgrain.Config) (*toolgrain.Server, *toolgrain.InMemoryClient) {
	t.Helper()
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatalf("ConnectInMemory: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return srv, c
}

func receive(t *testing.T, c *toolgrain.InMemoryClient) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	msg, err := c.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return string(msg)
}

// TestInMemoryRawMessages: Send and Receive see exactly the bytes of the stdio transport.
func TestInMemoryRawMessages(t *testing.T) {
	t.Parallel()
	_, c := memoryClient(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxMessageSize: 1024}})
	tests := []struct {
		name string
		give string
		want string
	}{
		{"ping", `{"jsonrpc":"2.0","id":"p","method":"ping"}`, `{"jsonrpc":"2.0","id":"p","result":{}}`},
		{"tool call", call(`"e"`, "echo", `{"text":"hi"}`), `{"jsonrpc":"2.0","id":"e","result":{"content":[{"type":"text","text":"hi"}]}}`},
		{"failure", call(`"f"`, "fail", `{"mode":"error"}`), `{"jsonrpc":"2.0","id":"f","result":` + failedResult + `}`},
		{"parse error", `{"jsonrpc":"2.0",`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset 17"}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":-1,"method":"nope"}`, `{"jsonrpc":"2.0","id":-1,"error":{"code":-32601,"message":"Method not found: nope"}}`},
		{"too large", call(`"big"`, "echo", `{"text":"`+strings.Repeat("x", 2000)+`"}`), `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message exceeds the limit of 1024 bytes"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Send([]byte(tt.give)); err != nil {
				t.Fatal(err)
			}
			if got := receive(t, c); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestInMemoryCallErrors(t *testing.T) {
	t.Parallel()
	_, c := memoryClient(t, toolgrain.Config{Tools: demo.Tools()})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	_, err := c.CallTool(ctx, "nope", nil)
	var werr *protocol.WireError
	if !errors.As(err, &werr) || werr.Code != -32602 {
		t.Errorf("unknown tool: %v, want a -32602 *protocol.WireError", err)
	}
	res, err := c.CallTool(ctx, "sleep", map[string]int{"ms": 700000})
	if err != nil || !res.IsError || resultText(res) != "invalid arguments: ms: must be <= 600000" {
		t.Errorf("invalid arguments: %+v, %v", res, err)
	}
	list, err := c.ListTools(ctx)
	if err != nil || len(list) != len(demo.Tools()) || list[0].Name != "echo" {
		t.Errorf("ListTools = %v, %v", list, err)
	}
	if _, err := c.Call(ctx, "ping", func() {}); err == nil {
		t.Error("unmarshalable params accepted")
	}
}

// TestInMemoryCancellation: a Call whose context ends sends notifications/cancelled; the server
// answers nothing for it, reports nothing, and counts the cancellation.
func TestInMemoryCancellation(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	m := metrics.NewMemory()
	_, c := memoryClient(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError, Telemetry: toolgrain.TelemetryConfig{Metrics: m}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.CallTool(ctx, "sleep", map[string]int{"ms": 400}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CallTool = %v, want context.DeadlineExceeded", err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer rcancel()
	if msg, err := c.Receive(rctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after cancellation: %s, %v", msg, err)
	}
	if got := rec.Snapshot(); len(got) != 0 {
		t.Errorf("reported: %v", got[0].Err)
	}
	s := m.Snapshot()
	if s.Calls("sleep", metrics.Cancelled) != 1 || s.LateResponsesSuppressed() != 1 || s.InFlight != 0 {
		t.Errorf("metrics = %+v", s.Tools["sleep"])
	}
}

// TestInMemoryClose: Close cancels the calls in flight and ends the connection; the client then
// refuses to send, and Receive returns what was left unread, then io.EOF.
func TestInMemoryClose(t *testing.T) {
	t.Parallel()
	_, c := memoryClient(t, toolgrain.Config{Tools: demo.Tools()})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":"unread","method":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "sleep", map[string]int{"ms": 600000})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, toolgrain.ErrClientClosed) {
		t.Errorf("call in flight: %v, want ErrClientClosed", err)
	}
	if got := receive(t, c); got != `{"jsonrpc":"2.0","id":"unread","result":{}}` {
		t.Errorf("unread message = %s", got)
	}
	if _, err := c.Receive(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("Receive after the last message: %v, want io.EOF", err)
	}
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)); !errors.Is(err, toolgrain.ErrClientClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	if _, err := c.Call(ctx, "ping", nil); !errors.Is(err, toolgrain.ErrClientClosed) {
		t.Errorf("Call after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestInMemoryConcurrentCalls: many goroutines share one client; every response reaches its
// own caller.
func TestInMemoryConcurrentCalls(t *testing.T) {
	t.Parallel()
	_, c := memoryClient(t, toolgrain.Config{Tools: demo.Tools()})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			text := strings.Repeat("z", i)
			res, err := c.CallTool(ctx, "echo", map[string]string{"text": text})
			if err == nil && resultText(res) != text {
				err = errors.New("wrong response: " + resultText(res))
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestMetricsOutcomes: every outcome of a Go-handler tool is counted once, latency observed,
// and a late result after a timeout counted as suppressed.
func TestMetricsOutcomes(t *testing.T) {
	t.Parallel()
	m := metrics.NewMemory()
	slow := tools.Tool{Name: "slow", Timeout: 30 * time.Millisecond,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond)
			return tools.TextResult("too late"), nil
		})}
	_, c := memoryClient(t, toolgrain.Config{Tools: append(demo.Tools(), slow), Telemetry: toolgrain.TelemetryConfig{Metrics: m}, OnError: func(error, *toolgrain.ToolErrorDetails) {}})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	calls := []struct {
		tool string
		args any
	}{
		{"echo", map[string]string{"text": "a"}},
		{"echo", map[string]string{"text": "b"}},
		{"fail", map[string]string{"mode": "result"}},
		{"fail", map[string]string{"mode": "panic"}},
		{"greet", map[string]int{"name": 1}},
		{"slow", nil},
	}
	for _, cl := range calls {
		if _, err := c.CallTool(ctx, cl.tool, cl.args); err != nil {
			t.Fatal(err)
		}
	}
	mcptest.Eventually(t, "the late result counted", func() bool { return m.Snapshot().LateResponsesSuppressed() != 0 })
	s := m.Snapshot()
	for _, w := range []struct {
		tool string
		o    metrics.Outcome
		n    uint64
	}{
		{"echo", metrics.OK, 2}, {"fail", metrics.ToolError, 1}, {"fail", metrics.Failed, 1},
		{"greet", metrics.Invalid, 1}, {"slow", metrics.Timeout, 1},
	} {
		if got := s.Calls(w.tool, w.o); got != w.n {
			t.Errorf("%s %s = %d, want %d", w.tool, w.o, got, w.n)
		}
	}
	if s.InFlight != 0 || s.Tools["slow"].LateResponsesSuppressed != 1 || s.Tools["echo"].Latency.Count != 2 {
		t.Errorf("snapshot = %+v", s)
	}
}

// TestMetricsReportsDropped: reports beyond the diagnostics queue are counted.
func TestMetricsReportsDropped(t *testing.T) {
	t.Parallel()
	m := metrics.NewMemory()
	release := make(chan struct{})
	_, c := memoryClient(t, toolgrain.Config{Tools: demo.Tools(), Telemetry: toolgrain.TelemetryConfig{Metrics: m}, Diagnostics: toolgrain.DiagnosticsConfig{Queue: 1},
		OnError: func(error, *toolgrain.ToolErrorDetails) { <-release }})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	for range 5 {
		if _, err := c.CallTool(ctx, "fail", map[string]string{"mode": "error"}); err != nil {
			t.Fatal(err)
		}
	}
	mcptest.Eventually(t, "3 reports dropped", func() bool { return m.Snapshot().ReportsDropped >= 3 })
	if got := m.Snapshot().ReportsDropped; got != 3 { // one running, one queued
		t.Errorf("dropped = %d, want 3", got)
	}
}
