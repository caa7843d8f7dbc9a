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
	"github.com/toolgrain/toolgrain/internal/mcptest"
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

// TestEndOfInputAnswersWhatWasReceived: calls still running at EOF are answered, progress
// included; a listen stream, which would never end by itself, ends at once with its result; a
// request to the client fails, since no answer can come, and the call answers anyway. The
// connection ends when the last answer is out, not at EndOfInputGrace (an hour here).
func TestEndOfInputAnswersWhatWasReceived(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: append(demo.Tools(), rootsTool()), Limits: toolgrain.LimitsConfig{EndOfInputGrace: time.Hour}})
	c.Expect(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolgrain","version":"`+toolgrain.Version+`"}}}`)
	c.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.Send(modernRequest(`"L"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`))
	if got := c.Recv(); !strings.Contains(got, "notifications/subscriptions/acknowledged") {
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
	c.Send(call("1", "sleep", `{"ms":200}`))
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":300},"_meta":{"progressToken":2}}}`)
	c.Send(call("3", "echo", `{"text":"last"}`))
	c.Send(call("4", "fail", `{"mode":"error"}`))
	c.Send(call("5", "roots", `{}`))
	_ = c.CloseInput()

	lines, err := c.Drain()
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
	t.Parallel()
	rec := mcptest.NewRecorder()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError, Limits: toolgrain.LimitsConfig{EndOfInputGrace: 200 * time.Millisecond}})
	c.Initialize()
	c.Send(call("1", "sleep", `{"ms":600000}`))
	c.Send(call("2", "echo", `{"text":"in time"}`))
	_ = c.CloseInput()
	lines, err := c.Drain()
	if err != nil {
		t.Errorf("ServeStdio = %v, want nil", err)
	}
	if want := []string{echoResult("2", "in time")}; strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("output after EOF: %q, want %q", lines, want)
	}
	if r := rec.Snapshot(); len(r) != 0 {
		t.Errorf("reports: %v", r)
	}
}

// TestEndOfInputThenContext: the context ending while calls answer after EOF cancels them at
// once; ServeStdio returns its error.
func TestEndOfInputThenContext(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.DebugLevel)
	srv := newServer(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{EndOfInputGrace: time.Hour}, Logger: zap.New(core)})
	p := mcptest.NewPipes()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, p.InR, p.OutW) }()
	p.Write(t, mcptest.InitRequest)
	p.ReadLine(t)
	p.Write(t, call("1", "sleep", `{"ms":600000}`))
	_ = p.InW.Close()
	mcptest.Eventually(t, "the end of input logged", func() bool { return logs.FilterMessageSnippet("end of input").Len() != 0 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ServeStdio = %v, want context.Canceled", err)
		}
	case <-time.After(mcptest.Watchdog):
		t.Fatal("ServeStdio waited out the grace after its context ended")
	}
	_ = p.OutR.Close()
}
