package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
)

// FuzzHTTPHandler drives the Streamable HTTP handler with the requests a client sends: POST
// bodies and headers, GET and DELETE with session and Last-Event-ID headers, in both eras. The
// input is a sequence of requests separated by a line "--": each is a method line, header lines
// ("Name: value") up to an empty line, then the body, sent with its length (net/http's own
// framing is not the subject). In a header value, $SID stands for the id of the session the
// iteration opened first (when opened is true) and $LAST for the last event id an answer
// carried. Each request runs to its end or for fuzzRequestWait, as a client that gives up; at
// the end of the input every session it opened is deleted.
//
// It checks: no panic; every status is one the handler documents; every JSON body is one
// JSON-RPC response (or the array of them that answers a batch), every SSE event one JSON-RPC
// message (or such an array), and an answer carries its request's
// id (or null); no answer is an internal error or carries the fail tool's marker
// SECRET-internal-detail; once the sessions are deleted, none is left, and neither is any
// goroutine the input started.
//
// Run it longer with
//
//	go test -run '^$' -fuzz '^FuzzHTTPHandler$' -fuzztime 10m -fuzzminimizetime 20x ./e2e
//
// (the engine's goroutines make coverage vary from one run of an input to the next, so the
// default minimisation, 60 s per new input, would take most of the time).
func FuzzHTTPHandler(f *testing.F) {
	for _, s := range httpFuzzSeeds {
		f.Add(true, []byte(s))
	}
	f.Add(false, []byte(rawPost(mcptest.InitRequest)))
	f.Add(false, []byte(rawPost(call("1", "echo", `{"text":"no session"}`))))
	// Ignored by id: the goroutines that exist before the server. The server's own are
	// recognised by what they run, since its pool's workers serve one input, then another.
	before := goleak.IgnoreCurrent()
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools:   demo.Tools(),
		OnError: func(error, *toolgrain.ToolErrorDetails) {},
		Limits:  toolgrain.LimitsConfig{HandlerGrace: time.Second},
		HTTP:    toolgrain.HTTPConfig{MaxSessions: 4},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := srv.Close(); err != nil {
			f.Error(err)
		}
	})
	f.Fuzz(func(t *testing.T, opened bool, data []byte) {
		c := &fuzzClient{t: t, h: srv.Handler(), vars: map[string]string{"$SID": "", "$LAST": ""}, sessions: map[string]bool{}}
		if opened {
			res := c.serve(mustRequest(t, rawPost(mcptest.InitRequest)))
			c.vars["$SID"] = res.Header().Get("Mcp-Session-Id")
			c.serve(mustRequest(t, rawPost(initializedNotif, "Mcp-Session-Id: $SID")))
		}
		for i, part := range strings.Split(string(data), fuzzSeparator) {
			if i == fuzzMaxRequests {
				break
			}
			if req := fuzzRequest(part); req != nil {
				c.serve(req)
			}
		}
		for sid := range c.sessions {
			c.serve(mustRequest(t, rawRequest(http.MethodDelete, "", "Mcp-Session-Id: "+sid)))
		}
		if n := srv.Sessions(); n != 0 {
			t.Fatalf("%d sessions left after deleting every session the input opened", n)
		}
		if err := goleak.Find(before, goleak.IgnoreTopFunction(mcptest.DeadLetterThrottle), goleak.IgnoreTopFunction(idleWorker),
			goleak.IgnoreTopFunction(fuzzWorkerSignals)); err != nil {
			t.Fatalf("goroutines left: %v", err)
		}
	})
}

// fuzzClient is the client side of one input of FuzzHTTPHandler.
type fuzzClient struct {
	t        *testing.T
	h        http.Handler
	vars     map[string]string // $SID and $LAST
	sessions map[string]bool   // every session an answer opened
}

const (
	// fuzzWorkerSignals is a goroutine of a fuzzing worker (go test -fuzz), started after the
	// target, that watches for signals.
	fuzzWorkerSignals = "os/signal.NotifyContext.func1"
	// fuzzMaxRequests bounds the requests of one input.
	fuzzMaxRequests = 8
	// fuzzRequestWait is how long the fuzz client waits for an answer before it leaves.
	fuzzRequestWait = 150 * time.Millisecond
)

// documentedStatuses are the statuses the handler's doc and docs/http.md list.
var documentedStatuses = map[int]bool{
	200: true, 202: true, 204: true, 400: true, 401: true, 403: true, 404: true, 405: true,
	406: true, 409: true, 410: true, 413: true, 415: true, 429: true, 503: true,
}

// serve serves req (its $SID and $LAST replaced in header values) and checks the answer.
func (c *fuzzClient) serve(req *http.Request) *httptest.ResponseRecorder {
	t := c.t
	t.Helper()
	for name, values := range req.Header {
		for i, v := range values {
			for k, x := range c.vars {
				v = strings.ReplaceAll(v, k, x)
			}
			values[i] = v
		}
		req.Header[name] = values
	}
	// The id a POSTed request's answer must carry, if it can be read.
	var sent *protocol.ID
	if req.Method == http.MethodPost && req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		if m, werr := protocol.Decode(b); werr == nil && m.IsRequest() {
			sent = &m.ID
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), fuzzRequestWait)
	defer cancel()
	req = req.WithContext(ctx)
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)

	res := rec.Result()
	body := rec.Body.Bytes()
	if sid := res.Header.Get("Mcp-Session-Id"); sid != "" {
		c.sessions[sid] = true
	}
	what := req.Method + " " + req.Header.Get("Mcp-Session-Id")
	if !documentedStatuses[res.StatusCode] {
		t.Fatalf("%s: status %d: %s", what, res.StatusCode, body)
	}
	if bytes.Contains(body, []byte(demo.Marker)) || strings.Contains(strings.Join(headerValues(res.Header), "\n"), demo.Marker) {
		t.Fatalf("%s: internal detail on the wire: %s", what, body)
	}
	switch ct := res.Header.Get("Content-Type"); {
	case ct == protocol.MediaTypeJSON:
		checkFuzzAnswer(t, what, body, true, sent)
	case strings.HasPrefix(ct, protocol.MediaTypeEventStream):
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: an event stream with status %d", what, res.StatusCode)
		}
		responses := 0
		for _, ev := range parseSSE(body) {
			if ev.ID != "" {
				c.vars["$LAST"] = ev.ID
			}
			if ev.Data == "" {
				continue
			}
			if ev.Event == "endpoint" {
				// A GET without a session opened an HTTP+SSE stream: its first event names
				// the POST URL of its session.
				if !strings.HasPrefix(ev.Data, "/mcp?sessionId=") {
					t.Fatalf("%s: endpoint event %q", what, ev.Data)
				}
				continue
			}
			if checkFuzzAnswer(t, what, []byte(ev.Data), false, sent) {
				if responses++; responses > 1 {
					t.Fatalf("%s: a second response on one stream: %s", what, ev.Data)
				}
			}
		}
	case len(body) > 0:
		t.Fatalf("%s: status %d, Content-Type %q, body %q", what, res.StatusCode, ct, body)
	}
	return rec
}

// checkFuzzAnswer is checkFuzzMessage for a message, or each response of the array that
// answers a JSON-RPC batch (a 2025-03-26 session's).
func checkFuzzAnswer(t *testing.T, what string, b []byte, response bool, sent *protocol.ID) bool {
	t.Helper()
	var batch []json.RawMessage
	if protocol.KindOf(b) != protocol.FrameBatch || json.Unmarshal(b, &batch) != nil {
		return checkFuzzMessage(t, what, b, response, sent)
	}
	for _, m := range batch {
		checkFuzzMessage(t, what, m, true, nil)
	}
	return true
}

// checkFuzzMessage checks one JSON-RPC message the server sent, and reports whether it is a
// response: one when response is set, never an internal error, and, when sent is set, with that
// id or null.
func checkFuzzMessage(t *testing.T, what string, b []byte, response bool, sent *protocol.ID) bool {
	t.Helper()
	if !utf8.Valid(b) || !json.Valid(b) {
		t.Fatalf("%s: invalid JSON on the wire: %q", what, b)
	}
	m, werr := protocol.Decode(b)
	if werr != nil {
		t.Fatalf("%s: the server sent %s, which does not decode: %v", what, b, werr)
	}
	if response && !m.IsResponse() {
		t.Fatalf("%s: a JSON body that is not a response: %s", what, b)
	}
	if m.Error != nil && m.Error.Code == protocol.CodeInternalError {
		t.Fatalf("%s: internal error: %s", what, b)
	}
	if m.IsResponse() && sent != nil && !m.ID.IsZero() && m.ID.Key() != sent.Key() {
		t.Fatalf("%s: the answer to id %s carries id %s", what, sent, m.ID)
	}
	return m.IsResponse()
}

func headerValues(h http.Header) []string {
	var all []string
	for _, vs := range h {
		all = append(all, vs...)
	}
	return all
}

// parseSSE splits a complete event stream into its events.
func parseSSE(body []byte) []mcptest.Event {
	var evs []mcptest.Event
	for ev := range mcptest.ReadEvents(bytes.NewReader(body)) {
		evs = append(evs, ev)
	}
	return evs
}

func mustRequest(t *testing.T, text string) *http.Request {
	t.Helper()
	req := fuzzRequest(strings.TrimSuffix(text, fuzzSeparator))
	if req == nil {
		t.Fatalf("not a request: %q", text)
	}
	return req
}

// fuzzSeparator ends each request of a FuzzHTTPHandler input.
const fuzzSeparator = "\n--\n"

// fuzzRequest builds the request that text (a method line, header lines, an empty line, the
// body) describes, or returns nil when it has no valid method.
func fuzzRequest(text string) *http.Request {
	head, body, _ := strings.Cut(text, "\n\n")
	lines := strings.Split(head, "\n")
	method := strings.TrimSpace(lines[0])
	if method == "" {
		return nil // http.NewRequest would take it for GET
	}
	req, err := http.NewRequest(method, "http://127.0.0.1/mcp", strings.NewReader(body))
	if err != nil {
		return nil
	}
	for _, line := range lines[1:] {
		name, value, _ := strings.Cut(strings.TrimSuffix(line, "\r"), ":")
		value = strings.TrimSpace(value)
		switch {
		case name == "":
		case strings.EqualFold(name, "Host"):
			req.Host = value
		default:
			req.Header.Add(name, value)
		}
	}
	return req
}

// rawRequest is the text of a request for FuzzHTTPHandler: the headers a legacy client sends,
// then the extra ones ("Name: value", replacing a default of that name), and body.
func rawRequest(method, body string, extra ...string) string {
	headers := []string{"Host: 127.0.0.1", "Accept: application/json, text/event-stream"}
	if body != "" {
		headers = append(headers, "Content-Type: application/json")
	}
	headers = slices.DeleteFunc(headers, func(d string) bool {
		name, _, _ := strings.Cut(d, ":")
		return slices.ContainsFunc(extra, func(e string) bool { return strings.HasPrefix(e, name+":") })
	})
	headers = append(headers, extra...)
	return method + "\n" + strings.Join(headers, "\n") + "\n\n" + body + fuzzSeparator
}

func rawPost(body string, extra ...string) string { return rawRequest(http.MethodPost, body, extra...) }

// session are the headers of a request of the session the iteration opened.
var session = []string{"Mcp-Session-Id: $SID", "MCP-Protocol-Version: 2025-11-25"}

// rawModernHeaders are the header lines of a modern (2026-07-28) request of method on name.
func rawModernHeaders(method, name string) []string {
	h := []string{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: " + method}
	if name != "" {
		h = append(h, "Mcp-Name: "+protocol.EncodeHeaderValue(name))
	}
	return h
}

// httpFuzzSeeds are request sequences for FuzzHTTPHandler: each kind of request the handler
// serves, in both eras; the committed corpus in testdata/fuzz/FuzzHTTPHandler holds more.
var httpFuzzSeeds = []string{
	rawPost(call("1", "echo", `{"text":"hi"}`), session...) + rawPost(call("2", "greet", `{"name":"Ada"}`), session...),
	rawPost(call("1", "fail", `{"mode":"error"}`), session...) + rawPost(call("2", "fail", `{"mode":"panic"}`), session...) +
		rawPost(call("3", "fail", `{"mode":"bad-output"}`), session...) + rawPost(call("4", "fail", `{"mode":"provider"}`), session...),
	rawPost(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"sleep","arguments":{"ms":250},"_meta":{"progressToken":"s"}}}`, session...) +
		rawRequest(http.MethodGet, "", append([]string{"Last-Event-ID: $LAST"}, session...)...) +
		rawPost(mcptest.CancelFor(`"s"`), session...),
	rawRequest(http.MethodGet, "", session...) + rawPost(`{"jsonrpc":"2.0","id":"p","method":"ping"}`, session...) +
		rawRequest(http.MethodDelete, "", session...) + rawPost(`{"jsonrpc":"2.0","id":"p","method":"ping"}`, session...),
	rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id: $SID", "MCP-Protocol-Version: 1999-01-01") +
		rawPost(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, session...) +
		rawPost(`{"jsonrpc":"2.0","id":1,"method":`, session...) +
		rawRequest(http.MethodPut, "", session...),
	rawPost(modernRequest("1", "server/discover", ""), rawModernHeaders("server/discover", "")...) +
		rawPost(modernRequest("2", "tools/call", `"name":"echo","arguments":{"text":"modern"}`), rawModernHeaders("tools/call", "echo")...) +
		rawPost(modernRequest("3", "tools/call", `"name":"fail","arguments":{"mode":"panic"}`), rawModernHeaders("tools/call", "fail")...),
	rawPost(modernRequest("4", "subscriptions/listen", `"notifications":{"toolsListChanged":true}`), rawModernHeaders("subscriptions/listen", "")...) +
		rawPost(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":500},"_meta":{"progressToken":5,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			rawModernHeaders("tools/call", "sleep")...),
	rawPost(mcptest.InitRequest) + rawPost(mcptest.InitRequest) + rawPost(mcptest.InitRequest) + rawPost(mcptest.InitRequest) + rawPost(mcptest.InitRequest),
	rawRequest(http.MethodGet, "", "Accept: text/event-stream") + rawPost(pingRequest, "Mcp-Session-Id: "),
	rawPost(call("1", "echo", `{"text":"x"}`), "Mcp-Session-Id: $SID", "Origin: http://evil.example.com") +
		rawPost(call("1", "echo", `{"text":"x"}`), "Mcp-Session-Id: $SID", "Content-Type: text/plain") +
		rawPost(call("1", "echo", `{"text":"x"}`), "Mcp-Session-Id: $SID", "Accept: text/html"),
}
