package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

const (
	initResult       = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolgrain","version":"` + toolgrain.Version + `"}}}`
	errNoSession     = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Mcp-Session-Id header is required"}}`
	errUnknown       = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Found: session not found"}}`
	errShuttingDown  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: server shutting down"}}`
	pingRequest      = `{"jsonrpc":"2.0","id":"p","method":"ping"}`
	pingResult       = `{"jsonrpc":"2.0","id":"p","result":{}}`
	initializedNotif = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// sessionIDPattern: visible ASCII, and long enough to be unguessable.
var sessionIDPattern = regexp.MustCompile(`^[\x21-\x7E]{22,}$`)

func assertReply(t *testing.T, what string, got mcptest.Reply, status int, body string) {
	t.Helper()
	if got.Status != status || got.Body != body {
		t.Errorf("%s\n got: %d %s%v\nwant: %d %s", what, got.Status, got.Body, got.Events, status, body)
	}
	if body != "" && got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s: Content-Type %q", what, got.Header.Get("Content-Type"))
	}
}

func TestHTTPSessionLifecycle(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()

	r := c.Post(mcptest.InitRequest)
	assertReply(t, "initialize", r, http.StatusOK, initResult)
	c.ID = r.Header.Get("Mcp-Session-Id")
	if !sessionIDPattern.MatchString(c.ID) {
		t.Fatalf("Mcp-Session-Id %q is not a long visible-ASCII id", c.ID)
	}
	if other := e.Session().Post(mcptest.InitRequest).Header.Get("Mcp-Session-Id"); other == c.ID || other == "" {
		t.Errorf("second session id %q (first %q)", other, c.ID)
	}
	assertReply(t, "initialized", c.Post(initializedNotif), http.StatusAccepted, "")
	c.Version = "2025-11-25"
	c.Expect(pingRequest, pingResult)
	c.Expect(call("1", "echo", `{"text":"over http"}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"over http"}]}}`)
	if n := e.srv.Sessions(); n != 2 {
		t.Errorf("Sessions() = %d, want 2", n)
	}

	noID := e.Session()
	assertReply(t, "request without a session id", noID.Post(pingRequest), http.StatusBadRequest, errNoSession)
	assertReply(t, "notification without a session id", noID.Post(initializedNotif), http.StatusBadRequest, errNoSession)
	// A GET without a session id opens a stream of the HTTP+SSE transport (sse_test.go), or
	// gets 400 with that transport off (TestSSEOff).
	assertReply(t, "DELETE without a session id", noID.Do(http.MethodDelete, ""), http.StatusBadRequest, errNoSession)
	unknown := e.Session()
	unknown.ID = "no-such-session"
	assertReply(t, "unknown session", unknown.Post(pingRequest), http.StatusNotFound, errUnknown)

	assertReply(t, "DELETE", c.Do(http.MethodDelete, ""), http.StatusNoContent, "")
	assertReply(t, "request after DELETE", c.Post(pingRequest), http.StatusNotFound, errUnknown)
	assertReply(t, "notification after DELETE", c.Post(initializedNotif), http.StatusNotFound, errUnknown)
	assertReply(t, "DELETE after DELETE", c.Do(http.MethodDelete, ""), http.StatusNotFound, errUnknown)
	if n := e.srv.Sessions(); n != 1 {
		t.Errorf("Sessions() = %d after DELETE, want 1", n)
	}

	// An initialize sent on a live session is answered there, with the JSON-RPC error.
	c2 := e.Session()
	c2.Initialize()
	c2.Expect(mcptest.InitRequest, `{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"Invalid Request: already initialized"}}`)

	// A failed initialize opens no session.
	r = e.Session().Post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	assertReply(t, "bad initialize", r, http.StatusOK, `{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Invalid params: initialize needs protocolVersion, capabilities and clientInfo"}}`)
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		t.Errorf("failed initialize got session %q", id)
	}

	assertReply(t, "PUT", c2.Do(http.MethodPut, "{}"), http.StatusMethodNotAllowed,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Method Not Allowed: PUT"}}`)
}

func TestHTTPNotificationsAndResponsesGet202(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()
	c.Initialize()
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":-1,"message":"no"}}`,
	} {
		r := c.Post(body)
		assertReply(t, body, r, http.StatusAccepted, "")
		if ct := r.Header.Get("Content-Type"); ct != "" {
			t.Errorf("%s: 202 with Content-Type %q", body, ct)
		}
	}
	c.Expect(pingRequest, pingResult)
}

func TestHTTPMalformedBodies(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()
	c.Initialize()
	tests := []struct {
		name   string
		give   string
		status int
		want   string
	}{
		{"invalid JSON", `{"jsonrpc":"2.0",`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset 17"}}`},
		{"empty body", ``, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: empty message"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batches are not supported"}}`},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, 400, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"nope/nope"}`, 200, `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: nope/nope"}}`},
		{"unknown tool", call("5", "nope", `{}`), 200, `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: unknown tool \"nope\""}}`},
		{"invalid arguments", call("6", "sleep", `{"ms":700000}`), 200, `{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"invalid arguments: ms: must be <= 600000"}],"isError":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertReply(t, tt.give, c.Post(tt.give), tt.status, tt.want)
		})
	}
	assertReply(t, "text/plain body", c.Post(pingRequest, "Content-Type", "text/plain"), http.StatusUnsupportedMediaType,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unsupported Media Type: Content-Type must be application/json"}}`)
	assertReply(t, "Accept: image/png", c.Post(pingRequest, "Accept", "image/png"), http.StatusNotAcceptable,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Acceptable: Accept must list application/json and text/event-stream"}}`)
}

func TestHTTPJSONOrSSE(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()
	c.Initialize()

	// No progress token: nothing precedes the result, which comes as one JSON body.
	c.Expect(call("1", "sleep", `{"ms":150}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept"}]}}`)

	// With a progress token the call emits before its result: the answer becomes an SSE stream
	// with the progress first and the result last, and the stream ends after it.
	progressCall := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":350},"_meta":{"progressToken":"tok"}}}`
	r := c.Post(progressCall)
	if r.Status != http.StatusOK || !r.IsSSE() {
		t.Fatalf("progress call: %d %q %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	if len(r.Events) < 2 {
		t.Fatalf("events = %q, want progress then the result", r.Events)
	}
	for _, ev := range r.Events[:len(r.Events)-1] {
		if !strings.HasPrefix(ev, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":`) {
			t.Errorf("event before the result is not progress: %s", ev)
		}
	}
	if got, want := r.Events[len(r.Events)-1], `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"slept"}]}}`; got != want {
		t.Errorf("last event = %s, want %s", got, want)
	}

	// A client that accepts SSE only gets SSE, even for a lone result.
	r = c.Post(call("4", "echo", `{"text":"sse"}`), "Accept", "text/event-stream")
	if !r.IsSSE() || len(r.Events) != 1 || r.Events[0] != `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"sse"}]}}` {
		t.Errorf("SSE-only client: %d %q events %q body %q", r.Status, r.Header.Get("Content-Type"), r.Events, r.Body)
	}

	// A client that accepts JSON only gets the result alone.
	r = c.Post(strings.Replace(progressCall, `"id":2`, `"id":3`, 1), "Accept", "application/json")
	assertReply(t, "JSON-only client", r, http.StatusOK, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"slept"}]}}`)
}

// TestHTTPCancellationAcrossPOSTs: notifications/cancelled in one POST silences a call running
// in another POST of the same session; that call's stream ends with no response, and nothing is
// reported.
func TestHTTPCancellationAcrossPOSTs(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
	c := e.Session()
	c.Initialize()
	s := c.Open(http.MethodPost, `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":41}}}`)
	if first, ok := s.Next(); !ok || !strings.Contains(first, "notifications/progress") {
		t.Fatalf("first event %q (ok %v), want progress: the call is running", first, ok)
	}
	assertReply(t, "cancel", c.Post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user"}}`), http.StatusAccepted, "")
	for {
		ev, ok := s.Next()
		if !ok {
			break // the stream ended
		}
		if !strings.Contains(ev, "notifications/progress") {
			t.Fatalf("cancelled call sent %s", ev)
		}
	}
	c.Expect(pingRequest, pingResult)
	if got := rec.Snapshot(); len(got) != 0 {
		t.Errorf("a cancelled call was reported: %v", got[0].Err)
	}

	// A call cancelled before it emitted anything ends as an empty event stream.
	started := make(chan struct{})
	block := tools.Tool{Name: "block", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		close(started)
		<-ctx.Done()
		return tools.TextResult("late"), nil
	})}
	e2 := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{block}})
	c2 := e2.Session()
	c2.Initialize()
	done := make(chan mcptest.Reply, 1)
	go func() { done <- c2.Post(call(`"b"`, "block", `{}`)) }()
	<-started
	assertReply(t, "cancel", c2.Post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}`), http.StatusAccepted, "")
	select {
	case r := <-done:
		if r.Status != http.StatusOK || !r.IsSSE() || len(r.Events) != 0 || r.Body != "" {
			t.Errorf("cancelled call answered %d %q events %q body %q, want an empty event stream", r.Status, r.Header.Get("Content-Type"), r.Events, r.Body)
		}
	case <-time.After(mcptest.Watchdog):
		t.Fatal("the cancelled call's POST did not end")
	}
}

// TestHTTPDisconnectIsNotCancellation: a client that drops its POST does not cancel the call
// (2025-11-25); the handler runs to its end with a live context.
func TestHTTPDisconnectIsNotCancellation(t *testing.T) {
	t.Parallel()
	started, release, finished := make(chan struct{}, 2), make(chan struct{}), make(chan error, 2)
	hold := tools.Tool{Name: "hold", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		started <- struct{}{}
		select {
		case <-release:
			finished <- nil
		case <-ctx.Done():
			finished <- context.Cause(ctx)
		}
		return tools.TextResult("done"), nil
	})}
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{hold}})
	c := e.Session()
	c.Initialize()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(c.Request(ctx, http.MethodPost, call("1", "hold", `{}`)))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-started
	cancel() // the client goes away
	if err := <-errc; err == nil {
		t.Fatal("the POST was answered before the handler finished")
	}
	c.Expect(pingRequest, pingResult) // the connection goes on
	close(release)
	if err := <-finished; err != nil {
		t.Errorf("the disconnect cancelled the handler: %v", err)
	}
	c.Expect(call("2", "hold", `{}`), `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"done"}]}}`)
}

func TestHTTPProtocolVersionHeader(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()
	c.Initialize()
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", ""} {
		c.Version = v
		c.Expect(pingRequest, pingResult)
	}
	for _, v := range []string{"2024-10-07", "2099-01-01", "latest"} {
		c.Version = v
		assertReply(t, "version "+v, c.Post(pingRequest), http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: unsupported MCP-Protocol-Version \"`+v+`\" (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)"}}`)
		assertReply(t, "DELETE with version "+v, c.Do(http.MethodDelete, ""), http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: unsupported MCP-Protocol-Version \"`+v+`\" (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)"}}`)
	}
	// initialize itself is not checked: the version is negotiated in its body.
	assertReply(t, "initialize with an old header", e.Session().Post(mcptest.InitRequest, "MCP-Protocol-Version", "2024-10-07"), http.StatusOK, initResult)
}

func TestHTTPOriginAndHost(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{
		AllowedOrigins: []string{"https://app.example.com"},
		AllowedHosts:   []string{"mcp.example.com"},
	}})
	hostPort := strings.TrimPrefix(e.ts.URL, "http://")
	_, port, _ := strings.Cut(hostPort, ":")
	forbiddenOrigin := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: origin not allowed"}}`
	forbiddenHost := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: host not allowed"}}`
	tests := []struct {
		name   string
		extra  []string
		status int
		want   string
	}{
		{"foreign origin", []string{"Origin", "http://evil.example.com"}, 403, forbiddenOrigin},
		{"null origin", []string{"Origin", "null"}, 403, forbiddenOrigin},
		{"DNS rebinding", []string{"Host", "evil.example.com:" + port, "Origin", "http://evil.example.com:" + port}, 403, forbiddenHost},
		{"foreign host without origin", []string{"Host", "evil.example.com"}, 403, forbiddenHost},
		{"same origin", []string{"Origin", "http://" + hostPort}, 200, initResult},
		{"allowed origin", []string{"Origin", "https://app.example.com"}, 200, initResult},
		{"localhost", []string{"Host", "localhost:" + port, "Origin", "http://localhost:" + port}, 200, initResult},
		{"IPv6 loopback", []string{"Host", "[::1]:" + port}, 200, initResult},
		{"allowed host", []string{"Host", "mcp.example.com"}, 200, initResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertReply(t, tt.name, e.Session().Post(mcptest.InitRequest, tt.extra...), tt.status, tt.want)
		})
	}
	c := e.Session()
	c.Initialize()
	assertReply(t, "foreign origin on a session", c.Post(pingRequest, "Origin", "http://evil.example.com"), 403, forbiddenOrigin)
	assertReply(t, "foreign origin on DELETE", c.Do(http.MethodDelete, "", "Origin", "http://evil.example.com"), 403, forbiddenOrigin)
	c.Expect(pingRequest, pingResult)
}

func TestHTTPBodyLimit(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxMessageSize: 1024}})
	c := e.Session()
	c.Initialize()
	big := call("1", "echo", `{"text":"`+strings.Repeat("x", 2000)+`"}`)
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message exceeds the limit of 1024 bytes"}}`
	assertReply(t, "Content-Length over the limit", c.Post(big), http.StatusRequestEntityTooLarge, want)

	// Without a Content-Length the limit is found while reading.
	req := c.Request(context.Background(), http.MethodPost, "")
	req.Body = http.NoBody
	req.Body = readCloser{strings.NewReader(big)}
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.TransferEncoding != nil && resp.ContentLength == 0 {
		t.Errorf("chunked body over the limit: %d", resp.StatusCode)
	}
	c.Expect(call("2", "echo", `{"text":"ok"}`), `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}`)
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

func TestHTTPStandaloneStream(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()
	c.Initialize()
	assertReply(t, "GET without text/event-stream", c.Do(http.MethodGet, "", "Accept", "application/json"), http.StatusNotAcceptable,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Acceptable: Accept must list text/event-stream"}}`)
	s := c.Open(http.MethodGet, "", "Accept", "text/event-stream")
	if s.Resp.StatusCode != http.StatusOK || !s.IsSSE() {
		t.Fatalf("GET: %d %q", s.Resp.StatusCode, s.Resp.Header.Get("Content-Type"))
	}
	assertReply(t, "second GET", c.Do(http.MethodGet, "", "Accept", "text/event-stream"), http.StatusConflict,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Conflict: the session's standalone SSE stream is already open"}}`)
	c.Expect(pingRequest, pingResult) // POSTs go on beside it
	assertReply(t, "DELETE", c.Do(http.MethodDelete, ""), http.StatusNoContent, "")
	if ev, ok := s.Next(); ok {
		t.Fatalf("standalone stream sent %s", ev)
	}
}

// TestHTTPSessionExpiry: a session left idle expires; a call that was still running in it (its
// client disconnected, which does not cancel) is cancelled, and the session's actors and
// goroutines are gone. The idle time is long enough that the requests that set the session up
// never leave it idle that long, even on a loaded machine.
func TestHTTPSessionExpiry(t *testing.T) {
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{SessionIdleTimeout: 2 * time.Second}})
	c := e.Session()
	c.Initialize()
	s := c.Open(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":1}}}`)
	if _, ok := s.Next(); !ok {
		t.Fatal("the call is not running")
	}
	s.Close() // the client leaves; the call goes on until the session expires
	mcptest.Eventually(t, "the idle session's expiry", func() bool { return e.srv.Sessions() == 0 })
	assertReply(t, "expired session", c.Post(pingRequest), http.StatusNotFound, errUnknown)
	e.Client.CloseIdleConnections()
	s.Resp.Body.Close()
	// What may stay: the listener's accept loop, and the idle workers of the engine's pool, which
	// belong to the server and end at Close. A handler still running on a worker shows its own
	// function on top. (goleak.IgnoreCurrent would not do: it ignores goroutines by id, and a
	// worker that existed before may be the one that runs the handler.)
	if err := goleak.Find(goleak.IgnoreTopFunction(mcptest.DeadLetterThrottle), goleak.IgnoreTopFunction(idleWorker),
		goleak.IgnoreAnyFunction("net/http/httptest.(*Server).goServe.func1")); err != nil {
		t.Errorf("goroutines left after the session expired: %v", err)
	}
}

// TestHTTPShutdownCancelsInFlight: shutting the server down ends every session: a running call's
// stream ends with no response, the standalone stream ends, and new sessions are refused.
func TestHTTPShutdownCancelsInFlight(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
	c := e.Session()
	c.Initialize()
	get := c.Open(http.MethodGet, "", "Accept", "text/event-stream")
	post := c.Open(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":7}}}`)
	if _, ok := post.Next(); !ok {
		t.Fatal("the call is not running")
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for {
		ev, ok := post.Next()
		if !ok {
			break
		}
		if !strings.Contains(ev, "notifications/progress") {
			t.Fatalf("a call cancelled by shutdown sent %s", ev)
		}
	}
	if ev, ok := get.Next(); ok {
		t.Fatalf("standalone stream sent %s", ev)
	}
	assertReply(t, "initialize after shutdown", e.Session().Post(mcptest.InitRequest), http.StatusServiceUnavailable, errShuttingDown)
	assertReply(t, "request after shutdown", c.Post(pingRequest), http.StatusServiceUnavailable, errShuttingDown)
	if got := rec.Snapshot(); len(got) != 0 {
		t.Errorf("shutdown reported %v", got[0].Err)
	}
}

// TestHTTPManyCallsCancelled puts many calls in flight on one session, each on its own POST
// stream, cancels them all from other POSTs, and checks that every stream ends with no response
// while the session goes on.
func TestHTTPManyCallsCancelled(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	// hang says it started (one progress notification, which also turns its answer into an
	// event stream), then waits for its cancellation.
	hang := tools.Tool{Name: "hang", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		if err := tools.ReportProgress(ctx, 1, nil, "started"); err != nil {
			return nil, err
		}
		<-ctx.Done()
		return tools.TextResult("late"), nil
	})}
	rec := mcptest.NewRecorder()
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{hang, demo.Tools()[0]}, OnError: rec.OnError})
	c := e.Session()
	c.Initialize()
	streams := make([]*mcptest.Stream, n)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streams[i] = c.Open(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hang","arguments":{},"_meta":{"progressToken":%d}}}`, i, i))
		}()
	}
	wg.Wait()
	for i, s := range streams {
		if ev, ok := s.Next(); !ok || !strings.Contains(ev, "notifications/progress") {
			t.Fatalf("call %d: first event %q (ok %v)", i, ev, ok)
		}
	}
	c.Expect(pingRequest, pingResult) // answered at once with every call in flight
	for i := range streams {
		assertReply(t, "cancel", c.Post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i)), http.StatusAccepted, "")
	}
	for i, s := range streams {
		if ev, ok := s.Next(); ok {
			t.Fatalf("cancelled call %d sent %s", i, ev)
		}
	}
	c.Expect(call(`"after"`, "echo", `{"text":"after"}`), `{"jsonrpc":"2.0","id":"after","result":{"content":[{"type":"text","text":"after"}]}}`)
	if got := rec.Snapshot(); len(got) != 0 {
		t.Errorf("cancelled calls were reported: %v", got[0].Err)
	}
}
