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
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), MaxCallsPerConnection: 2})
	c.initialize()
	c.send(call("1", "sleep", longSleep))
	c.expect(call("2", "echo", `{"text":"a"}`), echoResult("2", "a"))
	c.send(call("3", "sleep", longSleep))
	c.expect(call("4", "echo", `{"text":"b"}`), busyError("4", "connection", 2))
	c.expectPing(`"p1"`)
	c.send(cancelFor("1"))
	// A refused call left nothing behind: its id is free.
	c.expect(call("4", "echo", `{"text":"c"}`), echoResult("4", "c"))
	c.send(call("5", "sleep", longSleep))
	c.expect(call("6", "greet", `{"name":"x"}`), busyError("6", "connection", 2))
	c.expectPing(`"p2"`)
	if got := c.srv.Stats().RefusedCalls; got != 2 {
		t.Errorf("RefusedCalls = %d, want 2", got)
	}
	// Cancelled, so that the end of the input does not wait EndOfInputGrace for them.
	c.send(cancelFor("3"))
	c.send(cancelFor("5"))
}

// TestCallLimitPerServer: MaxCalls counts the calls of every connection.
func TestCallLimitPerServer(t *testing.T) {
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), MaxCalls: 2})
	a, b := attach(t, srv), attach(t, srv)
	a.initialize()
	b.initialize()
	a.send(call("1", "sleep", longSleep))
	a.expectPing(`"a"`)
	b.send(call("1", "sleep", longSleep))
	b.expectPing(`"b"`)
	a.expect(call("2", "echo", `{"text":"x"}`), busyError("2", "server", 2))
	b.expect(call("2", "echo", `{"text":"x"}`), busyError("2", "server", 2))
	b.send(cancelFor("1"))
	b.expectPing(`"b2"`) // the cancellation has been handled
	a.expect(call("3", "echo", `{"text":"y"}`), echoResult("3", "y"))
	a.send(cancelFor("1")) // so that the end of the input does not wait EndOfInputGrace for it
}

// TestAnsweredCallFreesItsPlaceFirst: a call's place is given back before its answer is sent,
// so a client that keeps exactly as many calls in flight as the limit is never refused.
func TestAnsweredCallFreesItsPlaceFirst(t *testing.T) {
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), MaxCallsPerConnection: 1})
	c.initialize()
	for i := range 300 {
		id := fmt.Sprint(i)
		switch i % 3 {
		case 0:
			c.expect(call(id, "echo", `{"text":"t"}`), echoResult(id, "t"))
		case 1:
			c.expect(call(id, "fail", `{"mode":"error"}`), fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, failedResult))
		case 2:
			c.expect(call(id, "sleep", `{"ms":-1}`), fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"invalid arguments: ms: must be >= 0"}],"isError":true}}`, id))
		}
	}
	if got := c.srv.Stats().RefusedCalls; got != 0 {
		t.Errorf("RefusedCalls = %d, want 0", got)
	}
}

// TestReaderKeepsReadingWhenSaturated: with every run slot of a tool taken and the call limit
// reached, pings are answered, over-limit calls refused and cancellations applied.
func TestReaderKeepsReadingWhenSaturated(t *testing.T) {
	held := tools.Tool{
		Name:           "held",
		MaxConcurrency: 1,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}),
	}
	const limit = 50
	c := startStdio(t, toolgrain.Config{Tools: append(demo.Tools(), held), MaxCallsPerConnection: limit})
	c.initialize()
	for i := range limit {
		c.send(call(fmt.Sprint(i), "held", `{}`)) // one runs, the others wait for the slot
	}
	c.expectPing(`"full"`)
	c.expect(call(`"over"`, "echo", `{"text":"x"}`), busyError(`"over"`, "connection", limit))
	for i := range limit {
		c.send(cancelFor(fmt.Sprint(i)))
	}
	c.expect(call(`"after"`, "echo", `{"text":"y"}`), echoResult(`"after"`, "y"))
	// The tool's slot was released by the cancelled runner and handed on to nobody.
	c.send(call(`"again"`, "held", `{}`))
	c.send(cancelFor(`"again"`))
	c.expectPing(`"end"`)
}

// TestToolTimeoutDefault: Config.ToolTimeout applies to tools without a Timeout of their own,
// and is an unexpected failure like a tool's own timeout.
func TestToolTimeoutDefault(t *testing.T) {
	block := func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	rec := newRecorder()
	c := startStdio(t, toolgrain.Config{
		Tools: []tools.Tool{
			{Name: "plain", Handler: tools.HandlerFunc(block)},
			{Name: "own", Timeout: 20 * time.Millisecond, Handler: tools.HandlerFunc(block)},
		},
		ToolTimeout: 60 * time.Millisecond,
		OnError:     rec.onError,
	})
	c.initialize()
	c.expect(call("1", "plain", `{}`), `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`)
	c.expect(call("2", "own", `{}`), `{"jsonrpc":"2.0","id":2,"result":`+failedResult+`}`)
	reports := rec.wait(t, 2)
	for i, want := range []string{`tool "plain": tool call timed out after 60ms`, `tool "own": tool call timed out after 20ms`} {
		if !strings.Contains(reports[i].err.Error(), want) || reports[i].details == nil {
			t.Errorf("report %d = %v (details %v), want %q", i, reports[i].err, reports[i].details, want)
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
			rec := newRecorder()
			c := startStdio(t, toolgrain.Config{Tools: append(demo.Tools(), probe), OnError: rec.onError, MaxCallsPerConnection: 1})
			c.initialize()
			for i := range 3 { // with one run slot and one place, a leak of either would hang the next
				id := fmt.Sprint(i)
				c.expect(call(id, "probe", `{}`), `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32603,"message":"Internal error"}}`)
			}
			c.expect(call("9", "echo", `{"text":"alive"}`), echoResult("9", "alive"))
			c.expectPing(`"p"`)
			for _, r := range rec.wait(t, 3) {
				if r.details != nil || !strings.Contains(r.err.Error(), "internal error: request actor panicked") {
					t.Errorf("report = %v with details %v, want an internal error with no details", r.err, r.details)
				}
			}
		})
	}
}

// TestBrokenStdout: a write error on the output goes to OnError with no details, and
// ServeStdio closes that connection (its calls in flight silenced) and returns the error; the
// server serves other connections.
func TestBrokenStdout(t *testing.T) {
	rec := newRecorder()
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.onError})
	p := newPipes()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), p.inR, p.outW) }()
	p.write(t, initRequest)
	if line := p.readLine(t); !strings.Contains(line, `"protocolVersion"`) {
		t.Fatalf("initialize: %s", line)
	}
	p.write(t, call("1", "sleep", longSleep))
	broken := errors.New("stdout went away")
	_ = p.outR.CloseWithError(broken)
	p.write(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`) // its answer hits the broken output
	select {
	case err := <-done:
		if !errors.Is(err, broken) {
			t.Fatalf("ServeStdio = %v, want the write error", err)
		}
	case <-time.After(watchdog):
		t.Fatal("ServeStdio did not return after its output broke")
	}
	_ = p.inW.Close()
	r := rec.wait(t, 1)
	if len(r) != 1 || r[0].details != nil || !errors.Is(r[0].err, broken) {
		t.Fatalf("reports = %v, want one write error with no details", r)
	}
	c := attach(t, srv)
	c.initialize()
	c.expect(call("1", "echo", `{"text":"still serving"}`), echoResult("1", "still serving"))
}

// TestSlowConsumerPausesReading: while more than MaxOutputBacklog bytes of answers wait for a
// client that does not read them, the server reads no new message; once the client has read
// the backlog, reading resumes and nothing was lost.
func TestSlowConsumerPausesReading(t *testing.T) {
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), MaxOutputBacklog: 16 << 10})
	p := newPipes()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), p.inR, p.outW) }()
	defer func() {
		_ = p.inW.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	}()
	p.write(t, initRequest)
	p.readLine(t)
	big := strings.Repeat("b", 32<<10) // one answer is over the mark
	p.write(t, call("1", "echo", `{"text":"`+big+`"}`))
	// One byte read proves the answer is being written: until all of it is read it stays in
	// the backlog.
	if _, err := p.r.ReadByte(); err != nil {
		t.Fatal(err)
	}
	req2, resp2 := ping("2")
	req3, resp3 := ping("3")
	// From here on the answer is over the mark until the client reads it all, so the server
	// pauses before its next read: before req2 if its check comes after the answer is queued,
	// or after req2. Either way it cannot read req3 while paused. The writes block until the
	// server reads them: io.Pipe has no buffer.
	written := make(chan struct{})
	go func() {
		defer close(written)
		_, _ = io.WriteString(p.inW, req2+"\n")
		_, _ = io.WriteString(p.inW, req3+"\n")
	}()
	deadline := time.Now().Add(watchdog)
	for srv.Stats().OutputPauses == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server never paused reading")
		}
		time.Sleep(time.Millisecond)
	}
	// The server stays paused until the client reads, so req3 cannot have been read yet.
	select {
	case <-written:
		t.Fatal("the server read a message while its output backlog was over the mark")
	default:
	}
	if got, want := p.readLine(t), echoResult("1", big)[1:]; got != want { // its first byte was read above
		t.Errorf("echo answer: got %d bytes, want %d", len(got), len(want))
	}
	if got := p.readLine(t); got != resp2 {
		t.Errorf("got %s, want %s", got, resp2)
	}
	if got := p.readLine(t); got != resp3 {
		t.Errorf("got %s, want %s", got, resp3)
	}
	<-written
}

// TestStalledOutputAtClose: a client that closes its input but never reads the answers does
// not keep ServeStdio past OutputGrace; the abandoned output is reported with no details.
func TestStalledOutputAtClose(t *testing.T) {
	rec := newRecorder()
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.onError, OutputGrace: 50 * time.Millisecond})
	p := newPipes()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), p.inR, p.outW) }()
	p.write(t, initRequest) // its answer is never read
	_ = p.inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio = %v", err)
		}
	case <-time.After(watchdog):
		t.Fatal("ServeStdio waited for a client that never reads")
	}
	r := rec.wait(t, 1)
	if r[0].details != nil || !strings.Contains(r[0].err.Error(), "stdio: output stalled") {
		t.Errorf("report = %v (details %v)", r[0].err, r[0].details)
	}
	_ = p.outR.Close() // ends the abandoned writer
}
