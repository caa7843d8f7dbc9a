package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/internal/conformance"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// TestHTTPNotificationsOnStandaloneStream: list changes and resource updates go on the
// session's GET stream, and only while one is open.
func TestHTTPNotificationsOnStandaloneStream(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, fixtureConfig())
	c := e.Session()
	c.Initialize()
	// No GET stream yet: the change is not announced (nor kept).
	if err := e.srv.AddTools(tools.Tool{Name: "early", Description: "x", Handler: logTool.Handler}); err != nil {
		t.Fatal(err)
	}
	// The connection actor handles the change before this ping.
	c.Expect(`{"jsonrpc":"2.0","id":0,"method":"ping"}`, `{"jsonrpc":"2.0","id":0,"result":{}}`)
	get := c.Open(http.MethodGet, "")
	if get.Resp.StatusCode != http.StatusOK || !get.IsSSE() {
		t.Fatalf("GET: %d %s", get.Resp.StatusCode, get.Resp.Header.Get("Content-Type"))
	}
	c.Expect(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"test://watched-resource"}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	get.Silent(100*time.Millisecond, "room for a notification that must not come")
	if n := e.srv.RemoveTools("early"); n != 1 {
		t.Fatalf("RemoveTools = %d", n)
	}
	get.ExpectEvent(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	e.srv.NotifyResourceUpdated("test://watched-resource")
	get.ExpectEvent(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://watched-resource"}}`)
	if err := e.srv.AddPrompts(conformance.Prompts()[0]); err == nil {
		t.Fatal("adding a served prompt again succeeded")
	}
	if n := e.srv.RemovePrompts("test_simple_prompt"); n != 1 {
		t.Fatal("RemovePrompts")
	}
	get.ExpectEvent(`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`)
}

// TestHTTPRequestScopedMessagesOnTheCallStream: the log messages, progress and requests to the
// client that a handler sends travel on the SSE stream of the POST that made the call, before
// its response; the client's answer comes back in a POST of its own.
func TestHTTPRequestScopedMessagesOnTheCallStream(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, fixtureConfig())
	c := e.Session()
	c.InitializeWith(`{"sampling":{},"elicitation":{}}`)
	get := c.Open(http.MethodGet, "")
	c.Expect(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`)

	call := c.Open(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_logging","arguments":{}}}`)
	for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		call.ExpectEvent(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"test_tool_with_logging","data":"` + msg + `"}}`)
	}
	call.ExpectEvent(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Tool with logging executed successfully"}]}}`)
	call.ExpectEnd()

	call = c.Open(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p"}}}`)
	for i, p := range []string{"0", "50", "100"} {
		call.ExpectEvent(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":` + p + `,"total":100,"message":"Completed step ` + string(rune('1'+i)) + ` of 3"}}`)
	}
	call.ExpectEvent(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Tool with progress executed successfully"}]}}`)

	call = c.Open(http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"hello"}}}`)
	call.ExpectEvent(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hello"}}],"maxTokens":100}}`)
	if r := c.Post(`{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"m"}}`); r.Status != http.StatusAccepted {
		t.Fatalf("client response: %d %s", r.Status, r.Body)
	}
	call.ExpectEvent(`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"LLM response: hi there"}]}}`)
	call.ExpectEnd()
	get.Silent(100*time.Millisecond, "nothing of the calls leaks onto the standalone stream")
}

// TestHTTPCancelWhileWaitingForElicitation: a call cancelled while its handler waits for an
// elicitation answer ends its stream with no response, and the server withdraws its request on
// the standalone stream.
func TestHTTPCancelWhileWaitingForElicitation(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	cfg := fixtureConfig()
	cfg.OnError = rec.OnError
	e := startHTTP(t, cfg)
	c := e.Session()
	c.InitializeWith(`{"elicitation":{}}`)
	get := c.Open(http.MethodGet, "")
	call := c.Open(http.MethodPost, `{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"name?"}}}`)
	data, ok := call.Next()
	if !ok || !strings.Contains(data, `"method":"elicitation/create"`) || !strings.HasPrefix(data, `{"jsonrpc":"2.0","id":1,`) {
		t.Fatalf("first event %q", data)
	}
	if r := c.Post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"e","reason":"user"}}`); r.Status != http.StatusAccepted {
		t.Fatalf("cancel: %d", r.Status)
	}
	call.ExpectEnd()
	get.ExpectEvent(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"request cancelled by the client"}}`)
	// A late answer is accepted and ignored.
	if r := c.Post(`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"username":"x","email":"y"}}}`); r.Status != http.StatusAccepted {
		t.Fatalf("late answer: %d", r.Status)
	}
	c.Expect(`{"jsonrpc":"2.0","id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":5,"result":{}}`)
	if got := rec.Snapshot(); len(got) != 0 {
		t.Errorf("a cancelled call was reported: %v", got[0].Err)
	}
}

// TestHTTPJSONOnlyClientGetsNoRequests: a call whose client accepts JSON only cannot carry a
// request to the client; the handler learns it at once instead of waiting.
func TestHTTPJSONOnlyClientGetsNoRequests(t *testing.T) {
	t.Parallel()
	got := make(chan error, 1)
	ask := tools.Tool{Name: "ask", Description: "Asks the client's model.",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			_, err := client.CreateMessage(ctx, &protocol.CreateMessageParams{MaxTokens: 1})
			got <- err
			return tools.TextResult("asked"), nil
		})}
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{ask}})
	c := e.Session()
	c.InitializeWith(`{"sampling":{}}`)
	r := c.Post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`, "Accept", "application/json")
	if r.Status != http.StatusOK || r.Body != `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"asked"}]}}` {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	if err := <-got; !errors.Is(err, client.ErrNoStream) {
		t.Errorf("handler got %v, want ErrNoStream", err)
	}
}
