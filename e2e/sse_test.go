package e2e_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

// The HTTP+SSE transport of MCP 2024-11-05, driven over loopback as its clients drive it: a GET
// opens the stream, whose first event names the POST URL; every POST is answered 202, and the
// answers come on the stream.

const initRequest2024 = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// sseClient is one client of the old transport: its open stream and the POST URL its endpoint
// event named.
type sseClient struct {
	t        testing.TB
	e        *httpEnv
	resp     *http.Response
	events   <-chan mcptest.Event
	endpoint string // the endpoint event's data, as sent
	post     string // that URL resolved against the stream's
	token    string
}

// openSSE GETs path with the header name/value pairs in extra and reads the endpoint event.
// Cleanup closes the stream.
func (e *httpEnv) openSSE(path string, extra ...string) *sseClient {
	e.T.Helper()
	c, resp := e.getSSE(path, extra...)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		e.T.Fatalf("GET %s: %d %s %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	ev := c.next()
	if ev.Event != "endpoint" {
		e.T.Fatalf("first event %+v, want the endpoint event", ev)
	}
	c.endpoint = ev.Data
	u, err := url.Parse(e.ts.URL + path)
	if err != nil {
		e.T.Fatal(err)
	}
	ref, err := u.Parse(ev.Data)
	if err != nil {
		e.T.Fatalf("endpoint %q: %v", ev.Data, err)
	}
	c.post = ref.String()
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i] == "Authorization" {
			c.token = strings.TrimPrefix(extra[i+1], "Bearer ")
		}
	}
	return c
}

// getSSE sends the GET and returns the client before anything is read.
func (e *httpEnv) getSSE(path string, extra ...string) (*sseClient, *http.Response) {
	e.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+path, nil)
	if err != nil {
		e.T.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		cancel()
		e.T.Fatalf("GET %s: %v", path, err)
	}
	e.T.Cleanup(func() { cancel(); resp.Body.Close() })
	c := &sseClient{t: e.T, e: e, resp: resp}
	if resp.StatusCode == http.StatusOK {
		c.events = mcptest.ReadEvents(resp.Body)
	}
	return c, resp
}

// next returns the next event of the stream (ok false at its end).
func (c *sseClient) next() mcptest.Event {
	c.t.Helper()
	select {
	case ev, ok := <-c.events:
		if !ok {
			c.t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(mcptest.Watchdog):
		c.t.Fatal("no event on the stream")
	}
	return mcptest.Event{}
}

// ended waits for the end of the stream, failing on any event before it.
func (c *sseClient) ended() {
	c.t.Helper()
	select {
	case ev, ok := <-c.events:
		if ok {
			c.t.Fatalf("event %+v, want the end of the stream", ev)
		}
	case <-time.After(mcptest.Watchdog):
		c.t.Fatal("the stream did not end")
	}
}

// send POSTs body to the endpoint URL (or to url when given) with extra headers.
func (c *sseClient) send(body string, extra ...string) mcptest.Reply {
	c.t.Helper()
	return c.sendTo(c.post, body, extra...)
}

func (c *sseClient) sendTo(u, body string, extra ...string) mcptest.Reply {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			req.Header.Del(extra[i])
			continue
		}
		req.Header.Set(extra[i], extra[i+1])
	}
	resp, err := c.e.Client.Do(req)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read body: %v", err)
	}
	return mcptest.Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// accepted POSTs body and asserts 202 with no body.
func (c *sseClient) accepted(body string) {
	c.t.Helper()
	if r := c.send(body); r.Status != http.StatusAccepted || r.Body != "" {
		c.t.Fatalf("POST %s: %d %q, want 202 and no body", body, r.Status, r.Body)
	}
}

// message returns the data of the next event, which must be a message event.
func (c *sseClient) message() string {
	c.t.Helper()
	ev := c.next()
	if ev.Event != "message" || ev.ID != "" {
		c.t.Fatalf("event %+v, want a message event without id", ev)
	}
	return ev.Data
}

// expect POSTs a request and asserts that exactly want is the next event.
func (c *sseClient) expect(body, want string) {
	c.t.Helper()
	c.accepted(body)
	if got := c.message(); got != want {
		c.t.Errorf("POST %s\n got: %s\nwant: %s", body, got, want)
	}
}

// initialize runs the handshake in MCP 2025-11-25 and checks its answer.
func (c *sseClient) initialize() {
	c.t.Helper()
	c.expect(mcptest.InitRequest, initResult)
	c.accepted(initializedNotif)
}

// TestSSEExchange asserts the exact exchange of the old transport: the endpoint event, 202 for
// every POST, and every answer (results, progress, the error model's) on the stream.
func TestSSEExchange(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.openSSE("/sse")
	if !strings.HasPrefix(c.endpoint, "/messages?sessionId=") {
		t.Fatalf("endpoint %q, want /messages?sessionId=...", c.endpoint)
	}
	sid := strings.TrimPrefix(c.endpoint, "/messages?sessionId=")
	if !sessionIDPattern.MatchString(sid) {
		t.Errorf("session id %q is not a long visible-ASCII id", sid)
	}
	if got := c.resp.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("Cache-Control %q", got)
	}
	if n := e.srv.Sessions(); n != 1 {
		t.Errorf("Sessions() = %d with the stream open, want 1", n)
	}

	c.initialize()
	c.expect(pingRequest, pingResult)
	c.expect(call("1", "echo", `{"text":"over sse"}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"over sse"}]}}`)
	// The error model: validation feedback, the generic failure, a JSON-RPC error.
	c.expect(call("2", "sleep", `{"ms":700000}`), `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"invalid arguments: ms: must be <= 600000"}],"isError":true}}`)
	c.expect(call("3", "fail", `{"mode":"error"}`), `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}}`)
	c.expect(call("4", "fail", `{"mode":"panic"}`), `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}}`)
	c.expect(call("5", "nope", `{}`), `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: unknown tool \"nope\""}}`)
	c.expect(`{"jsonrpc":"2.0","id":6,"method":"nope/nope"}`, `{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found: nope/nope"}}`)

	// Progress comes before the result, on the same stream.
	c.accepted(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":150},"_meta":{"progressToken":"tok"}}}`)
	progress := 0
	for {
		data := c.message()
		if strings.HasPrefix(data, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":`) {
			progress++
			continue
		}
		if want := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"slept"}]}}`; data != want {
			t.Fatalf("got %s, want progress or %s", data, want)
		}
		break
	}
	if progress == 0 {
		t.Error("no progress before the result")
	}

	// Notifications and responses get 202 too; a body that is not a JSON-RPC message, 400.
	c.accepted(`{"jsonrpc":"2.0","id":99,"result":{}}`)
	assertReply(t, "invalid JSON", c.send(`{"jsonrpc":`), http.StatusBadRequest,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset 11"}}`)
	assertReply(t, "text/plain", c.send(pingRequest, "Content-Type", "text/plain"), http.StatusUnsupportedMediaType,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unsupported Media Type: Content-Type must be application/json"}}`)
	c.expect(pingRequest, pingResult)
}

// TestSSEOnTheMCPEndpoint: a client falling back from Streamable HTTP GETs the URL it was given;
// the endpoint event names that URL, and a 2024-11-05 client works there.
func TestSSEOnTheMCPEndpoint(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.openSSE("/mcp")
	if !strings.HasPrefix(c.endpoint, "/mcp?sessionId=") {
		t.Fatalf("endpoint %q, want /mcp?sessionId=...", c.endpoint)
	}
	c.accepted(initRequest2024)
	if got := c.message(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":`) {
		t.Fatalf("initialize answered %s", got)
	}
	c.accepted(initializedNotif)
	c.expect(call("1", "echo", `{"text":"fallback"}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"fallback"}]}}`)

	// The two transports' sessions do not mix: a Streamable HTTP request naming the old
	// transport's session, and an old-transport POST naming a Streamable HTTP session, get 404.
	sid := strings.TrimPrefix(c.endpoint, "/mcp?sessionId=")
	streamable := e.Session()
	streamable.ID, streamable.Version = sid, "2025-11-25"
	assertReply(t, "Streamable HTTP POST on an old-transport session", streamable.Post(pingRequest), http.StatusNotFound, errUnknown)
	assertReply(t, "DELETE of an old-transport session", streamable.Do(http.MethodDelete, ""), http.StatusNotFound, errUnknown)
	other := e.Session()
	other.Initialize()
	assertReply(t, "old-transport POST on a Streamable HTTP session", c.sendTo(e.URL+"?sessionId="+url.QueryEscape(other.ID), pingRequest),
		http.StatusNotFound, errUnknown)
	c.expect(pingRequest, pingResult)
}

// TestSSEUnknownSession: a POST for a session the server does not have gets 404, one naming
// none 400; the Mcp-Session-Id header wins over the query.
func TestSSEUnknownSession(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := &sseClient{t: t, e: e}
	assertReply(t, "unknown session", c.sendTo(e.ts.URL+"/messages?sessionId=no-such-session", pingRequest), http.StatusNotFound, errUnknown)
	assertReply(t, "invalid session id", c.sendTo(e.ts.URL+"/messages?sessionId=%20", pingRequest), http.StatusNotFound, errUnknown)
	assertReply(t, "no session", c.sendTo(e.ts.URL+"/messages", pingRequest), http.StatusBadRequest,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: the sessionId query parameter is required"}}`)
	live := e.openSSE("/sse")
	assertReply(t, "Mcp-Session-Id of no session beside the query", live.send(pingRequest, "Mcp-Session-Id", "no-such-session"),
		http.StatusNotFound, errUnknown)
}

// slowTool blocks until its call is cancelled, and says so on cancelled.
func slowTool(started, cancelled chan<- struct{}) tools.Tool {
	return tools.Tool{Name: "block", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return tools.TextResult("too late"), nil
	})}
}

// TestSSECancellation: after notifications/cancelled nothing is sent for the call; the answer to
// the request POSTed after it comes, and the call's own never does.
func TestSSECancellation(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	e := startHTTP(t, toolgrain.Config{Tools: append(demo.Tools(), slowTool(started, cancelled)), OnError: rec.OnError})
	c := e.openSSE("/sse")
	c.initialize()

	c.accepted(`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":41}}}`)
	if got := c.message(); !strings.Contains(got, `"method":"notifications/progress"`) {
		t.Fatalf("got %s, want the first progress", got)
	}
	c.accepted(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	mcptest.Await(t, "the block call to start", started)
	c.accepted(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user gave up"}}`)
	c.accepted(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}`)
	mcptest.Await(t, "the block call's context to end", cancelled)
	// The session handles its messages in order: once the ping is answered, the cancelled calls
	// can no longer be. Progress of call 41 already on its way may come before.
	c.accepted(pingRequest)
	for {
		data := c.message()
		if data == pingResult {
			break
		}
		if !strings.Contains(data, `"method":"notifications/progress"`) || strings.Contains(data, `"id":4`) {
			t.Fatalf("after the cancellations: %s", data)
		}
	}
	c.expect(call("5", "echo", `{"text":"still here"}`), `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"still here"}]}}`)
	if got := rec.Snapshot(); len(got) != 0 {
		t.Errorf("a cancellation was reported: %v", got)
	}
}

// TestSSEStreamCloseEndsSession: the client closing its stream ends the session, cancels its
// call in flight (reporting nothing) and its id answers 404 from then on.
func TestSSEStreamCloseEndsSession(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{slowTool(started, cancelled)}, OnError: rec.OnError})
	c := e.openSSE("/sse")
	c.initialize()
	c.accepted(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	mcptest.Await(t, "the call to start", started)
	c.resp.Body.Close()
	mcptest.Await(t, "the call to be cancelled by the stream's close", cancelled)
	// The session is gone once its connection closed; the table lets it go with it.
	// No event announces the table's change: polled.
	mcptest.Eventually(t, "the session gone with its stream", func() bool { return e.srv.Sessions() == 0 })
	assertReply(t, "POST after the stream closed", c.send(pingRequest), http.StatusNotFound, errUnknown)
	if got := rec.Snapshot(); len(got) != 0 {
		t.Errorf("the cancelled call was reported: %v", got)
	}
}

// TestSSEShutdownEndsStreams: the server's shutdown ends the old transport's streams and refuses
// new ones.
func TestSSEShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.openSSE("/sse")
	c.initialize()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	c.ended()
	_, resp := e.getSSE("/sse")
	b, _ := io.ReadAll(resp.Body)
	assertReply(t, "GET during shutdown", mcptest.Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b)},
		http.StatusServiceUnavailable, errShuttingDown)
}

// TestSSEAuth: the bearer token is checked on the GET and on every POST, and a session answers
// only its own subject.
func TestSSEAuth(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	e := startHTTP(t, authConfig(rec, nil))
	// The stream's path is the resource of the GET and of the POSTs alike (TestSSEAudience).
	challenge := `Bearer resource_metadata="` + e.ts.URL + `/.well-known/oauth-protected-resource/sse", scope="tools:call"`
	unauthorized := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: authentication required"}}`

	_, resp := e.getSSE("/sse")
	b, _ := io.ReadAll(resp.Body)
	got := mcptest.Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
	assertReply(t, "GET without a token", got, http.StatusUnauthorized, unauthorized)
	if h := got.Header.Get("WWW-Authenticate"); h != challenge {
		t.Errorf("WWW-Authenticate\n got: %s\nwant: %s", h, challenge)
	}

	c := e.openSSE("/sse", "Authorization", "Bearer alice-token")
	c.initialize()
	c.expect(call("1", "whoami", `{}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"user-alice tools:call,extra"}]}}`)
	r := c.send(pingRequest, "Authorization", "")
	assertReply(t, "POST without a token", r, http.StatusUnauthorized, unauthorized)
	if h := r.Header.Get("WWW-Authenticate"); h != challenge {
		t.Errorf("POST: WWW-Authenticate\n got: %s\nwant: %s", h, challenge)
	}
	c.token = "bob-token"
	assertReply(t, "POST with another subject's token", c.send(pingRequest), http.StatusNotFound, errUnknown)
	c.token = "alice-token"
	c.expect(pingRequest, pingResult)
}

// TestSSELimits: the stream's session takes a place under the limits on sessions, and keeps
// it until its stream closes.
func TestSSELimits(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{MaxSessions: 1}})
	first := e.openSSE("/sse")
	_, resp := e.getSSE("/sse")
	b, _ := io.ReadAll(resp.Body)
	got := mcptest.Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
	assertReply(t, "GET over the limit", got, http.StatusServiceUnavailable,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-31000,"message":"Server busy: too many sessions open on the server (limit 1)","data":{"scope":"sessions","limit":1}}}`)
	if got.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	assertReply(t, "initialize over the limit", e.Session().Post(mcptest.InitRequest), http.StatusServiceUnavailable,
		`{"jsonrpc":"2.0","id":0,"error":{"code":-31000,"message":"Server busy: too many sessions open on the server (limit 1)","data":{"scope":"sessions","limit":1}}}`)
	first.resp.Body.Close()
	mcptest.Eventually(t, "the first session gone with its stream", func() bool { return e.srv.Sessions() == 0 }) // no event announces it
	e.openSSE("/sse").initialize()
}

// TestSSEKeepAlive: an idle stream gets SSE comments.
func TestSSEKeepAlive(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{KeepAlive: 20 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before a keep-alive comment: %v", err)
		}
		if strings.HasPrefix(line, ":") {
			break
		}
	}
}

// TestSSEOff: with the old transport off, the requests that would open or reach it get what
// they got before it existed.
func TestSSEOff(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{DisableSSE: true}})
	c := e.Session()
	assertReply(t, "GET without a session id", c.Do(http.MethodGet, "", "Accept", "text/event-stream"), http.StatusBadRequest, errNoSession)
	assertReply(t, "modern GET", c.Do(http.MethodGet, "", "Accept", "text/event-stream", "MCP-Protocol-Version", "2026-07-28"), http.StatusMethodNotAllowed,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Method Not Allowed: GET is not part of MCP 2026-07-28: every request is a POST"}}`)
	s := &sseClient{t: t, e: e}
	assertReply(t, "POST with a sessionId query", s.sendTo(e.URL+"?sessionId=abcdefghijklmnopqrstuvwxyz", pingRequest), http.StatusBadRequest, errNoSession)
	assertReply(t, "POST to /messages", s.sendTo(e.ts.URL+"/messages", pingRequest), http.StatusBadRequest, errNoSession)
}

// TestSSEModernGetStill405: a GET with the modern version header is not an old-transport GET.
func TestSSEModernGetStill405(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	r := e.Session().Do(http.MethodGet, "", "Accept", "text/event-stream", "MCP-Protocol-Version", "2026-07-28")
	if r.Status != http.StatusMethodNotAllowed {
		t.Errorf("modern GET: %d %s", r.Status, r.Body)
	}
}

// initializeAt runs the handshake at version and checks that it was negotiated.
func (c *sseClient) initializeAt(version string) {
	c.t.Helper()
	c.accepted(mcptest.InitializeAt(version, `{}`))
	if got := c.message(); !strings.Contains(got, `"protocolVersion":"`+version+`"`) {
		c.t.Fatalf("initialize at %s: %s", version, got)
	}
	c.accepted(initializedNotif)
}

// TestSSEBatch: a 2025-03-26 session of the old transport takes JSON-RPC batches in its POSTs
// as Streamable HTTP and stdio do: 202, and the array of the responses on the stream, after
// what the calls send first.
func TestSSEBatch(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.openSSE("/sse")
	c.initializeAt("2025-03-26")

	c.accepted(batch(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, call("2", "echo", `{"text":"a"}`)))
	if got := batchResponses(t, c.message()); !slices.Equal(got, []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a"}]}}`,
	}) {
		t.Errorf("batch answered %q", got)
	}
	// Notifications and responses alone: 202 and nothing on the stream.
	c.accepted(batch(initializedNotif, `{"jsonrpc":"2.0","id":99,"result":{}}`))
	// Progress goes out at once, the array last; an element that is not a message gets its
	// error in the array.
	c.accepted(batch(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":150},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`, `{"jsonrpc":"2.0","id":5}`))
	for {
		data := c.message()
		if strings.Contains(data, `"notifications/progress"`) {
			continue
		}
		if got := batchResponses(t, data); !slices.Equal(got, []string{
			`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"slept"}]}}`,
			`{"jsonrpc":"2.0","id":4,"result":{}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: message has no method, result or error"}}`,
		}) {
			t.Errorf("batch with progress answered %q", got)
		}
		break
	}
	// A cancelled element has no place in the array.
	c.accepted(batch(call("6", "sleep", `{"ms":600000}`), `{"jsonrpc":"2.0","id":7,"method":"ping"}`))
	c.accepted(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}`)
	if got := c.message(); got != `[{"jsonrpc":"2.0","id":7,"result":{}}]` {
		t.Errorf("batch with a cancelled element answered %s", got)
	}
	// Refused whole, as over Streamable HTTP: an empty batch, one over the limit.
	assertReply(t, "empty batch", c.send(`[]`), http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: empty batch"}}`)
	assertReply(t, "batch over the limit", c.send(tooLongBatch()), http.StatusBadRequest, tooLongAnswer)
	// The session goes on; the refusals sent nothing on the stream.
	c.expect(pingRequest, pingResult)
}

// TestSSEBatchRefused: anywhere but a 2025-03-26 session a batch is refused whole, with 400 and
// -32600, as Streamable HTTP refuses it; nothing of it runs or reaches the stream.
func TestSSEBatchRefused(t *testing.T) {
	t.Parallel()
	const refused = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batches are not supported"}}`
	for _, version := range []string{"", "2024-11-05", "2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
			c := e.openSSE("/sse")
			if version != "" {
				c.initializeAt(version)
			}
			assertReply(t, "batch", c.send(batch(call("1", "echo", `{"text":"x"}`))), http.StatusBadRequest, refused)
			assertReply(t, "empty batch", c.send(`[]`), http.StatusBadRequest, refused)
			if version != "" {
				c.expect(pingRequest, pingResult)
			}
		})
	}
	t.Run("modern header", func(t *testing.T) {
		e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
		c := e.openSSE("/sse")
		c.initializeAt("2025-03-26")
		assertReply(t, "batch", c.send(batch(pingRequest), "MCP-Protocol-Version", "2026-07-28"), http.StatusBadRequest, refused)
		c.expect(pingRequest, pingResult)
	})
	t.Run("unknown session", func(t *testing.T) {
		e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
		c := &sseClient{t: t, e: e}
		assertReply(t, "batch", c.sendTo(e.ts.URL+"/messages?sessionId=no-such-session", batch(pingRequest)), http.StatusBadRequest, refused)
	})
}
