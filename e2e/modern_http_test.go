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
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

// The modern era (MCP 2026-07-28) over Streamable HTTP: POST only, the envelope mirrored in
// headers, no session, and a request cancelled by closing its stream.

func TestModernHTTP(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
	c := e.Session()
	c.ExpectModern(modernCall("1", "echo", `{"text":"hi"}`, `{}`), 200, modernResult("1", `"content":[{"type":"text","text":"hi"}]`))
	c.ExpectModern(modernCall("2", "fail", `{"mode":"panic"}`, `{}`), 200,
		modernResult("2", `"content":[{"type":"text","text":"Tool execution failed"}],"isError":true`))
	c.ExpectModern(modernCall("3", "sleep", `{"ms":-1}`, `{}`), 200,
		modernResult("3", `"content":[{"type":"text","text":"invalid arguments: ms: must be >= 0"}],"isError":true`))
	// A session id a modern request carries is ignored, and none is made.
	c.ExpectModern(modernCall("4", "echo", `{"text":"x"}`, `{}`), 200, modernResult("4", `"content":[{"type":"text","text":"x"}]`),
		"Mcp-Session-Id", "NOSUCHSESSION")
	if n := e.srv.Sessions(); n != 0 {
		t.Errorf("%d sessions after modern requests", n)
	}
	if r := rec.Wait(t, 1); len(r) != 1 || r[0].Details.ToolName() != "fail" {
		t.Errorf("reports: %v", r)
	}
}

// TestModernHTTPChecks: the checks of a modern POST, in the order its clients meet them, each
// with its status, and each error echoing the request's id.
func TestModernHTTPChecks(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()
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
			c.For(t).ExpectModern(tt.body, tt.status, tt.want, tt.extra...)
		})
	}
	// Header names are case-insensitive.
	r := c.Post(modernRequest("11", "tools/list", ""), "mcp-protocol-version", "2026-07-28", "mcp-method", "tools/list")
	if r.Status != 200 || !strings.Contains(r.Body, `"resultType":"complete"`) {
		t.Errorf("lower-case header names: %d %s", r.Status, r.Body)
	}
	// A notification is accepted and ignored; a response is refused.
	if r := c.Post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"listen:1"}}`, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "notifications/cancelled"); r.Status != http.StatusAccepted {
		t.Errorf("notification: %d %s", r.Status, r.Body)
	}
	if r := c.Post(`{"jsonrpc":"2.0","id":12,"result":{}}`, "MCP-Protocol-Version", "2026-07-28"); r.Status != http.StatusBadRequest {
		t.Errorf("response: %d %s", r.Status, r.Body)
	}
	// GET and DELETE are legacy only: a modern client is told POST.
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		r := c.Do(m, "", "MCP-Protocol-Version", "2026-07-28")
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" {
			t.Errorf("%s: %d Allow %q %s", m, r.Status, r.Header.Get("Allow"), r.Body)
		}
	}
}

// TestModernHTTPStreams: notifications before the response make the answer an event stream,
// without event ids or a priming event: a modern stream is not resumable.
func TestModernHTTPStreams(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":250},"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	s := c.Open(http.MethodPost, body, mcptest.ModernHeaders(t, body)...)
	if s.Resp.StatusCode != 200 || !s.IsSSE() {
		t.Fatalf("answer: %d %s", s.Resp.StatusCode, s.Resp.Header.Get("Content-Type"))
	}
	var progress int
	for {
		data, ok := s.Next()
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
	if _, ok := s.Next(); ok {
		t.Error("the stream goes on after the result")
	}
	// A client that takes JSON only gets the result alone.
	r := c.ModernPost(body, "Accept", "application/json")
	if r.Status != 200 || r.Body != modernResult("1", `"content":[{"type":"text","text":"slept"}]`) {
		t.Errorf("JSON only: %d %s %v", r.Status, r.Body, r.Events)
	}
}

// TestModernHTTPStreamHasNoEventIDs reads the raw event stream: no id field, no priming event.
func TestModernHTTPStreamHasNoEventIDs(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":150},"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp, err := e.Client.Do(e.Session().Request(context.Background(), http.MethodPost, body, mcptest.ModernHeaders(t, body)...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for ev := range mcptest.ReadEvents(resp.Body) {
		if ev.ID != "" || ev.Retry != "" || ev.Data == "" {
			t.Errorf("event %+v: a modern stream has no ids, retry fields or priming events", ev)
		}
	}
}

// TestModernHTTPCancelByClosing: a client that closes its response stream cancels its request:
// the handler's context ends at once, nothing is reported, and the server serves on.
func TestModernHTTPCancelByClosing(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
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
	e := startHTTP(t, toolgrain.Config{Tools: append(demo.Tools(), wait), OnError: rec.OnError})
	c := e.Session()
	body := modernCall("1", "wait", `{}`, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := (&http.Client{}).Do(c.Request(ctx, http.MethodPost, body, mcptest.ModernHeaders(t, body)...))
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-started:
	case <-time.After(mcptest.Watchdog):
		t.Fatal("the handler did not start")
	}
	cancel()
	select {
	case cause := <-ended:
		if cause == nil || !strings.Contains(cause.Error(), "cancelled by the client") {
			t.Errorf("handler context ended with %v", cause)
		}
	case <-time.After(mcptest.Watchdog):
		t.Fatal("closing the stream did not cancel the handler")
	}
	<-done
	c.ExpectModern(modernCall("2", "echo", `{"text":"next"}`, `{}`), 200, modernResult("2", `"content":[{"type":"text","text":"next"}]`))
	time.Sleep(50 * time.Millisecond) // a report would have been queued by now
	if r := rec.Snapshot(); len(r) != 0 {
		t.Errorf("reports after a cancellation: %v", r)
	}
}

// TestModernHTTPInputRounds: an input_required round over HTTP, retried on a second POST.
func TestModernHTTPInputRounds(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: inputTools()})
	c := e.Session()
	r := c.ModernPost(modernCall("1", "keep", `{}`, `{"roots":{}}`))
	if r.Status != 200 {
		t.Fatalf("round 1: %d %s", r.Status, r.Body)
	}
	_, state := inputRequired(t, r.Body)
	c.ExpectModern(modernCall("2", "keep", `{}`, `{"roots":{}}`, `"inputResponses":{"roots":{"roots":[]}}`, `"requestState":"`+state+`"`), 200,
		modernResult("2", `"content":[{"type":"text","text":"made-once"}]`))
	c.ExpectModern(modernCall("3", "keep", `{}`, `{}`), 400,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"roots":{}}}}}`)
}

// TestModernHTTPListen: a listen stream over HTTP is acknowledged at once and carries the changes
// made anywhere on the server, while a legacy session runs beside it.
func TestModernHTTPListen(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()
	body := modernRequest(`"L"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)
	resp, err := (&http.Client{}).Do(c.Request(context.Background(), http.MethodPost, body, mcptest.ModernHeaders(t, body)...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := mcptest.ReadEvents(resp.Body)
	next := func() mcptest.Event {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the listen stream ended")
			}
			return ev
		case <-time.After(mcptest.Watchdog):
			t.Fatal("nothing on the listen stream")
		}
		return mcptest.Event{}
	}
	if ev := next(); ev.Data != `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":{"toolsListChanged":true}}}` {
		t.Fatalf("first event: %+v", ev)
	}
	legacy := e.Session()
	legacy.Initialize()
	e.srv.RemoveTools("greet")
	if ev := next(); ev.Data != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` {
		t.Errorf("change: %+v", ev)
	}
	if n := e.srv.Sessions(); n != 1 {
		t.Errorf("%d sessions: only the legacy client opens one", n)
	}
}

// TestModernHTTPKeepAlive: an open listen stream with nothing to say gets SSE comments.
func TestModernHTTPKeepAlive(t *testing.T) {
	t.Parallel()
	cfg := toolgrain.Config{Tools: demo.Tools()}
	cfg.HTTP.KeepAlive = 10 * time.Millisecond
	e := startHTTP(t, cfg)
	body := modernRequest("1", "subscriptions/listen", `"notifications":{"promptsListChanged":true}`)
	resp, err := e.Client.Do(e.Session().Request(context.Background(), http.MethodPost, body, mcptest.ModernHeaders(t, body)...))
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
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	legacy := e.Session()
	legacy.Initialize()
	modern := e.Session()
	legacy.Expect(call("1", "echo", `{"text":"legacy"}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"legacy"}]}}`)
	modern.ExpectModern(modernCall("1", "echo", `{"text":"modern"}`, `{}`), 200, modernResult("1", `"content":[{"type":"text","text":"modern"}]`))
	// A modern request sent with the legacy session's id is still modern.
	modern.ExpectModern(modernCall("2", "echo", `{"text":"m"}`, `{}`), 200, modernResult("2", `"content":[{"type":"text","text":"m"}]`),
		"Mcp-Session-Id", legacy.ID)
	legacy.Expect(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
}

// TestModernHTTPWeighsNothing: modern requests — answered, failed, cancelled by closing their
// stream, input_required, listen streams closed by their client — leave nothing behind: no
// session, no connection actor beyond the one stateless connection, no call in flight, no
// listener.
func TestModernHTTPWeighsNothing(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: append(demo.Tools(), inputTools()...)})
	c := e.Session()
	for i := range 50 {
		id := fmt.Sprint(i)
		c.ExpectModern(modernCall(id, "echo", `{"text":"x"}`, `{}`), 200, modernResult(id, `"content":[{"type":"text","text":"x"}]`))
		if r := c.ModernPost(modernCall(id, "fail", `{"mode":"error"}`, `{}`)); r.Status != 200 {
			t.Fatalf("fail: %d %s", r.Status, r.Body)
		}
		if r := c.ModernPost(modernCall(id, "keep", `{}`, `{"roots":{}}`)); r.Status != 200 || !strings.Contains(r.Body, "input_required") {
			t.Fatalf("keep: %d %s", r.Status, r.Body)
		}
	}
	listen := modernRequest(`"l"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)
	for range 20 {
		s := c.Open(http.MethodPost, listen, mcptest.ModernHeaders(t, listen)...)
		s.Next() // the acknowledgement
		s.Close()
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
			if resp, err := (&http.Client{}).Do(c.Request(ctx, http.MethodPost, sleep, mcptest.ModernHeaders(t, sleep)...)); err == nil {
				resp.Body.Close()
			}
		}()
	}
	mcptest.Eventually(t, "the 20 sleeps running", func() bool { return engineOccupancy(e.srv).Calls >= 20 })
	cancel()
	wg.Wait()
	e.Client.CloseIdleConnections()
	mcptest.Eventually(t, "the engine to hold nothing of the requests (one connection actor, no session)", func() bool {
		occ := engineOccupancy(e.srv)
		return occ.Calls == 0 && occ.Listeners == 0 && occ.Connections == 1 && e.srv.Sessions() == 0
	})
}
