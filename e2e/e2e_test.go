package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

const failedResult = `{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}`

func call(id, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

func TestInitialize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
		want string
	}{
		{
			name: "latest version",
			give: mcptest.InitRequest,
			want: `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolgrain","version":"` + toolgrain.Version + `"},"instructions":"Be kind."}}`,
		},
		{
			name: "older supported version is kept",
			give: `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			want: `{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolgrain","version":"` + toolgrain.Version + `"},"instructions":"Be kind."}}`,
		},
		{
			name: "unsupported version gets the latest",
			give: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2023-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			want: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolgrain","version":"` + toolgrain.Version + `"},"instructions":"Be kind."}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Instructions: "Be kind."})
			c.Expect(tt.give, tt.want)
			c.Expect(mcptest.InitRequest, `{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"Invalid Request: already initialized"}}`)
		})
	}
}

// TestErrorModel asserts the client's exact view and the private report of every row of the
// error model that a tools/call can reach.
func TestErrorModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		give       string
		want       string
		wantReport string // substring of the reported error; "" means no report
	}{
		{"success", call("1", "echo", `{"text":"hi"}`),
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`, ""},
		{"structured output", call("2", "greet", `{"name":"Ada"}`),
			`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada!\"}"}],"structuredContent":{"greeting":"Hello, Ada!"}}}`, ""},
		{"unknown tool", call("3", "nope", `{}`),
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: unknown tool \"nope\""}}`, ""},
		{"invalid input: rule", call("4", "sleep", `{"ms":700000}`),
			`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"invalid arguments: ms: must be <= 600000"}],"isError":true}}`, ""},
		{"invalid input: missing", call("5", "greet", `{}`),
			`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"invalid arguments: name: missing property"}],"isError":true}}`, ""},
		{"invalid input: type", call("6", "echo", `{"text":5}`),
			`{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"invalid arguments: text: must be string, got number"}],"isError":true}}`, ""},
		{"explicit public error", call("7", "fail", `{"mode":"result"}`),
			`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"public failure message"}],"isError":true}}`, ""},
		{"handler error", call("8", "fail", `{"mode":"error"}`),
			`{"jsonrpc":"2.0","id":8,"result":` + failedResult + `}`, demo.Marker},
		{"handler panic", call("9", "fail", `{"mode":"panic"}`),
			`{"jsonrpc":"2.0","id":9,"result":` + failedResult + `}`, demo.Marker},
		{"bad output", call("10", "fail", `{"mode":"bad-output"}`),
			`{"jsonrpc":"2.0","id":10,"result":` + failedResult + `}`, "output"},
		{"provider failure", call("11", "fail", `{"mode":"provider"}`),
			`{"jsonrpc":"2.0","id":11,"result":` + failedResult + `}`, demo.Marker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := mcptest.NewRecorder()
			c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
			c.Initialize()
			c.Expect(tt.give, tt.want)
			c.Expect(`{"jsonrpc":"2.0","id":"after","method":"ping"}`, `{"jsonrpc":"2.0","id":"after","result":{}}`)
			if tt.wantReport == "" {
				if got := rec.Snapshot(); len(got) != 0 {
					t.Fatalf("onError called for an expected outcome: %v", got[0].Err)
				}
				return
			}
			r := rec.Wait(t, 1)[0]
			if !strings.Contains(r.Err.Error(), tt.wantReport) {
				t.Errorf("reported error %q does not contain %q", r.Err, tt.wantReport)
			}
			var gotID = strings.TrimPrefix(strings.SplitN(tt.give, ",", 3)[1], `"id":`)
			if r.Details.ToolName() != "fail" || r.Details.Request().ID().String() != gotID ||
				r.Details.Request().Method() != "tools/call" || r.Details.Request().ToolName() != "fail" {
				t.Errorf("details = tool %q, id %s, method %q", r.Details.ToolName(), r.Details.Request().ID(), r.Details.Request().Method())
			}
		})
	}
}

func TestPanicReportCarriesStack(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
	c.Initialize()
	c.Expect(call("1", "fail", `{"mode":"panic"}`), `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`)
	var pe *tools.PanicError
	if r := rec.Wait(t, 1)[0]; !errors.As(r.Err, &pe) || len(pe.Stack) == 0 {
		t.Fatalf("report %v is not a *tools.PanicError with a stack", r.Err)
	}
}

func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
		want string
	}{
		{"parse error", `{"jsonrpc":"2.0",`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset 17"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batches are not supported"}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"nope/nope"}`, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: nope/nope"}}`},
		{"thirty-digit id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, `{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}`},
		{"string id", `{"jsonrpc":"2.0","id":"x\"y","method":"ping"}`, `{"jsonrpc":"2.0","id":"x\"y","result":{}}`},
		{"zero id", `{"jsonrpc":"2.0","id":0,"method":"ping"}`, `{"jsonrpc":"2.0","id":0,"result":{}}`},
		{"tools/call without params", `{"jsonrpc":"2.0","id":8,"method":"tools/call"}`, `{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Invalid params: tools/call needs params with a string name"}}`},
		{"missing arguments mean {}", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"greet"}}`, `{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"invalid arguments: name: missing property"}],"isError":true}}`},
		{"invalid cursor", `{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"cursor":"bogus"}}`, `{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"Invalid params: invalid cursor"}}`},
	}
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.For(t).Expect(tt.give, tt.want)
		})
	}
	// Unknown notifications are ignored; the stream keeps serving.
	c.Send(`{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}`)
	c.Expect(`{"jsonrpc":"2.0","id":"still","method":"ping"}`, `{"jsonrpc":"2.0","id":"still","result":{}}`)
}

func TestRequestsBeforeInitialize(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Expect(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request: tools/list before initialize"}}`)
}

func TestToolsListPagination(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{PageSize: 3}})
	c.Initialize()
	var names []string
	cursor := ""
	for page := 0; ; page++ {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, page, params))
		var resp struct {
			Result struct {
				Tools []struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(c.Recv()), &resp); err != nil {
			t.Fatal(err)
		}
		for _, tl := range resp.Result.Tools {
			if tl.Description == "" || len(tl.InputSchema) == 0 {
				t.Errorf("tool %s lacks a description or an inputSchema", tl.Name)
			}
			names = append(names, tl.Name)
		}
		if cursor = resp.Result.NextCursor; cursor == "" {
			break
		}
	}
	if got, want := strings.Join(names, ","), "echo,greet,sleep,fail,spin"; got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}
}

func TestOversizedMessage(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxMessageSize: 1024}})
	c.Initialize()
	c.Expect(call("1", "echo", `{"text":"`+strings.Repeat("x", 2000)+`"}`),
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message exceeds the limit of 1024 bytes"}}`)
	c.Expect(call("2", "echo", `{"text":"ok"}`), `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}`)
}

func TestLargeMessageBeyondScannerLimit(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	text := strings.Repeat("y", 1<<20)
	c.Expect(call("1", "echo", `{"text":"`+text+`"}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`+text+`"}]}}`)
}

func TestCancellationSilencesTheCall(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
	c.Initialize()
	c.Send(call("41", "sleep", `{"ms":300}`))
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user"}}`)
	c.Silent(700*time.Millisecond, "longer than the handler's own sleep: its late answer would be out")
	c.Expect(`{"jsonrpc":"2.0","id":42,"method":"ping"}`, `{"jsonrpc":"2.0","id":42,"result":{}}`)
	if got := rec.Snapshot(); len(got) != 0 {
		t.Errorf("a cancelled call was reported: %v", got[0].Err)
	}
}

// TestFailureAfterCancellationIsNotReported: a handler that fails once its context is cancelled
// produces neither a response nor a report.
func TestFailureAfterCancellationIsNotReported(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	returned := make(chan struct{})
	block := tools.Tool{
		Name: "block",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			defer close(returned)
			<-ctx.Done()
			return nil, errors.New("failed after cancel: " + demo.Marker)
		}),
	}
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{block}, OnError: rec.OnError})
	c.Initialize()
	c.Send(call(`"b"`, "block", `{}`))
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}`)
	<-returned
	c.Silent(300*time.Millisecond, "the handler returned: its answer would be out")
	if got := rec.Snapshot(); len(got) != 0 {
		t.Errorf("failure after cancellation reported: %v", got[0].Err)
	}
}

func TestIgnoredCancellations(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}`) // initialize is not cancellable
	c.Send(mcptest.InitRequest)
	if got := c.Recv(); !strings.Contains(got, `"result"`) {
		t.Fatalf("initialize: %s", got)
	}
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}`) // unknown
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}`) // malformed
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled"}`)                            // no params
	c.Expect(call("1", "echo", `{"text":"a"}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}`)
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`) // finished
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
}

func TestDuplicateIDInFlight(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	c.Send(call("5", "sleep", `{"ms":200}`))
	c.Expect(call("5", "echo", `{"text":"dup"}`), `{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: id 5 is already in use by a request in flight"}}`)
	// The first call is undisturbed.
	if got, want := c.Recv(), `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"slept"}]}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestProgress(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":350},"_meta":{"progressToken":"tok"}}}`)
	var progress []float64
	for {
		m := decode(t, c.Recv())
		if m["method"] == "notifications/progress" {
			p := m["params"].(map[string]any)
			if p["progressToken"] != "tok" || p["total"] != 350.0 {
				t.Fatalf("progress params = %v", p)
			}
			progress = append(progress, p["progress"].(float64))
			continue
		}
		if m["id"] != 1.0 || m["result"] == nil {
			t.Fatalf("final message = %v", m)
		}
		break
	}
	if len(progress) < 2 {
		t.Fatalf("got %d progress notifications before the result, want at least 2", len(progress))
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] {
			t.Errorf("progress not increasing: %v", progress)
		}
	}
}

func TestNoProgressAfterCancellation(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	c.Send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":2000},"_meta":{"progressToken":7}}}`)
	m := decode(t, c.Recv()) // the first progress notification shows the call is running
	if m["method"] != "notifications/progress" {
		t.Fatalf("want progress first, got %v", m)
	}
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	c.Send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	// Progress queued before the cancellation was processed may still arrive; after the ping's
	// answer (which follows the cancellation) nothing may.
	for {
		line := c.Recv()
		if line == `{"jsonrpc":"2.0","id":8,"result":{}}` {
			break
		}
		if !strings.Contains(line, "notifications/progress") {
			t.Fatalf("unexpected message: %s", line)
		}
	}
	c.Silent(400*time.Millisecond, "room for a late answer or progress of the cancelled call")
}

func TestToolTimeoutIsAnUnexpectedFailure(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	slow := tools.Tool{
		Name:    "slow",
		Timeout: 50 * time.Millisecond,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	}
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{slow}, OnError: rec.OnError})
	c.Initialize()
	c.Expect(call("1", "slow", `{}`), `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`)
	if r := rec.Wait(t, 1)[0]; !strings.Contains(r.Err.Error(), "timed out") {
		t.Errorf("reported %v, want a timeout", r.Err)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int32
	limited := tools.Tool{
		Name:           "limited",
		MaxConcurrency: 2,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			running.Add(-1)
			return tools.TextResult("ok"), nil
		}),
	}
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{limited}})
	c.Initialize()
	const n = 10
	for i := 0; i < n; i++ {
		c.Send(call(fmt.Sprint(i), "limited", `{}`))
	}
	// One waiting call is cancelled: it never runs and never answers.
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
	for i := 0; i < n-1; i++ {
		if got := c.Recv(); !strings.Contains(got, `"text":"ok"`) {
			t.Fatalf("got %s", got)
		}
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("peak concurrency %d, limit 2", p)
	}
}

func TestZapSinkLogsPanicStack(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.ErrorLevel)
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Logger: zap.New(core)})
	c.Initialize()
	c.Expect(call("1", "fail", `{"mode":"panic"}`), `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`)
	mcptest.Eventually(t, "a log entry for the failure", func() bool { return logs.FilterMessage("unexpected failure").Len() != 0 })
	f := logs.FilterMessage("unexpected failure").All()[0].ContextMap()
	if s, _ := f["stack"].(string); !strings.Contains(s, "demo.fail") {
		t.Errorf("stack field = %q, want the handler's frames", s)
	}
}

// TestIDFreeOnceAnswered: an id whose call has been answered may be used again at once, even
// before the request actor has stopped.
func TestIDFreeOnceAnswered(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	for i := 0; i < 200; i++ {
		c.Expect(call("1", "echo", `{"text":"again"}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"again"}]}}`)
	}
}
