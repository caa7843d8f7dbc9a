package e2e_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// CORS for browser clients, asserted as a browser sends it: the preflight, then the request.

const appOrigin = "http://app.example.test"

// exposed is Access-Control-Expose-Headers as the server writes it.
const exposed = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"

// raw sends one request to path with the header name/value pairs and reads the whole answer.
func (e *httpEnv) raw(method, path, body string, hdr ...string) mcptest.Reply {
	e.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	return mcptest.Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// preflight sends the OPTIONS a browser sends before a request of method with headers.
func (e *httpEnv) preflight(path, origin, method, headers string) mcptest.Reply {
	e.T.Helper()
	hdr := []string{"Origin", origin, "Access-Control-Request-Method", method}
	if headers != "" {
		hdr = append(hdr, "Access-Control-Request-Headers", headers)
	}
	return e.raw(http.MethodOptions, path, "", hdr...)
}

// wantHeaders asserts header values; "" means absent.
func wantHeaders(t *testing.T, what string, h http.Header, pairs ...string) {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if got := strings.Join(h.Values(pairs[i]), ", "); got != pairs[i+1] {
			t.Errorf("%s: %s = %q, want %q", what, pairs[i], got, pairs[i+1])
		}
	}
}

func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	cfg := authConfig(rec, nil)
	cfg.HTTP.AllowedOrigins = []string{appOrigin + "/"}
	e := startHTTP(t, cfg)
	// Every header MCP uses, as a browser lists them: lowercase, sorted.
	all := "accept,authorization,content-type,last-event-id,mcp-method,mcp-name,mcp-param-region,mcp-protocol-version,mcp-session-id,x-mcp-toolsets"
	for _, path := range []string{"/mcp", "/sse", "/messages", "/.well-known/oauth-protected-resource/mcp"} {
		r := e.preflight(path, appOrigin, "POST", all)
		if r.Status != http.StatusNoContent || r.Body != "" {
			t.Errorf("%s: preflight %d %q, want 204 and no body (before authentication)", path, r.Status, r.Body)
		}
		wantHeaders(t, path+" preflight", r.Header,
			"Access-Control-Allow-Origin", appOrigin,
			"Access-Control-Allow-Methods", "POST",
			"Access-Control-Allow-Headers", all,
			"Access-Control-Max-Age", "7200",
			"Access-Control-Allow-Credentials", "",
			"Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
	}
	r := e.preflight("/mcp", appOrigin, "DELETE", "mcp-protocol-version,mcp-session-id")
	wantHeaders(t, "DELETE preflight", r.Header, "Access-Control-Allow-Origin", appOrigin, "Access-Control-Allow-Methods", "DELETE")

	// Refused: another origin, a header MCP does not use, a bare prefix.
	assertReply(t, "preflight of a foreign origin", e.preflight("/mcp", "http://evil.example.test", "POST", "content-type"),
		http.StatusForbidden, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: origin not allowed"}}`)
	r = e.preflight("/mcp", appOrigin, "POST", "content-type,x-custom")
	assertReply(t, "preflight of another header", r, http.StatusForbidden,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: request header x-custom not allowed"}}`)
	wantHeaders(t, "refused preflight", r.Header, "Access-Control-Allow-Origin", "")
	assertReply(t, "preflight of the bare prefix", e.preflight("/mcp", appOrigin, "POST", "mcp-param-"), http.StatusForbidden,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: request header mcp-param- not allowed"}}`)
	r = e.preflight("/mcp", appOrigin, "PUT", "")
	wantHeaders(t, "PUT preflight", r.Header, "Access-Control-Allow-Origin", "", "Access-Control-Allow-Methods", "")
	// The metadata is public: a foreign origin's preflight is answered, without CORS headers.
	r = e.preflight("/.well-known/oauth-protected-resource/mcp", "http://evil.example.test", "GET", "mcp-protocol-version")
	wantHeaders(t, "metadata preflight of a foreign origin", r.Header, "Access-Control-Allow-Origin", "")
}

func TestCORSRequests(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	cfg := authConfig(rec, nil)
	cfg.HTTP.AllowedOrigins = []string{appOrigin}
	e := startHTTP(t, cfg)

	// A 401 a page can read: the challenge is exposed, for OAuth discovery.
	r := e.raw(http.MethodPost, "/mcp", mcptest.InitRequest, "Origin", appOrigin, "Content-Type", "application/json")
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d %s", r.Status, r.Body)
	}
	wantHeaders(t, "401", r.Header, "Access-Control-Allow-Origin", appOrigin, "Access-Control-Expose-Headers", exposed,
		"Access-Control-Allow-Credentials", "", "Vary", "Origin")

	// The session's id, and the answer, reach the page.
	c := e.Session()
	c.Token = "alice-token"
	r = c.Post(mcptest.InitRequest, "Origin", appOrigin)
	assertReply(t, "initialize", r, http.StatusOK, initResult)
	wantHeaders(t, "initialize", r.Header, "Access-Control-Allow-Origin", appOrigin, "Access-Control-Expose-Headers", exposed)
	c.ID, c.Version = r.Header.Get("Mcp-Session-Id"), "2025-11-25"
	r = c.Do(http.MethodDelete, "", "Origin", appOrigin)
	assertReply(t, "DELETE", r, http.StatusNoContent, "")
	wantHeaders(t, "DELETE", r.Header, "Access-Control-Allow-Origin", appOrigin)

	// The metadata, for a browser's OAuth discovery.
	r = e.raw(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", "", "Origin", appOrigin, "MCP-Protocol-Version", "2025-11-25")
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `"resource":"`+e.ts.URL+`/mcp"`) {
		t.Errorf("metadata: %d %s", r.Status, r.Body)
	}
	wantHeaders(t, "metadata", r.Header, "Access-Control-Allow-Origin", appOrigin, "Access-Control-Expose-Headers", exposed)

	// The old transport's stream and POSTs.
	s := e.openSSE("/sse", "Origin", appOrigin, "Authorization", "Bearer alice-token")
	wantHeaders(t, "SSE stream", s.resp.Header, "Access-Control-Allow-Origin", appOrigin)
	r = s.send(mcptest.InitRequest, "Origin", appOrigin)
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	wantHeaders(t, "SSE POST", r.Header, "Access-Control-Allow-Origin", appOrigin)
	if got := s.message(); got != initResult {
		t.Errorf("initialize on the stream: %s", got)
	}

	// A request without an Origin (not a browser) gets no CORS headers but Vary.
	r = e.raw(http.MethodPost, "/mcp", mcptest.InitRequest, "Content-Type", "application/json", "Authorization", "Bearer alice-token")
	wantHeaders(t, "no Origin", r.Header, "Access-Control-Allow-Origin", "", "Access-Control-Expose-Headers", "")
}

// TestCORSAnyOrigin: "*" allows every origin with the wildcard, and never credentials.
func TestCORSAnyOrigin(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{AllowedOrigins: []string{"*"}}})
	r := e.preflight("/mcp", appOrigin, "POST", "content-type,mcp-protocol-version")
	if r.Status != http.StatusNoContent {
		t.Fatalf("preflight: %d %s", r.Status, r.Body)
	}
	wantHeaders(t, "preflight", r.Header, "Access-Control-Allow-Origin", "*", "Access-Control-Allow-Credentials", "")
	c := e.Session()
	r = c.Post(mcptest.InitRequest, "Origin", "http://anywhere.example.test")
	assertReply(t, "initialize", r, http.StatusOK, initResult)
	wantHeaders(t, "initialize", r.Header, "Access-Control-Allow-Origin", "*", "Access-Control-Expose-Headers", exposed,
		"Access-Control-Allow-Credentials", "")
}

// TestCORSOff: without AllowedOrigins there is no CORS: a foreign origin's preflight gets 403, a
// same-origin request no CORS headers.
func TestCORSOff(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	assertReply(t, "preflight", e.preflight("/mcp", appOrigin, "POST", "content-type"), http.StatusForbidden,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: origin not allowed"}}`)
	r := e.Session().Post(mcptest.InitRequest, "Origin", e.ts.URL)
	assertReply(t, "same origin", r, http.StatusOK, initResult)
	wantHeaders(t, "same origin", r.Header, "Access-Control-Allow-Origin", "", "Vary", "")
}
