package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/internal/conformance"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// The modern era (MCP 2026-07-28) over stdio: every request carries its envelope and is served
// on its own, with no initialize.

// envelope is the _meta of a modern request that declares caps.
func envelope(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// modernCall is a modern tools/call of tool with args (a JSON object) and more params members.
func modernCall(id, tool, args, caps string, more ...string) string {
	extra := ""
	for _, m := range more {
		extra += "," + m
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s%s,%s}}`, id, tool, args, extra, envelope(caps))
}

func modernRequest(id, method, params string) string {
	if params != "" {
		params += ","
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{%s%s}}`, id, method, params, envelope(`{}`))
}

// serverMeta is the _meta every modern result of a default-named server ends with.
const serverMeta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"toolgrain","version":"` + toolgrain.Version + `"}}`

func modernResult(id, members string) string {
	if members != "" {
		members += ","
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"complete",` + members + serverMeta + `}}`
}

func TestModernDiscover(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Instructions: "Be kind.", CacheTTL: 90 * time.Second})
	c.Expect(modernRequest(`"d"`, "server/discover", ""), modernResult(`"d"`,
		`"ttlMs":90000,"cacheScope":"public","supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],`+
			`"capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},`+
			`"instructions":"Be kind."`))
}

// TestModernEnvelope: the envelope's checks and the methods the modern revision removed, in the
// order a client meets them.
func TestModernEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
		want string
	}{
		{"discover without _meta", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: params._meta must be an object with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"}}`},
		{"discover without params", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: a 2026-07-28 request needs params with _meta"}}`},
		{"no capabilities", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: params._meta.io.modelcontextprotocol/clientCapabilities must be an object"}}`},
		{"version not a string", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":2026,"io.modelcontextprotocol/clientCapabilities":{}}}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: params._meta.io.modelcontextprotocol/protocolVersion must be a non-empty string"}}`},
		{"unsupported version", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32022,"message":"Unsupported protocol version: v999.0.0","data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"v999.0.0"}}}`},
		{"legacy version in an envelope", `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32022,"message":"Unsupported protocol version: 2025-11-25","data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2025-11-25"}}}`},
		{"bad log level", `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: invalid log level \"loud\""}}`},
		{"ping removed", modernRequest("7", "ping", ""), `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: ping"}}`},
		{"initialize removed", modernRequest("8", "initialize", ""), `{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found: initialize"}}`},
		{"setLevel removed", modernRequest("9", "logging/setLevel", `"level":"info"`), `{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found: logging/setLevel"}}`},
		{"subscribe removed", modernRequest("10", "resources/subscribe", `"uri":"a://b"`), `{"jsonrpc":"2.0","id":10,"error":{"code":-32601,"message":"Method not found: resources/subscribe"}}`},
		{"unknown method", modernRequest("11", "unknown/method", ""), `{"jsonrpc":"2.0","id":11,"error":{"code":-32601,"message":"Method not found: unknown/method"}}`},
		{"unknown tool", modernCall("12", "nope", `{}`, `{}`), `{"jsonrpc":"2.0","id":12,"error":{"code":-32602,"message":"Invalid params: unknown tool \"nope\""}}`},
		{"clientInfo is optional", modernRequest("13", "tools/list", `"cursor":"dDk5OQ"`), `{"jsonrpc":"2.0","id":13,"error":{"code":-32602,"message":"Invalid params: invalid cursor"}}`},
	}
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.For(t).Expect(tt.give, tt.want)
		})
	}
}

// TestModernErrorModel: the error model holds unchanged in the modern era; only the result's
// annotation differs.
func TestModernErrorModel(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
	failed := `"content":[{"type":"text","text":"Tool execution failed"}],"isError":true`
	c.Expect(modernCall("1", "echo", `{"text":"hi"}`, `{}`), modernResult("1", `"content":[{"type":"text","text":"hi"}]`))
	c.Expect(modernCall("2", "greet", `{"name":"Ann"}`, `{}`), modernResult("2",
		`"content":[{"type":"text","text":"{\"greeting\":\"Hello, Ann!\"}"}],"structuredContent":{"greeting":"Hello, Ann!"}`))
	c.Expect(modernCall("3", "sleep", `{"ms":700000}`, `{}`), modernResult("3",
		`"content":[{"type":"text","text":"invalid arguments: ms: must be <= 600000"}],"isError":true`))
	c.Expect(modernCall("4", "fail", `{"mode":"result"}`, `{}`), modernResult("4",
		`"content":[{"type":"text","text":"public failure message"}],"isError":true`))
	for i, mode := range []string{"error", "panic", "bad-output", "provider"} {
		id := fmt.Sprint(10 + i)
		c.Send(modernCall(id, "fail", `{"mode":"`+mode+`"}`, `{}`))
		got := c.Recv()
		if got != modernResult(id, failed) {
			t.Errorf("fail %s: %s", mode, got)
		}
		if strings.Contains(got, demo.Marker) {
			t.Errorf("fail %s leaked the marker: %s", mode, got)
		}
	}
	reports := rec.Wait(t, 4)
	for _, r := range reports {
		if r.Details == nil || r.Details.ToolName() != "fail" || r.Err == nil {
			t.Errorf("report: %v, %+v", r.Err, r.Details)
		}
	}
	c.Silent(50*time.Millisecond, "the reported failures send nothing more")
	if n := len(rec.Snapshot()); n != 4 {
		t.Errorf("%d reports, want 4: validation feedback and public errors are not reported", n)
	}
}

// TestModernCancellation: over stdio a modern call is cancelled with notifications/cancelled, as
// a legacy one: no response, no report.
func TestModernCancellation(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
	c.Send(modernCall("1", "sleep", `{"ms":600000}`, `{}`))
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	c.Silent(100*time.Millisecond, "the cancelled call's answer would be out")
	c.Expect(modernCall("2", "echo", `{"text":"next"}`, `{}`), modernResult("2", `"content":[{"type":"text","text":"next"}]`))
	if r := rec.Snapshot(); len(r) != 0 {
		t.Errorf("reports after a cancellation: %v", r)
	}
}

// TestModernProgressAndLogging: progress needs a token, as before; log messages need the
// request's own logLevel, at or above which they are sent.
func TestModernProgressAndLogging(t *testing.T) {
	t.Parallel()
	logger := tools.Tool{
		Name: "logger", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			for _, l := range []string{"debug", "info", "error"} {
				if err := client.Log(ctx, l, "t", l); err != nil {
					return nil, err
				}
			}
			return tools.TextResult("done"), nil
		}),
	}
	c := startStdio(t, toolgrain.Config{Tools: append(demo.Tools(), logger)})
	c.Expect(modernCall("1", "logger", `{}`, `{}`), modernResult("1", `"content":[{"type":"text","text":"done"}]`))
	level := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"logger","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}}}`
	c.Send(level)
	for _, want := range []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"t","data":"info"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","logger":"t","data":"error"}}`,
		modernResult("2", `"content":[{"type":"text","text":"done"}]`),
	} {
		if got := c.Recv(); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	c.Send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":250},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	var progress int
	for {
		got := c.Recv()
		if strings.Contains(got, `"method":"notifications/progress"`) && strings.Contains(got, `"progressToken":"p"`) {
			progress++
			continue
		}
		if got != modernResult("3", `"content":[{"type":"text","text":"slept"}]`) {
			t.Errorf("sleep answered %s", got)
		}
		break
	}
	if progress == 0 {
		t.Error("no progress for a modern call with a progress token")
	}
}

// TestDualEraOnOneConnection: a legacy session and modern requests share one stdio connection,
// each served by its own era's rules.
func TestDualEraOnOneConnection(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Expect(modernCall("1", "echo", `{"text":"modern first"}`, `{}`), modernResult("1", `"content":[{"type":"text","text":"modern first"}]`))
	c.Expect(call("2", "echo", `{"text":"legacy"}`), `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request: tools/call before initialize"}}`)
	c.Initialize()
	c.Expect(call("3", "echo", `{"text":"legacy"}`), `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"legacy"}]}}`)
	c.Expect(modernCall("4", "echo", `{"text":"modern"}`, `{}`), modernResult("4", `"content":[{"type":"text","text":"modern"}]`))
	c.Expect(`{"jsonrpc":"2.0","id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":5,"result":{}}`)
	c.Expect(modernRequest("6", "ping", ""), `{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found: ping"}}`)
}

// inputTools are tools that ask the client for input with the one handler API of both eras.
func inputTools() []tools.Tool {
	return []tools.Tool{
		{
			Name: "ask", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			Handler: tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
				first, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "first?"})
				if err != nil {
					return nil, err
				}
				second, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "second?"})
				if err != nil {
					return nil, err
				}
				return tools.TextResult(string(first.Content) + "+" + string(second.Content)), nil
			}),
		},
		{
			Name: "keep", InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				if client.State(ctx) == nil {
					if err := client.SetState(ctx, []byte("made-once")); err != nil {
						return nil, err
					}
				}
				if _, err := client.Input(ctx, map[string]client.InputRequest{"roots": client.RootsInput()}); err != nil {
					return nil, err
				}
				return tools.TextResult(string(client.State(ctx))), nil
			}),
		},
	}
}

// inputRequired reads an input_required answer: its requests and state.
func inputRequired(t *testing.T, line string) (map[string]json.RawMessage, string) {
	t.Helper()
	var m struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || m.Result.ResultType != "input_required" {
		t.Fatalf("not an input_required result: %s", line)
	}
	return m.Result.InputRequests, m.Result.RequestState
}

// TestModernInputRounds: a handler that asks twice with client.Elicit, written for a legacy
// session, is served in two input_required rounds and completes on the third request.
func TestModernInputRounds(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	c := startStdio(t, toolgrain.Config{Tools: inputTools(), OnError: rec.OnError})
	caps := `{"elicitation":{}}`
	c.Send(modernCall("1", "ask", `{"q":"x"}`, caps))
	reqs, state := inputRequired(t, c.Recv())
	if string(reqs["elicitation-1"]) != `{"method":"elicitation/create","params":{"message":"first?"}}` || len(reqs) != 1 {
		t.Fatalf("round 1 asked %s", reqs)
	}
	c.Send(modernCall("2", "ask", `{"q":"x"}`, caps, `"inputResponses":{"elicitation-1":{"action":"accept","content":{"a":1}}}`, `"requestState":"`+state+`"`))
	reqs, state2 := inputRequired(t, c.Recv())
	if _, ok := reqs["elicitation-2"]; !ok || len(reqs) != 1 || state2 == state {
		t.Fatalf("round 2 asked %s", reqs)
	}
	// The state carries the first answer: the retry need only answer the second.
	c.Expect(modernCall("3", "ask", `{"q":"x"}`, caps, `"inputResponses":{"elicitation-2":{"action":"accept","content":{"b":2}}}`, `"requestState":"`+state2+`"`),
		modernResult("3", `"content":[{"type":"text","text":"{\"a\":1}+{\"b\":2}"}]`))

	// A state is bound to its request and protected.
	for _, tt := range []struct{ name, give, want string }{
		{"tampered", modernCall("4", "ask", `{"q":"x"}`, caps, `"requestState":"`+state2+`-TAMPERED"`), "requestState failed verification"},
		{"other arguments", modernCall("5", "ask", `{"q":"y"}`, caps, `"requestState":"`+state2+`"`), "requestState belongs to another request"},
		{"other tool", modernCall("6", "keep", `{"q":"x"}`, caps, `"requestState":"`+state2+`"`), "requestState belongs to another request"},
		{"not an object", modernCall("7", "ask", `{}`, caps, `"inputResponses":{"elicitation-1":12345}`), `inputResponses[\"elicitation-1\"] must be a result object`},
		{"null", modernCall("8", "ask", `{}`, caps, `"inputResponses":null`), "inputResponses must be an object"},
	} {
		c.Send(tt.give)
		got := c.Recv()
		if !strings.Contains(got, `"code":-32602`) || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %s", tt.name, got)
		}
	}
	// Without the capability, nothing is asked: the handler's error is -32021.
	c.Expect(modernCall("9", "ask", `{}`, `{}`), `{"jsonrpc":"2.0","id":9,"error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"elicitation":{}}}}}`)
	if r := rec.Snapshot(); len(r) != 0 {
		t.Errorf("reports: %v", r)
	}
}

// TestModernInputState: the handler's state survives the round trip, sealed.
func TestModernInputState(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: inputTools()})
	c.Send(modernCall("1", "keep", `{}`, `{"roots":{}}`))
	reqs, state := inputRequired(t, c.Recv())
	if string(reqs["roots"]) != `{"method":"roots/list","params":{}}` {
		t.Fatalf("asked %s", reqs)
	}
	if strings.Contains(state, "made-once") {
		t.Errorf("the state is readable by the client: %s", state)
	}
	c.Expect(modernCall("2", "keep", `{}`, `{"roots":{}}`, `"inputResponses":{"roots":{"roots":[]}}`, `"requestState":"`+state+`"`),
		modernResult("2", `"content":[{"type":"text","text":"made-once"}]`))
}

// TestModernInputStateAcrossServers: a shared key lets a server accept the state another one
// issued; an unshared one does not, and a state past its TTL is refused.
func TestModernInputStateAcrossServers(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	a := startStdio(t, toolgrain.Config{Tools: inputTools(), RequestState: toolgrain.RequestStateConfig{Key: key}})
	b := startStdio(t, toolgrain.Config{Tools: inputTools(), RequestState: toolgrain.RequestStateConfig{Key: key}})
	other := startStdio(t, toolgrain.Config{Tools: inputTools()})
	short := startStdio(t, toolgrain.Config{Tools: inputTools(), RequestState: toolgrain.RequestStateConfig{Key: key, TTL: time.Nanosecond}})
	caps := `{"roots":{}}`
	a.Send(modernCall("1", "keep", `{}`, caps))
	_, state := inputRequired(t, a.Recv())
	retry := modernCall("2", "keep", `{}`, caps, `"inputResponses":{"roots":{"roots":[]}}`, `"requestState":"`+state+`"`)
	b.Expect(retry, modernResult("2", `"content":[{"type":"text","text":"made-once"}]`))
	other.Expect(retry, `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: requestState failed verification"}}`)
	short.Send(modernCall("3", "keep", `{}`, caps))
	_, state = inputRequired(t, short.Recv())
	time.Sleep(1100 * time.Millisecond) // expiry has a resolution of one second
	short.Expect(modernCall("4", "keep", `{}`, caps, `"requestState":"`+state+`"`),
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: requestState has expired"}}`)
}

func TestRequestStateKeyTooShort(t *testing.T) {
	t.Parallel()
	_, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools(), RequestState: toolgrain.RequestStateConfig{Key: []byte("short")}})
	if err == nil || !strings.Contains(err.Error(), "needs at least 32") {
		t.Errorf("NewServer = %v", err)
	}
}

// TestModernListen: a listen stream is acknowledged first, then carries the notifications its
// filter asks for, tagged with its id, whichever connection changed the lists; it ends silently
// when cancelled, and with a result when the server shuts down.
func TestModernListen(t *testing.T) {
	t.Parallel()
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools(), Prompts: conformance.Prompts()})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = srv.Close()
		}
	})
	c := attach(t, srv)
	c.Send(modernRequest(`"L"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://r"]}`))
	if got, want := c.Recv(), `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://r"]}}}`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	c.Send(modernRequest("2", "subscriptions/listen", `"notifications":{"promptsListChanged":true}`))
	c.Recv() // its acknowledgement
	if err := srv.AddTools(tools.Tool{Name: "extra", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) { return tools.TextResult(""), nil })}); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Recv(), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	srv.NotifyResourceUpdated("test://other")
	srv.NotifyResourceUpdated("test://r")
	if got, want := c.Recv(), `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"uri":"test://r"}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	srv.RemovePrompts("test_simple_prompt")
	if got, want := c.Recv(), `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2}}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// Cancelled: nothing more for "L".
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	c.Expect(modernCall("3", "echo", `{"text":"x"}`, `{}`), modernResult("3", `"content":[{"type":"text","text":"x"}]`))
	srv.RemoveTools("extra")
	c.Silent(50*time.Millisecond, "a change after the cancellation would be out")
	// Shut down: the open listen stream 2 is answered.
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	if got, want := c.Recv(), `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"toolgrain","version":"`+toolgrain.Version+`"},"io.modelcontextprotocol/subscriptionId":2}}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown: %v", err)
	}
	closed = true
}

func TestModernListenErrors(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Expect(modernRequest("1", "subscriptions/listen", ""),
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: subscriptions/listen needs params with a notifications object"}}`)
	c.Expect(modernRequest("2", "subscriptions/listen", `"notifications":{"resourceSubscriptions":["relative"]}`),
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: resourceSubscriptions: \"relative\" is not an absolute URI"}}`)
}

// TestModernInMemory: the in-memory client serves the modern era too, beside a legacy session
// on the same connection.
func TestModernInMemory(t *testing.T) {
	t.Parallel()
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: append(demo.Tools(), inputTools()...)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	mc, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	meta := json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`)
	res, err := mc.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "hi"}, "_meta": meta})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"resultType":"complete","content":[{"type":"text","text":"hi"}],` + serverMeta + `}`; string(res) != want {
		t.Errorf("echo: %s\nwant %s", res, want)
	}
	res, err = mc.Call(ctx, "tools/call", map[string]any{"name": "keep", "arguments": map[string]any{}, "_meta": meta})
	if err != nil || !strings.Contains(string(res), `"resultType":"input_required"`) {
		t.Fatalf("keep: %s, %v", res, err)
	}
	_, err = mc.Call(ctx, "ping", map[string]any{"_meta": meta})
	if !errors.Is(err, protocol.ErrMethodNotFound("")) {
		t.Errorf("modern ping: %v", err)
	}
}
