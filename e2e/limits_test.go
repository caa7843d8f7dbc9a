package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/faults"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

func busyError(id, scope string, limit int) string {
	where := "on the server"
	if scope == "connection" {
		where = "on this connection"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-31000,"message":"Server busy: too many calls in flight %s (limit %d)","data":{"scope":%q,"limit":%d}}}`,
		id, where, limit, scope, limit)
}

const longSleep = `{"ms":600000}`

// TestCallLimitPerConnection: a call over MaxCallsPerConnection is refused with the busy error,
// pings are still answered, and an answered or cancelled call frees its place at once.
func TestCallLimitPerConnection(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxCallsPerConnection: 2}})
	c.Initialize()
	c.Send(call("1", "sleep", longSleep))
	c.Expect(call("2", "echo", `{"text":"a"}`), echoResult("2", "a"))
	c.Send(call("3", "sleep", longSleep))
	c.Expect(call("4", "echo", `{"text":"b"}`), busyError("4", "connection", 2))
	c.ExpectPing(`"p1"`)
	c.Send(mcptest.CancelFor("1"))
	// A refused call left nothing behind: its id is free.
	c.Expect(call("4", "echo", `{"text":"c"}`), echoResult("4", "c"))
	c.Send(call("5", "sleep", longSleep))
	c.Expect(call("6", "greet", `{"name":"x"}`), busyError("6", "connection", 2))
	c.ExpectPing(`"p2"`)
	if got := c.srv.Stats().RefusedCalls; got != 2 {
		t.Errorf("RefusedCalls = %d, want 2", got)
	}
	// Cancelled, so that the end of the input does not wait EndOfInputGrace for them.
	c.Send(mcptest.CancelFor("3"))
	c.Send(mcptest.CancelFor("5"))
}

// TestCallLimitPerServer: MaxCalls counts the calls of every connection.
func TestCallLimitPerServer(t *testing.T) {
	t.Parallel()
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxCalls: 2}})
	a, b := attach(t, srv), attach(t, srv)
	a.Initialize()
	b.Initialize()
	a.Send(call("1", "sleep", longSleep))
	a.ExpectPing(`"a"`)
	b.Send(call("1", "sleep", longSleep))
	b.ExpectPing(`"b"`)
	a.Expect(call("2", "echo", `{"text":"x"}`), busyError("2", "server", 2))
	b.Expect(call("2", "echo", `{"text":"x"}`), busyError("2", "server", 2))
	b.Send(mcptest.CancelFor("1"))
	b.ExpectPing(`"b2"`) // the cancellation has been handled
	a.Expect(call("3", "echo", `{"text":"y"}`), echoResult("3", "y"))
	a.Send(mcptest.CancelFor("1")) // so that the end of the input does not wait EndOfInputGrace for it
}

// TestAnsweredCallFreesItsPlaceFirst: a call's place is given back before its answer is sent,
// so a client that keeps exactly as many calls in flight as the limit is never refused.
func TestAnsweredCallFreesItsPlaceFirst(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxCallsPerConnection: 1}})
	c.Initialize()
	for i := range 300 {
		id := fmt.Sprint(i)
		switch i % 3 {
		case 0:
			c.Expect(call(id, "echo", `{"text":"t"}`), echoResult(id, "t"))
		case 1:
			c.Expect(call(id, "fail", `{"mode":"error"}`), fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, failedResult))
		case 2:
			c.Expect(call(id, "sleep", `{"ms":-1}`), fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"invalid arguments: ms: must be >= 0"}],"isError":true}}`, id))
		}
	}
	if got := c.srv.Stats().RefusedCalls; got != 0 {
		t.Errorf("RefusedCalls = %d, want 0", got)
	}
}

// TestReaderKeepsReadingWhenSaturated: with every run slot of a tool taken and the call limit
// reached, pings are answered, over-limit calls refused and cancellations applied.
func TestReaderKeepsReadingWhenSaturated(t *testing.T) {
	t.Parallel()
	held := tools.Tool{
		Name:           "held",
		MaxConcurrency: 1,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}),
	}
	const limit = 50
	c := startStdio(t, toolgrain.Config{Tools: append(demo.Tools(), held), Limits: toolgrain.LimitsConfig{MaxCallsPerConnection: limit}})
	c.Initialize()
	for i := range limit {
		c.Send(call(fmt.Sprint(i), "held", `{}`)) // one runs, the others wait for the slot
	}
	c.ExpectPing(`"full"`)
	c.Expect(call(`"over"`, "echo", `{"text":"x"}`), busyError(`"over"`, "connection", limit))
	for i := range limit {
		c.Send(mcptest.CancelFor(fmt.Sprint(i)))
	}
	c.Expect(call(`"after"`, "echo", `{"text":"y"}`), echoResult(`"after"`, "y"))
	// The tool's slot was released by the cancelled runner and handed on to nobody.
	c.Send(call(`"again"`, "held", `{}`))
	c.Send(mcptest.CancelFor(`"again"`))
	c.ExpectPing(`"end"`)
}

// TestToolTimeoutDefault: Config.Limits.ToolTimeout applies to tools without a Timeout of their
// own, and is an unexpected failure like a tool's own timeout.
func TestToolTimeoutDefault(t *testing.T) {
	t.Parallel()
	block := func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	rec := mcptest.NewRecorder()
	c := startStdio(t, toolgrain.Config{
		Tools: []tools.Tool{
			{Name: "plain", Handler: tools.HandlerFunc(block)},
			{Name: "own", Timeout: 20 * time.Millisecond, Handler: tools.HandlerFunc(block)},
		},
		Limits:  toolgrain.LimitsConfig{ToolTimeout: 60 * time.Millisecond},
		OnError: rec.OnError,
	})
	c.Initialize()
	c.Expect(call("1", "plain", `{}`), `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`)
	c.Expect(call("2", "own", `{}`), `{"jsonrpc":"2.0","id":2,"result":`+failedResult+`}`)
	reports := rec.Wait(t, 2)
	for i, want := range []string{`tool "plain": tool call timed out after 60ms`, `tool "own": tool call timed out after 20ms`} {
		if !strings.Contains(reports[i].Err.Error(), want) || reports[i].Details == nil {
			t.Errorf("report %d = %v (details %v), want %q", i, reports[i].Err, reports[i].Details, want)
		}
	}
}

// TestEnginePanicInRequestActor: a panic in the engine's own code in a request actor answers
// that call with -32603 Internal error, reports the failure with no details, gives back the
// tool's run slot and the call's place, and the connection keeps serving.
func TestEnginePanicInRequestActor(t *testing.T) {
	for _, point := range []string{faults.RequestStart, faults.RequestAnswer} {
		t.Run(point, func(t *testing.T) {
			restore := faults.Set(func(p, tool string) {
				if p == point && tool == "probe" {
					panic("engine bug near " + demo.Marker)
				}
			})
			defer restore()
			probe := tools.Tool{
				Name:           "probe",
				MaxConcurrency: 1,
				Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
					return tools.TextResult("probed"), nil
				}),
			}
			rec := mcptest.NewRecorder()
			c := startStdio(t, toolgrain.Config{Tools: append(demo.Tools(), probe), OnError: rec.OnError, Limits: toolgrain.LimitsConfig{MaxCallsPerConnection: 1}})
			c.Initialize()
			for i := range 3 { // with one run slot and one place, a leak of either would hang the next
				id := fmt.Sprint(i)
				c.Expect(call(id, "probe", `{}`), `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32603,"message":"Internal error"}}`)
			}
			c.Expect(call("9", "echo", `{"text":"alive"}`), echoResult("9", "alive"))
			c.ExpectPing(`"p"`)
			for _, r := range rec.Wait(t, 3) {
				if r.Details != nil || !strings.Contains(r.Err.Error(), "internal error: request actor panicked") {
					t.Errorf("report = %v with details %v, want an internal error with no details", r.Err, r.Details)
				}
			}
		})
	}
}

// TestBrokenStdout: a write error on the output goes to OnError with no details, and
// ServeStdio closes that connection (its calls in flight silenced) and returns the error; the
// server serves other connections.
func TestBrokenStdout(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
	p := mcptest.NewPipes()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), p.InR, p.OutW) }()
	p.Write(t, mcptest.InitRequest)
	if line := p.ReadLine(t); !strings.Contains(line, `"protocolVersion"`) {
		t.Fatalf("initialize: %s", line)
	}
	p.Write(t, call("1", "sleep", longSleep))
	broken := errors.New("stdout went away")
	_ = p.OutR.CloseWithError(broken)
	p.Write(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`) // its answer hits the broken output
	select {
	case err := <-done:
		if !errors.Is(err, broken) {
			t.Fatalf("ServeStdio = %v, want the write error", err)
		}
	case <-time.After(mcptest.Watchdog):
		t.Fatal("ServeStdio did not return after its output broke")
	}
	_ = p.InW.Close()
	r := rec.Wait(t, 1)
	if len(r) != 1 || r[0].Details != nil || !errors.Is(r[0].Err, broken) {
		t.Fatalf("reports = %v, want one write error with no details", r)
	}
	c := attach(t, srv)
	c.Initialize()
	c.Expect(call("1", "echo", `{"text":"still serving"}`), echoResult("1", "still serving"))
}

// TestSlowConsumerPausesReading: while more than MaxOutputBacklog bytes of answers wait for a
// client that does not read them, the server reads no new message; once the client has read
// the backlog, reading resumes and nothing was lost.
func TestSlowConsumerPausesReading(t *testing.T) {
	t.Parallel()
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxOutputBacklog: 16 << 10}})
	p := mcptest.NewPipes()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), p.InR, p.OutW) }()
	defer func() {
		_ = p.InW.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	}()
	p.Write(t, mcptest.InitRequest)
	p.ReadLine(t)
	big := strings.Repeat("b", 32<<10) // one answer is over the mark
	p.Write(t, call("1", "echo", `{"text":"`+big+`"}`))
	// One byte read proves the answer is being written: until all of it is read it stays in
	// the backlog.
	if _, err := p.ReadByte(); err != nil {
		t.Fatal(err)
	}
	req2, resp2 := mcptest.Ping("2")
	req3, resp3 := mcptest.Ping("3")
	// From here on the answer is over the mark until the client reads it all, so the server
	// pauses before its next read: before req2 if its check comes after the answer is queued,
	// or after req2. Either way it cannot read req3 while paused. The writes block until the
	// server reads them: io.Pipe has no buffer.
	written := make(chan struct{})
	go func() {
		defer close(written)
		_, _ = io.WriteString(p.InW, req2+"\n")
		_, _ = io.WriteString(p.InW, req3+"\n")
	}()
	mcptest.Eventually(t, "the server to pause reading", func() bool { return srv.Stats().OutputPauses != 0 })
	// The server stays paused until the client reads, so req3 cannot have been read yet.
	select {
	case <-written:
		t.Fatal("the server read a message while its output backlog was over the mark")
	default:
	}
	if got, want := p.ReadLine(t), echoResult("1", big)[1:]; got != want { // its first byte was read above
		t.Errorf("echo answer: got %d bytes, want %d", len(got), len(want))
	}
	if got := p.ReadLine(t); got != resp2 {
		t.Errorf("got %s, want %s", got, resp2)
	}
	if got := p.ReadLine(t); got != resp3 {
		t.Errorf("got %s, want %s", got, resp3)
	}
	<-written
}

// TestStalledOutputAtClose: a client that closes its input but never reads the answers does
// not keep ServeStdio past OutputGrace; the abandoned output is reported with no details.
func TestStalledOutputAtClose(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError, Limits: toolgrain.LimitsConfig{OutputGrace: 50 * time.Millisecond}})
	p := mcptest.NewPipes()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), p.InR, p.OutW) }()
	p.Write(t, mcptest.InitRequest) // its answer is never read
	_ = p.InW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio = %v", err)
		}
	case <-time.After(mcptest.Watchdog):
		t.Fatal("ServeStdio waited for a client that never reads")
	}
	r := rec.Wait(t, 1)
	if r[0].Details != nil || !strings.Contains(r[0].Err.Error(), "stdio: output stalled") {
		t.Errorf("report = %v (details %v)", r[0].Err, r[0].Details)
	}
	_ = p.OutR.Close() // ends the abandoned writer
}
