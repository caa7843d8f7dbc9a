package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// chanStream collects the frames of a connection.
type chanStream struct{ ch chan []byte }

func (s chanStream) Send(frame []byte) { s.ch <- frame }
func (chanStream) Close()              {}

type echoIn struct {
	Text string `json:"text"`
}

func testTools(tb testing.TB, extra ...tools.Tool) *tools.Set {
	tb.Helper()
	defs := append([]tools.Tool{{
		Name:        "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Handler: tools.Func(func(ctx context.Context, in echoIn) (*tools.Result, error) {
			return tools.TextResult(in.Text), nil
		}),
	}}, extra...)
	set, err := tools.Compile(defs)
	if err != nil {
		tb.Fatal(err)
	}
	return set
}

// start returns an engine with one initialized connection whose frames arrive on the stream.
func start(tb testing.TB, cfg engine.Config) (*engine.Engine, *engine.Connection, chanStream) {
	tb.Helper()
	eng, err := engine.Start(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := eng.Connect("test")
	if err != nil {
		tb.Fatal(err)
	}
	s := chanStream{ch: make(chan []byte, 4096)}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := eng.Shutdown(ctx); err != nil {
			tb.Errorf("Shutdown: %v", err)
		}
	})
	conn.Deliver(&protocol.Message{ID: protocol.NewIntID(0), Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}, s)
	<-s.ch
	return eng, conn, s
}

func callMsg(id int64, tool, args string) *protocol.Message {
	return &protocol.Message{ID: protocol.NewIntID(id), Method: "tools/call",
		Params: json.RawMessage(`{"name":"` + tool + `","arguments":` + args + `}`)}
}

// TestShutdownCancelsInFlight: Shutdown cancels the calls in flight (no response), waits for
// their handlers, and delivers the reports queued before it.
func TestShutdownCancelsInFlight(t *testing.T) {
	var reported atomic.Int32
	started := make(chan struct{}, 8)
	block := tools.Tool{Name: "block", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, errors.New("late failure")
	})}
	boom := tools.Tool{Name: "boom", Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
		return nil, errors.New("boom")
	})}
	eng, err := engine.Start(engine.Config{Tools: testTools(t, block, boom), OnError: func(err error, _ *diagnostics.ToolErrorDetails) {
		time.Sleep(10 * time.Millisecond) // a slow callback: Shutdown still waits for it
		reported.Add(1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	conn, _ := eng.Connect("test")
	s := chanStream{ch: make(chan []byte, 64)}
	conn.Deliver(&protocol.Message{ID: protocol.NewIntID(0), Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}, s)
	<-s.ch
	for i := int64(1); i <= 3; i++ {
		conn.Deliver(callMsg(i, "block", `{}`), s)
		<-started
	}
	conn.Deliver(callMsg(4, "boom", `{}`), s)
	if got := string(<-s.ch); !strings.Contains(got, `"id":4`) {
		t.Fatalf("got %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := eng.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-s.ch:
		t.Errorf("a cancelled call answered: %s", f)
	default:
	}
	if got := reported.Load(); got != 1 {
		t.Errorf("%d reports delivered before Shutdown returned, want 1", got)
	}
	if _, err := eng.Connect("late"); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Connect after Shutdown = %v, want ErrClosed", err)
	}
}

func BenchmarkCall(b *testing.B) {
	_, conn, s := start(b, engine.Config{Tools: testTools(b)})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		conn.Deliver(callMsg(int64(i+1), "echo", `{"text":"hi"}`), s)
		<-s.ch
	}
}

// BenchmarkCallPipelined keeps 64 calls in flight on one connection, as a busy client does.
func BenchmarkCallPipelined(b *testing.B) {
	_, conn, s := start(b, engine.Config{Tools: testTools(b)})
	const window = 64
	b.ReportAllocs()
	b.ResetTimer()
	sent, got := 0, 0
	for got < b.N {
		for sent < b.N && sent-got < window {
			sent++
			conn.Deliver(callMsg(int64(sent), "echo", `{"text":"hi"}`), s)
		}
		<-s.ch
		got++
	}
}

// BenchmarkCancel measures one cancellation: from the notification's delivery until the
// handler's context is done.
func BenchmarkCancel(b *testing.B) {
	started, stopped := make(chan struct{}), make(chan struct{})
	wait := tools.Tool{Name: "wait", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- struct{}{}
		return nil, ctx.Err()
	})}
	_, conn, s := start(b, engine.Config{Tools: testTools(b, wait)})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		id := int64(i + 1)
		conn.Deliver(callMsg(id, "wait", `{}`), s)
		<-started
		b.StartTimer()
		conn.Deliver(&protocol.Message{Method: "notifications/cancelled",
			Params: json.RawMessage(fmt.Sprintf(`{"requestId":%d}`, id))}, s)
		<-stopped
	}
}

// BenchmarkDiagnostics measures the report path: Report to onError.
func BenchmarkDiagnostics(b *testing.B) {
	done := make(chan struct{}, 1024)
	eng, err := engine.Start(engine.Config{Tools: testTools(b), DiagnosticsQueue: 1 << 20,
		OnError: func(error, *diagnostics.ToolErrorDetails) { done <- struct{}{} }})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	e := errors.New("x")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		eng.Report(e)
		<-done
	}
}

// TestEngineTool: Tool reads the tools served now, including those added and removed at run
// time.
func TestEngineTool(t *testing.T) {
	eng, _, _ := start(t, engine.Config{Tools: testTools(t)})
	if c, ok := eng.Tool("echo"); !ok || c.Name() != "echo" {
		t.Errorf("Tool(echo) = %v, %v", c, ok)
	}
	if _, ok := eng.Tool("late"); ok {
		t.Error("Tool(late) found before it was added")
	}
	late := tools.Tool{Name: "late", Handler: testTools(t).List()[0].Def().Handler,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"}}}`)}
	if err := eng.AddTools(late); err != nil {
		t.Fatal(err)
	}
	if c, ok := eng.Tool("late"); !ok || len(c.HeaderParams()) != 1 {
		t.Errorf("Tool(late) = %v, %v after AddTools", c, ok)
	}
	eng.RemoveTools("late")
	if _, ok := eng.Tool("late"); ok {
		t.Error("Tool(late) found after RemoveTools")
	}
}
