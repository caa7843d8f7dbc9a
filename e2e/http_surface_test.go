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
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// initializeWith opens an HTTP session declaring the given client capabilities.
func (c *httpSession) initializeWith(caps string) {
	c.e.t.Helper()
	r := c.post(strings.Replace(initRequest, `"capabilities":{}`, `"capabilities":`+caps, 1))
	if r.status != http.StatusOK || !strings.Contains(r.body, `"protocolVersion":"2025-11-25"`) {
		c.e.t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	c.id = r.header.Get("Mcp-Session-Id")
	c.version = "2025-11-25"
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		c.e.t.Fatalf("initialized: %d %s", r.status, r.body)
	}
}

// expectEvent asserts the next event of s.
func (s *stream) expectEvent(want string) {
	s.t.Helper()
	got, ok := s.next()
	if !ok {
		s.t.Fatalf("stream ended, want %s", want)
	}
	if got != want {
		s.t.Errorf("\n got event: %s\nwant event: %s", got, want)
	}
}

// expectEnd asserts that s ends without another event.
func (s *stream) expectEnd() {
	s.t.Helper()
	if got, ok := s.next(); ok {
		s.t.Errorf("unexpected event %s, want the end of the stream", got)
	}
}

// silent asserts that no event arrives on s during d.
func (s *stream) silent(d time.Duration) {
	s.t.Helper()
	select {
	case got, ok := <-s.events:
		if ok {
			s.t.Errorf("unexpected event %s", got)
		}
	case <-time.After(d):
	}
}

// TestHTTPNotificationsOnStandaloneStream: list changes and resource updates go on the
// session's GET stream, and only while one is open.
func TestHTTPNotificationsOnStandaloneStream(t *testing.T) {
	e := startHTTP(t, fixtureConfig())
	c := e.client()
	c.initialize()
	// No GET stream yet: the change is not announced (nor kept).
	if err := e.srv.AddTools(tools.Tool{Name: "early", Description: "x", Handler: logTool.Handler}); err != nil {
		t.Fatal(err)
	}
	// The connection actor handles the change before this ping.
	c.expect(`{"jsonrpc":"2.0","id":0,"method":"ping"}`, `{"jsonrpc":"2.0","id":0,"result":{}}`)
	get := c.open(http.MethodGet, "")
	if get.resp.StatusCode != http.StatusOK || get.events == nil {
		t.Fatalf("GET: %d %s", get.resp.StatusCode, get.resp.Header.Get("Content-Type"))
	}
	c.expect(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"test://watched-resource"}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	get.silent(100 * time.Millisecond)
	if n := e.srv.RemoveTools("early"); n != 1 {
		t.Fatalf("RemoveTools = %d", n)
	}
	get.expectEvent(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	e.srv.NotifyResourceUpdated("test://watched-resource")
	get.expectEvent(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://watched-resource"}}`)
	if err := e.srv.AddPrompts(conformance.Prompts()[0]); err == nil {
		t.Fatal("adding a served prompt again succeeded")
	}
	if n := e.srv.RemovePrompts("test_simple_prompt"); n != 1 {
		t.Fatal("RemovePrompts")
	}
	get.expectEvent(`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`)
}

// TestHTTPRequestScopedMessagesOnTheCallStream: the log messages, progress and requests to the
// client that a handler sends travel on the SSE stream of the POST that made the call, before
// its response; the client's answer comes back in a POST of its own.
func TestHTTPRequestScopedMessagesOnTheCallStream(t *testing.T) {
	e := startHTTP(t, fixtureConfig())
	c := e.client()
	c.initializeWith(`{"sampling":{},"elicitation":{}}`)
	get := c.open(http.MethodGet, "")
	c.expect(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`)

	call := c.open(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_logging","arguments":{}}}`)
	for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		call.expectEvent(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"test_tool_with_logging","data":"` + msg + `"}}`)
	}
	call.expectEvent(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Tool with logging executed successfully"}]}}`)
	call.expectEnd()

	call = c.open(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p"}}}`)
	for i, p := range []string{"0", "50", "100"} {
		call.expectEvent(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":` + p + `,"total":100,"message":"Completed step ` + string(rune('1'+i)) + ` of 3"}}`)
	}
	call.expectEvent(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Tool with progress executed successfully"}]}}`)

	call = c.open(http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"hello"}}}`)
	call.expectEvent(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hello"}}],"maxTokens":100}}`)
	if r := c.post(`{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"m"}}`); r.status != http.StatusAccepted {
		t.Fatalf("client response: %d %s", r.status, r.body)
	}
	call.expectEvent(`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"LLM response: hi there"}]}}`)
	call.expectEnd()
	get.silent(100 * time.Millisecond) // nothing of the calls leaked onto the standalone stream
}

// TestHTTPCancelWhileWaitingForElicitation: a call cancelled while its handler waits for an
// elicitation answer ends its stream with no response, and the server withdraws its request on
// the standalone stream.
func TestHTTPCancelWhileWaitingForElicitation(t *testing.T) {
	rec := newRecorder()
	cfg := fixtureConfig()
	cfg.OnError = rec.onError
	e := startHTTP(t, cfg)
	c := e.client()
	c.initializeWith(`{"elicitation":{}}`)
	get := c.open(http.MethodGet, "")
	call := c.open(http.MethodPost, `{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"name?"}}}`)
	data, ok := call.next()
	if !ok || !strings.Contains(data, `"method":"elicitation/create"`) || !strings.HasPrefix(data, `{"jsonrpc":"2.0","id":1,`) {
		t.Fatalf("first event %q", data)
	}
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"e","reason":"user"}}`); r.status != http.StatusAccepted {
		t.Fatalf("cancel: %d", r.status)
	}
	call.expectEnd()
	get.expectEvent(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"request cancelled by the client"}}`)
	// A late answer is accepted and ignored.
	if r := c.post(`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"username":"x","email":"y"}}}`); r.status != http.StatusAccepted {
		t.Fatalf("late answer: %d", r.status)
	}
	c.expect(`{"jsonrpc":"2.0","id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":5,"result":{}}`)
	if got := rec.snapshot(); len(got) != 0 {
		t.Errorf("a cancelled call was reported: %v", got[0].err)
	}
}

// TestHTTPJSONOnlyClientGetsNoRequests: a call whose client accepts JSON only cannot carry a
// request to the client; the handler learns it at once instead of waiting.
func TestHTTPJSONOnlyClientGetsNoRequests(t *testing.T) {
	got := make(chan error, 1)
	ask := tools.Tool{Name: "ask", Description: "Asks the client's model.",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			_, err := client.CreateMessage(ctx, &protocol.CreateMessageParams{MaxTokens: 1})
			got <- err
			return tools.TextResult("asked"), nil
		})}
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{ask}})
	c := e.client()
	c.initializeWith(`{"sampling":{}}`)
	r := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`, "Accept", "application/json")
	if r.status != http.StatusOK || r.body != `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"asked"}]}}` {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	if err := <-got; !errors.Is(err, client.ErrNoStream) {
		t.Errorf("handler got %v, want ErrNoStream", err)
	}
}
