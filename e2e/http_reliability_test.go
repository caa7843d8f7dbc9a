package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
)

// Limits and hostile input over Streamable HTTP: the same answers as over stdio, in the
// statuses of the HTTP transport.

// runningSleep starts a long sleep with a progress token on its own POST and returns once its
// first progress event shows that it runs.
func runningSleep(t *testing.T, c *mcptest.Session, id string) *mcptest.Stream {
	t.Helper()
	s := c.Open(http.MethodPost, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":`+id+`}}}`)
	if ev, ok := s.Next(); !ok || !strings.Contains(ev, "notifications/progress") {
		t.Fatalf("first event %q (ok %v), want progress", ev, ok)
	}
	return s
}

func TestHTTPCallLimits(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxCallsPerConnection: 2, MaxCalls: 3}})
	a, b := e.Session(), e.Session()
	a.Initialize()
	b.Initialize()
	runningSleep(t, a, "1")
	runningSleep(t, a, "2")
	a.Expect(call("3", "echo", `{"text":"x"}`), busyError("3", "connection", 2))
	a.Expect(pingRequest, pingResult)
	runningSleep(t, b, "1")
	b.Expect(call("2", "echo", `{"text":"x"}`), busyError("2", "server", 3))
	assertReply(t, "cancel", a.Post(mcptest.CancelFor("1")), http.StatusAccepted, "")
	// The 202 comes once the cancellation is delivered, not handled: a ping on the same session
	// is handled after it, and so after its call has given back its place.
	a.Expect(pingRequest, pingResult)
	b.Expect(call("3", "echo", `{"text":"y"}`), echoResult("3", "y"))
	if got := e.srv.Stats().RefusedCalls; got != 2 {
		t.Errorf("RefusedCalls = %d, want 2", got)
	}
}

// sessionsBusy is the refusal of an initialize (id 0) over a limit on sessions.
func sessionsBusy(scope string, limit int) string {
	what := "on the server"
	if scope == "subject" {
		what = "for this subject"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"error":{"code":-31000,"message":"Server busy: too many sessions open %s (limit %d)","data":{"scope":%q,"limit":%d}}}`, what, limit, scope, limit)
}

// assertBusy checks a refused initialize: its status, Retry-After and exact body.
func assertBusy(t *testing.T, what string, got mcptest.Reply, status int, scope string, limit int) {
	t.Helper()
	assertReply(t, what, got, status, sessionsBusy(scope, limit))
	if got.Header.Get("Mcp-Session-Id") != "" || got.Header.Get("Retry-After") != "5" {
		t.Errorf("%s: Mcp-Session-Id %q, Retry-After %q", what, got.Header.Get("Mcp-Session-Id"), got.Header.Get("Retry-After"))
	}
}

// TestHTTPSessionLimits: past MaxSessions an initialize is refused, unprocessed, with 503,
// Retry-After and -31000; a place frees when a session is deleted, and an initialize that fails
// keeps none. The open sessions keep serving.
func TestHTTPSessionLimits(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{MaxSessions: 2}})
	a, b := e.Session(), e.Session()
	a.Initialize()
	assertReply(t, "failed initialize", e.Session().Post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`), http.StatusOK,
		`{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Invalid params: initialize needs protocolVersion, capabilities and clientInfo"}}`)
	b.Initialize()
	assertBusy(t, "third session", e.Session().Post(mcptest.InitRequest), http.StatusServiceUnavailable, "sessions", 2)
	if n := e.srv.Sessions(); n != 2 {
		t.Errorf("Sessions() = %d, want 2", n)
	}
	a.Expect(pingRequest, pingResult)
	assertReply(t, "DELETE", a.Do(http.MethodDelete, ""), http.StatusNoContent, "")
	e.Session().Initialize()
	b.Expect(pingRequest, pingResult)
}

// TestHTTPSessionLimitPerSubject: with auth, one subject may hold MaxSessionsPerSubject
// sessions, and is refused with 429 past them (its own doing), while the others still find a
// place until the server is full (503).
func TestHTTPSessionLimitPerSubject(t *testing.T) {
	t.Parallel()
	cfg := authConfig(mcptest.NewRecorder(), nil)
	cfg.HTTP.MaxSessions, cfg.HTTP.MaxSessionsPerSubject = 3, 2
	e := startHTTP(t, cfg)
	login := func(token string) *mcptest.Session {
		c := e.Session()
		c.Token = token
		return c
	}
	alice := login("alice-token")
	alice.Initialize()
	login("alice-token").Initialize()
	assertBusy(t, "alice's third session", login("alice-token").Post(mcptest.InitRequest), http.StatusTooManyRequests, "subject", 2)
	login("bob-token").Initialize()
	assertBusy(t, "bob's second session, the server full", login("bob-token").Post(mcptest.InitRequest), http.StatusServiceUnavailable, "sessions", 3)
	assertBusy(t, "alice's third session, the server full", login("alice-token").Post(mcptest.InitRequest), http.StatusTooManyRequests, "subject", 2)
	assertReply(t, "DELETE", alice.Do(http.MethodDelete, ""), http.StatusNoContent, "")
	login("bob-token").Initialize()
}

func TestHTTPHostileInput(t *testing.T) {
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
		{"nested too deep", call("1", "echo", `{"text":"x","deep":`+nested(20000)+`}`), 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: JSON nested deeper than 10000 levels"}}`},
		{"nested deep", call("2", "echo", `{"text":"x","deep":`+nested(9000)+`}`), 200,
			`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"invalid arguments: deep: unexpected property"}],"isError":true}}`},
		{"invalid UTF-8", call("3", "echo", "{\"text\":\"\xff\"}"), 400,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: message is not valid UTF-8"}}`},
		{"raw NUL", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\x00\"}", 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset 39"}}`},
		{"escaped NUL", call("5", "echo", `{"text":"a\u0000b"}`), 200,
			`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"a\u0000b"}]}}`},
		{"huge integer id", `{"jsonrpc":"2.0","id":` + "9" + strings.Repeat("0", 100000) + `,"method":"ping"}`, 200,
			`{"jsonrpc":"2.0","id":` + "9" + strings.Repeat("0", 100000) + `,"result":{}}`},
		{"many invalid items", call("6", "sleep", `{"ms":[`+strings.TrimSuffix(strings.Repeat("0,", 30000), ",")+`]}`), 200,
			`{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"invalid arguments: ms: must be integer, got array"}],"isError":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertReply(t, tt.name, c.Post(tt.give), tt.status, tt.want)
		})
	}
	// A duplicate of an id in flight, from another POST of the session.
	runningSleep(t, c, `"d"`)
	c.Expect(call(`"d"`, "echo", `{"text":"x"}`),
		`{"jsonrpc":"2.0","id":"d","error":{"code":-32600,"message":"Invalid Request: id \"d\" is already in use by a request in flight"}}`)
	// Floods of notifications and of cancellations for unknown ids: 202 each, nothing else.
	n := 2000
	if raceEnabled {
		n = 500
	}
	for i := range n {
		var body string
		if i%2 == 0 {
			body = fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/whatever","params":{"i":%d}}`, i)
		} else {
			body = mcptest.CancelFor(fmt.Sprint(1000000 + i))
		}
		if r := c.Post(body); r.Status != http.StatusAccepted || r.Body != "" {
			t.Fatalf("notification %d: %d %q", i, r.Status, r.Body)
		}
	}
	c.Expect(call(`"d"`, "echo", `{"text":"x"}`),
		`{"jsonrpc":"2.0","id":"d","error":{"code":-32600,"message":"Invalid Request: id \"d\" is already in use by a request in flight"}}`)
	c.Expect(pingRequest, pingResult)
}

// TestSecuritySessionIDsUnguessable: every HTTP session gets a fresh id of 128 random bits
// (crypto/rand, 26 base32 characters); an id that was not handed out, a truncated one or another
// session's id from a different subject names no session.
func TestSecuritySessionIDsUnguessable(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	seen := map[string]bool{}
	var last *mcptest.Session
	for range 50 {
		c := e.Session()
		c.Initialize()
		if len(c.ID) != 26 || seen[c.ID] || strings.Trim(c.ID, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
			t.Fatalf("session id %q: want 26 fresh base32 characters", c.ID)
		}
		seen[c.ID] = true
		last = c
	}
	for _, forged := range []string{protocol.NewSessionID(), last.ID[:25], strings.ToLower(last.ID)} {
		f := &mcptest.Session{HTTP: e.HTTP, ID: forged, Version: "2025-11-25"}
		assertReply(t, "forged session id "+forged, f.Post(pingRequest), http.StatusNotFound, errUnknown)
	}
	last.Expect(pingRequest, pingResult)
}

// TestSecurityOriginAndHostChecked: a browser page of another origin, and a DNS-rebinding
// attack (a foreign Host reaching the loopback listener), get 403 before anything is read.
func TestSecurityOriginAndHostChecked(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	_, port, _ := strings.Cut(strings.TrimPrefix(e.ts.URL, "http://"), ":")
	assertReply(t, "foreign origin", e.Session().Post(mcptest.InitRequest, "Origin", "http://evil.example.com"), http.StatusForbidden,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: origin not allowed"}}`)
	assertReply(t, "DNS rebinding", e.Session().Post(mcptest.InitRequest, "Host", "evil.example.com:"+port, "Origin", "http://evil.example.com:"+port), http.StatusForbidden,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: host not allowed"}}`)
	if e.srv.Sessions() != 0 {
		t.Errorf("%d sessions opened by refused requests", e.srv.Sessions())
	}
}
