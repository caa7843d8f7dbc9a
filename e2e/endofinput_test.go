package e2e_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/tools"
)

// The end of a stdio client's input (EOF) means it will send nothing more, not that it wants
// nothing back: what it sent is answered, within EndOfInputGrace.

// rootsTool asks the client for its roots and answers with a public error result when it cannot.
func rootsTool() tools.Tool {
	return tools.Tool{
		Name: "roots",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			if _, err := client.ListRoots(ctx); err != nil {
				return tools.ErrorResult("no roots"), nil
			}
			return tools.TextResult("roots"), nil
		}),
	}
}

// drain reads the connection's output until the server closes it, which it does once
// ServeStdio has returned, and returns ServeStdio's result.
func (c *stdioClient) drain() ([]string, error) {
	c.t.Helper()
	var lines []string
	timeout := time.After(watchdog)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				select {
				case err := <-c.done:
					c.done <- err // for Cleanup
					return lines, err
				case <-timeout:
					c.t.Fatal("ServeStdio did not return")
				}
			}
			lines = append(lines, line)
		case <-timeout:
			c.t.Fatalf("the output did not end; so far: %q", lines)
		}
	}
}

// TestEndOfInputAnswersWhatWasReceived: calls still running at EOF are answered, progress
// included; a listen stream, which would never end by itself, ends at once with its result; a
// request to the client fails, since no answer can come, and the call answers anyway. The
// connection ends when the last answer is out, not at EndOfInputGrace (an hour here).
func TestEndOfInputAnswersWhatWasReceived(t *testing.T) {
	c := startStdio(t, toolgrain.Config{Tools: append(demo.Tools(), rootsTool()), EndOfInputGrace: time.Hour})
	c.expect(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolgrain","version":"`+toolgrain.Version+`"}}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(modernRequest(`"L"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`))
	if got := c.recv(); !strings.Contains(got, "notifications/subscriptions/acknowledged") {
		t.Fatalf("listen: %s", got)
	}
	want := map[string]string{
		"1": `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept"}]}}`,
		"2": `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"slept"}]}}`,
		"3": echoResult("3", "last"),
		"4": `{"jsonrpc":"2.0","id":4,"result":` + failedResult + `}`,
		"5": `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"no roots"}],"isError":true}}`,
		"L": `{"jsonrpc":"2.0","id":"L","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"toolgrain","version":"` + toolgrain.Version + `"},"io.modelcontextprotocol/subscriptionId":"L"}}}`,
	}
	c.send(call("1", "sleep", `{"ms":200}`))
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":300},"_meta":{"progressToken":2}}}`)
	c.send(call("3", "echo", `{"text":"last"}`))
	c.send(call("4", "fail", `{"mode":"error"}`))
	c.send(call("5", "roots", `{}`))
	_ = c.in.Close()

	lines, err := c.drain()
	if err != nil {
		t.Errorf("ServeStdio = %v, want nil", err)
	}
	answered := map[string]int{}
	for _, line := range lines {
		switch {
		case strings.Contains(line, `"method":"notifications/progress"`) && strings.Contains(line, `"progressToken":2,`):
		case strings.Contains(line, `"method":"roots/list"`): // sent before EOF was seen; never answered
		default:
			found := false
			for id, w := range want {
				if line == w {
					answered[id]++
					found = true
				}
			}
			if !found {
				t.Errorf("unexpected line %s", line)
			}
		}
	}
	for id := range want {
		if answered[id] != 1 {
			t.Errorf("request %s answered %d times, want once", id, answered[id])
		}
	}
}

// TestEndOfInputGraceCancelsTheRest: a call still running EndOfInputGrace after EOF is cancelled:
// it gets no answer and nothing is reported, while what finished in time is answered.
func TestEndOfInputGraceCancelsTheRest(t *testing.T) {
	rec := newRecorder()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.onError, EndOfInputGrace: 200 * time.Millisecond})
	c.initialize()
	c.send(call("1", "sleep", `{"ms":600000}`))
	c.send(call("2", "echo", `{"text":"in time"}`))
	_ = c.in.Close()
	lines, err := c.drain()
	if err != nil {
		t.Errorf("ServeStdio = %v, want nil", err)
	}
	if want := []string{echoResult("2", "in time")}; strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("output after EOF: %q, want %q", lines, want)
	}
	if r := rec.snapshot(); len(r) != 0 {
		t.Errorf("reports: %v", r)
	}
}

// TestEndOfInputThenContext: the context ending while calls answer after EOF cancels them at
// once; ServeStdio returns its error.
func TestEndOfInputThenContext(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), EndOfInputGrace: time.Hour, Logger: zap.New(core)})
	p := newPipes()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, p.inR, p.outW) }()
	p.write(t, initRequest)
	p.readLine(t)
	p.write(t, call("1", "sleep", `{"ms":600000}`))
	_ = p.inW.Close()
	for wait := time.Now().Add(watchdog); logs.FilterMessageSnippet("end of input").Len() == 0; {
		if time.Now().After(wait) {
			t.Fatal("EOF was not seen")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ServeStdio = %v, want context.Canceled", err)
		}
	case <-time.After(watchdog):
		t.Fatal("ServeStdio waited out the grace after its context ended")
	}
	_ = p.outR.Close()
}
