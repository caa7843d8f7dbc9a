package auth_test

import (
	"slices"
	"testing"

	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// TestToolScopesRealTokens: a tool that needs the scope admin, called with real tokens from
// oidc-provider. A token without it gets 403 and the step-up challenge in both eras, each
// naming the scopes its revision says, and the tool does not run; a token obtained for the
// scopes the challenge named calls it. With HideForbiddenTools, tools/list leaves the tool out
// for the first token only.
func TestToolScopesRealTokens(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	v := newJWTVerifier(t, as, ct, nil, auth.JWTConfig{})
	m := startMCP(t, v, mcpOptions{scopes: []string{"tools:call"}})
	narrow := as.Token("mcp-client", "mcp-secret", "tools:call read", m.resource)
	metadata := m.ts.URL + "/.well-known/oauth-protected-resource/mcp"
	body := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-31001,"message":"Insufficient scope: tool \"admin_only\" needs the scope admin","data":{"tool":"admin_only","missing":["admin"]}}}`
	}
	challenge := func(scope string) string {
		return `Bearer error="insufficient_scope", scope="` + scope + `", resource_metadata="` + metadata +
			`", error_description="Insufficient scope: tool \"admin_only\" needs the scope admin"`
	}

	// MCP 2026-07-28: the scopes the call needs, the endpoint's and the tool's.
	r := m.call(narrow, "admin_only")
	if r.status != 403 || r.body != body("1") {
		t.Errorf("modern: %d %s", r.status, r.body)
	}
	if got, want := r.header.Get("WWW-Authenticate"), challenge("tools:call admin"); got != want {
		t.Errorf("modern challenge\n got: %s\nwant: %s", got, want)
	}
	// MCP 2025-11-25: those the token holds as well, so that asking for exactly these loses
	// none.
	s := m.openSession(narrow)
	r = s.call(7, "admin_only")
	if r.status != 403 || r.body != body("7") {
		t.Errorf("legacy: %d %s", r.status, r.body)
	}
	if got, want := r.header.Get("WWW-Authenticate"), challenge("tools:call read admin"); got != want {
		t.Errorf("legacy challenge\n got: %s\nwant: %s", got, want)
	}
	// The tool itself, and other calls, are fine with the narrow token.
	if r := s.call(8, "whoami"); r.status != 200 || textOf(r.body) != "mcp-client tools:call,read" {
		t.Errorf("whoami on the session: %d %s", r.status, r.body)
	}
	if n := m.runs(); n != 0 {
		t.Fatalf("the tool ran %d times without its scope", n)
	}

	// Step up: a token for the scopes the legacy challenge named.
	wide := as.Token("mcp-client", "mcp-secret", "tools:call read admin", m.resource)
	if r := m.call(wide, "admin_only"); r.status != 200 || textOf(r.body) != "ran" {
		t.Errorf("modern with admin: %d %s", r.status, r.body)
	}
	if r := m.openSession(wide).call(9, "admin_only"); r.status != 200 || textOf(r.body) != "ran" {
		t.Errorf("legacy with admin: %d %s", r.status, r.body)
	}
	if n := m.runs(); n != 2 {
		t.Errorf("the tool ran %d times, want 2", n)
	}
	if got := m.list(narrow); !slices.Equal(got, []string{"whoami", "admin_only"}) {
		t.Errorf("tools/list without hiding: %v", got)
	}

	hiding := startMCP(t, v, mcpOptions{scopes: []string{"tools:call"}, hide: true})
	if got := hiding.list(as.Token("mcp-client", "mcp-secret", "tools:call", hiding.resource)); !slices.Equal(got, []string{"whoami"}) {
		t.Errorf("tools/list hiding, without admin: %v", got)
	}
	if got := hiding.list(as.Token("mcp-client", "mcp-secret", "tools:call admin", hiding.resource)); !slices.Equal(got, []string{"whoami", "admin_only"}) {
		t.Errorf("tools/list hiding, with admin: %v", got)
	}
	if reports := m.flushReports(); len(reports) != 0 {
		t.Errorf("refusals were reported: %v", reports)
	}
}
