package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// The modern era (MCP 2026-07-28) over Streamable HTTP: POST only, the envelope mirrored in
// headers, no session, and a request cancelled by closing its stream.

// modernHeaders returns the headers a modern client sends with body: MCP-Protocol-Version,
// Mcp-Method and, for the methods that name a target, Mcp-Name.
func modernHeaders(t testing.TB, body string) []string {
	t.Helper()
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("test request %s: %v", body, err)
	}
	h := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", m.Method}
	switch m.Method {
	case "tools/call", "prompts/get":
		h = append(h, "Mcp-Name", protocol.EncodeHeaderValue(m.Params.Name))
	case "resources/read":
		h = append(h, "Mcp-Name", protocol.EncodeHeaderValue(m.Params.URI))
	}
	return h
}

// modernPost POSTs a modern request with its headers, then extra ones (which may override or,
// empty, remove them).
func (c *httpSession) modernPost(body string, extra ...string) reply {
	c.e.t.Helper()
	return c.post(body, append(modernHeaders(c.e.t, body), extra...)...)
}

// expectModern POSTs a modern request and asserts its exact JSON answer and status.
func (c *httpSession) expectModern(body string, status int, want string, extra ...string) {
	c.e.t.Helper()
	r := c.modernPost(body, extra...)
	if r.status != status || r.header.Get("Content-Type") != "application/json" || r.body != want {
		c.e.t.Errorf("POST %s\n got: %d %s %s%v\nwant: %d %s", body, r.status, r.header.Get("Content-Type"), r.body, r.events, status, want)
	}
	if r.header.Get("Mcp-Session-Id") != "" {
		c.e.t.Errorf("a modern answer carries a session id: %s", r.header.Get("Mcp-Session-Id"))
	}
}

func TestModernHTTP(t *testing.T) {
	rec := newRecorder()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.onError})
	c := e.client()
	c.expectModern(modernCall("1", "echo", `{"text":"hi"}`, `{}`), 200, modernResult("1", `"content":[{"type":"text","text":"hi"}]`))
	c.expectModern(modernCall("2", "fail", `{"mode":"panic"}`, `{}`), 200,
		modernResult("2", `"content":[{"type":"text","text":"Tool execution failed"}],"isError":true`))
	c.expectModern(modernCall("3", "sleep", `{"ms":-1}`, `{}`), 200,
		modernResult("3", `"content":[{"type":"text","text":"invalid arguments: ms: must be >= 0"}],"isError":true`))
	// A session id a modern request carries is ignored, and none is made.
	c.expectModern(modernCall("4", "echo", `{"text":"x"}`, `{}`), 200, modernResult("4", `"content":[{"type":"text","text":"x"}]`),
		"Mcp-Session-Id", "NOSUCHSESSION")
	if n := e.srv.Sessions(); n != 0 {
		t.Errorf("%d sessions after modern requests", n)
	}
	if r := rec.wait(t, 1); len(r) != 1 || r[0].details.ToolName() != "fail" {
		t.Errorf("reports: %v", r)
	}
}

// TestModernHTTPChecks: the checks of a modern POST, in the order its clients meet them, each
// with its status, and each error echoing the request's id.
func TestModernHTTPChecks(t *testing.T) {
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.client()
	echo := modernCall("7", "echo", `{"text":"é"}`, `{}`)
	tests := []struct {
		name   string
		body   string
		extra  []string
		status int
		want   string
	}{
		{"missing _meta", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, nil, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: params._meta must be an object with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"}}`},
		{"header but no version in _meta", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, nil, 400,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: params._meta.io.modelcontextprotocol/protocolVersion must be a non-empty string"}}`},
		{"no version header", modernRequest("3", "tools/list", ""), []string{"MCP-Protocol-Version", ""}, 400,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32020,"message":"Header mismatch: the MCP-Protocol-Version header is required"}}`},
		{"body version other than the header's", strings.Replace(modernRequest("4", "tools/list", ""), "2026-07-28", "v999.0.0", 1), nil, 400,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32020,"message":"Header mismatch: MCP-Protocol-Version header value '2026-07-28' does not match body value 'v999.0.0'"}}`},
		{"unsupported version", strings.Replace(modernRequest("5", "tools/list", ""), "2026-07-28", "v999.0.0", 1), []string{"MCP-Protocol-Version", "v999.0.0"}, 400,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32022,"message":"Unsupported protocol version: v999.0.0","data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"v999.0.0"}}}`},
		{"no Mcp-Method", modernRequest("6", "tools/list", ""), []string{"Mcp-Method", ""}, 400,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Method header is required"}}`},
		{"Mcp-Method in another case", modernRequest("6", "tools/list", ""), []string{"Mcp-Method", "TOOLS/LIST"}, 400,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32020,"message":"Header mismatch: Mcp-Method header value 'TOOLS/LIST' does not match body value 'tools/list'"}}`},
		{"no Mcp-Name", echo, []string{"Mcp-Name", ""}, 400,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header is required for tools/call"}}`},
		{"Mcp-Name of another tool", echo, []string{"Mcp-Name", "greet"}, 400,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: Mcp-Name header value 'greet' does not match body value 'echo'"}}`},
		{"Mcp-Name in Base64, with white space", echo, []string{"Mcp-Name", "  =?base64?ZWNobw==?= "}, 200,
			modernResult("7", `"content":[{"type":"text","text":"é"}]`)},
		{"Mcp-Name malformed", echo, []string{"Mcp-Name", "=?base64?!!?="}, 400,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: Mcp-Name: malformed Base64 header value"}}`},
		{"removed method", modernRequest("8", "ping", ""), nil, 404,
			`{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found: ping"}}`},
		{"initialize", modernRequest("9", "initialize", ""), nil, 404,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found: initialize"}}`},
		{"unknown tool", modernCall("10", "nope", `{}`, `{}`), nil, 400,
			`{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"Invalid params: unknown tool \"nope\""}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.e.t = t
			c.expectModern(tt.body, tt.status, tt.want, tt.extra...)
		})
	}
	c.e.t = t
	// Header names are case-insensitive.
	r := c.post(modernRequest("11", "tools/list", ""), "mcp-protocol-version", "2026-07-28", "mcp-method", "tools/list")
	if r.status != 200 || !strings.Contains(r.body, `"resultType":"complete"`) {
		t.Errorf("lower-case header names: %d %s", r.status, r.body)
	}
	// A notification is accepted and ignored; a response is refused.
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"listen:1"}}`, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "notifications/cancelled"); r.status != http.StatusAccepted {
		t.Errorf("notification: %d %s", r.status, r.body)
	}
	if r := c.post(`{"jsonrpc":"2.0","id":12,"result":{}}`, "MCP-Protocol-Version", "2026-07-28"); r.status != http.StatusBadRequest {
		t.Errorf("response: %d %s", r.status, r.body)
	}
	// GET and DELETE are legacy only: a modern client is told POST.
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		r := c.do(m, "", "MCP-Protocol-Version", "2026-07-28")
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
			t.Errorf("%s: %d Allow %q %s", m, r.status, r.header.Get("Allow"), r.body)
		}
	}
}

// TestModernHTTPStreams: notifications before the response make the answer an event stream,
// without event ids or a priming event: a modern stream is not resumable.
func TestModernHTTPStreams(t *testing.T) {
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.client()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":250},"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	s := c.open(http.MethodPost, body, modernHeaders(t, body)...)
	if s.resp.StatusCode != 200 || s.events == nil {
		t.Fatalf("answer: %d %s", s.resp.StatusCode, s.resp.Header.Get("Content-Type"))
	}
	var progress int
	for {
		data, ok := s.next()
		if !ok {
			t.Fatal("stream ended before the result")
		}
		if strings.Contains(data, `"notifications/progress"`) {
			progress++
			continue
		}
		if data != modernResult("1", `"content":[{"type":"text","text":"slept"}]`) {
			t.Errorf("result: %s", data)
		}
		break
	}
	if progress == 0 {
		t.Error("no progress")
	}
	if _, ok := s.next(); ok {
		t.Error("the stream goes on after the result")
	}
	// A client that takes JSON only gets the result alone.
	r := c.modernPost(body, "Accept", "application/json")
	if r.status != 200 || r.body != modernResult("1", `"content":[{"type":"text","text":"slept"}]`) {
		t.Errorf("JSON only: %d %s %v", r.status, r.body, r.events)
	}
}

// TestModernHTTPStreamHasNoEventIDs reads the raw event stream: no id field, no priming event.
func TestModernHTTPStreamHasNoEventIDs(t *testing.T) {
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":150},"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp, err := e.hc.Do(e.client().request(context.Background(), http.MethodPost, body, modernHeaders(t, body)...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for ev := range readSSE(resp.Body) {
		if ev.id != "" || ev.retry != "" || ev.data == "" {
			t.Errorf("event %+v: a modern stream has no ids, retry fields or priming events", ev)
		}
	}
}

// TestModernHTTPCancelByClosing: a client that closes its response stream cancels its request:
// the handler's context ends at once, nothing is reported, and the server serves on.
func TestModernHTTPCancelByClosing(t *testing.T) {
	rec := newRecorder()
	started, ended := make(chan struct{}), make(chan error, 1)
	wait := tools.Tool{
		Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			close(started)
			<-ctx.Done()
			ended <- context.Cause(ctx)
			return nil, errCanary // an error after the cancellation: never reported
		}),
	}
	e := startHTTP(t, toolgrain.Config{Tools: append(demo.Tools(), wait), OnError: rec.onError})
	c := e.client()
	body := modernCall("1", "wait", `{}`, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := (&http.Client{}).Do(c.request(ctx, http.MethodPost, body, modernHeaders(t, body)...))
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-started:
	case <-time.After(watchdog):
		t.Fatal("the handler did not start")
	}
	cancel()
	select {
	case cause := <-ended:
		if cause == nil || !strings.Contains(cause.Error(), "cancelled by the client") {
			t.Errorf("handler context ended with %v", cause)
		}
	case <-time.After(watchdog):
		t.Fatal("closing the stream did not cancel the handler")
	}
	<-done
	c.expectModern(modernCall("2", "echo", `{"text":"next"}`, `{}`), 200, modernResult("2", `"content":[{"type":"text","text":"next"}]`))
	time.Sleep(50 * time.Millisecond) // a report would have been queued by now
	if r := rec.snapshot(); len(r) != 0 {
		t.Errorf("reports after a cancellation: %v", r)
	}
}

// TestModernHTTPInputRounds: an input_required round over HTTP, retried on a second POST.
func TestModernHTTPInputRounds(t *testing.T) {
	e := startHTTP(t, toolgrain.Config{Tools: inputTools()})
	c := e.client()
	r := c.modernPost(modernCall("1", "keep", `{}`, `{"roots":{}}`))
	if r.status != 200 {
		t.Fatalf("round 1: %d %s", r.status, r.body)
	}
	_, state := inputRequired(t, r.body)
	c.expectModern(modernCall("2", "keep", `{}`, `{"roots":{}}`, `"inputResponses":{"roots":{"roots":[]}}`, `"requestState":"`+state+`"`), 200,
		modernResult("2", `"content":[{"type":"text","text":"made-once"}]`))
	c.expectModern(modernCall("3", "keep", `{}`, `{}`), 400,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"roots":{}}}}}`)
}

// TestModernHTTPListen: a listen stream over HTTP is acknowledged at once and carries the changes
// made anywhere on the server, while a legacy session runs beside it.
func TestModernHTTPListen(t *testing.T) {
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.client()
	body := modernRequest(`"L"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)
	resp, err := (&http.Client{}).Do(c.request(context.Background(), http.MethodPost, body, modernHeaders(t, body)...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readSSE(resp.Body)
	next := func() sseEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the listen stream ended")
			}
			return ev
		case <-time.After(watchdog):
			t.Fatal("nothing on the listen stream")
		}
		return sseEvent{}
	}
	if ev := next(); ev.data != `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":{"toolsListChanged":true}}}` {
		t.Fatalf("first event: %+v", ev)
	}
	legacy := e.client()
	legacy.initialize()
	e.srv.RemoveTools("greet")
	if ev := next(); ev.data != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` {
		t.Errorf("change: %+v", ev)
	}
	if n := e.srv.Sessions(); n != 1 {
		t.Errorf("%d sessions: only the legacy client opens one", n)
	}
}

// TestModernHTTPKeepAlive: an open listen stream with nothing to say gets SSE comments.
func TestModernHTTPKeepAlive(t *testing.T) {
	cfg := toolgrain.Config{Tools: demo.Tools()}
	cfg.HTTP.KeepAlive = 10 * time.Millisecond
	e := startHTTP(t, cfg)
	body := modernRequest("1", "subscriptions/listen", `"notifications":{"promptsListChanged":true}`)
	resp, err := e.hc.Do(e.client().request(context.Background(), http.MethodPost, body, modernHeaders(t, body)...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for comments := 0; comments < 3; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d comments: %v", comments, err)
		}
		if line == ": keep-alive\n" {
			comments++
		}
	}
}

// TestDualEraHTTP: a legacy session and modern requests at once on one endpoint.
func TestDualEraHTTP(t *testing.T) {
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	legacy := e.client()
	legacy.initialize()
	modern := e.client()
	legacy.expect(call("1", "echo", `{"text":"legacy"}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"legacy"}]}}`)
	modern.expectModern(modernCall("1", "echo", `{"text":"modern"}`, `{}`), 200, modernResult("1", `"content":[{"type":"text","text":"modern"}]`))
	// A modern request sent with the legacy session's id is still modern.
	modern.expectModern(modernCall("2", "echo", `{"text":"m"}`, `{}`), 200, modernResult("2", `"content":[{"type":"text","text":"m"}]`),
		"Mcp-Session-Id", legacy.id)
	legacy.expect(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
}

// TestModernHTTPWeighsNothing: modern requests — answered, failed, cancelled by closing their
// stream, input_required, listen streams closed by their client — leave nothing behind: no
// session, no connection actor beyond the one stateless connection, no call in flight, no
// listener.
func TestModernHTTPWeighsNothing(t *testing.T) {
	e := startHTTP(t, toolgrain.Config{Tools: append(demo.Tools(), inputTools()...)})
	c := e.client()
	for i := range 50 {
		id := fmt.Sprint(i)
		c.expectModern(modernCall(id, "echo", `{"text":"x"}`, `{}`), 200, modernResult(id, `"content":[{"type":"text","text":"x"}]`))
		if r := c.modernPost(modernCall(id, "fail", `{"mode":"error"}`, `{}`)); r.status != 200 {
			t.Fatalf("fail: %d %s", r.status, r.body)
		}
		if r := c.modernPost(modernCall(id, "keep", `{}`, `{"roots":{}}`)); r.status != 200 || !strings.Contains(r.body, "input_required") {
			t.Fatalf("keep: %d %s", r.status, r.body)
		}
	}
	listen := modernRequest(`"l"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)
	for range 20 {
		s := c.open(http.MethodPost, listen, modernHeaders(t, listen)...)
		s.next() // the acknowledgement
		s.cancel()
		s.resp.Body.Close()
	}
	// Sleeps send nothing before their answer, so their clients leave while still waiting for
	// the response's headers.
	ctx, cancel := context.WithCancel(context.Background())
	sleep := modernCall(`"s"`, "sleep", `{"ms":600000}`, `{}`)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := (&http.Client{}).Do(c.request(ctx, http.MethodPost, sleep, modernHeaders(t, sleep)...)); err == nil {
				resp.Body.Close()
			}
		}()
	}
	deadline := time.Now().Add(watchdog)
	for engineOccupancy(e.srv).Calls < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the sleeps did not start: %+v", engineOccupancy(e.srv))
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	e.hc.CloseIdleConnections()
	for {
		occ := engineOccupancy(e.srv)
		if occ.Calls == 0 && occ.Listeners == 0 && occ.Connections == 1 && e.srv.Sessions() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the requests ended the engine holds %+v and %d sessions", occ, e.srv.Sessions())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
