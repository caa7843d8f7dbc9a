package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// TestBinaryWithRealIssuer runs the binary as the command line has it,
//
//	server --transport http --auth-issuer URL --auth-audience URL --tool-scope fail=admin
//
// against oidc-provider, an OpenID issuer publishing an RS256 key: a token with the scope admin
// calls fail, one without gets the 403 step-up challenge naming admin (2025-11-25: with the
// scope it holds; 2026-07-28: the call's scopes only), a token for another audience gets 401,
// and the protected-resource metadata names the issuer.
func TestBinaryWithRealIssuer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	as := oidctest.Start(t)
	const audience = "https://mcp.example.test/mcp"
	b := startHTTPBinary(t, "--auth-issuer", as.Issuer, "--auth-audience", audience, "--tool-scope", "fail=admin")
	defer func() {
		if err := b.stop(); err != nil {
			t.Errorf("exit: %v\n%s", err, b.stderr.String())
		}
	}()
	admin := as.Token("mcp-client", "mcp-secret", "tools:call admin", audience)
	plain := as.Token("mcp-client", "mcp-secret", "tools:call", audience)
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	open := func(token string) string {
		status, hdr, body := b.post(token, "", init)
		if status != 200 || hdr.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %d %s", status, body)
		}
		return hdr.Get("Mcp-Session-Id")
	}
	failCall := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","arguments":{"mode":"result"}}}`

	status, _, body := b.post(admin, open(admin), failCall)
	if want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"public failure message"}],"isError":true}}`; status != 200 || body != want {
		t.Errorf("fail with admin: %d %s", status, body)
	}
	metadata := b.base + "/.well-known/oauth-protected-resource/mcp"
	denied := `{"jsonrpc":"2.0","id":1,"error":{"code":-31001,"message":"Insufficient scope: tool \"fail\" needs the scope admin","data":{"tool":"fail","missing":["admin"]}}}`
	status, hdr, body := b.post(plain, open(plain), failCall)
	wantChallenge := `Bearer error="insufficient_scope", scope="tools:call admin", resource_metadata="` + metadata + `", error_description="Insufficient scope: tool \"fail\" needs the scope admin"`
	if status != 403 || body != denied || hdr.Get("WWW-Authenticate") != wantChallenge {
		t.Errorf("fail without admin (2025-11-25): %d %s\n%s\nwant %s", status, body, hdr.Get("WWW-Authenticate"), wantChallenge)
	}
	// The same call in the modern era: no session, the envelope in _meta.
	req, _ := http.NewRequest(http.MethodPost, b.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","arguments":{"mode":"result"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+plain)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "fail")
	hc := &http.Client{Timeout: 20 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantChallenge = `Bearer error="insufficient_scope", scope="admin", resource_metadata="` + metadata + `", error_description="Insufficient scope: tool \"fail\" needs the scope admin"`
	if resp.StatusCode != 403 || strings.TrimSpace(string(got)) != denied || resp.Header.Get("WWW-Authenticate") != wantChallenge {
		t.Errorf("fail without admin (2026-07-28): %d %s\n%s\nwant %s", resp.StatusCode, got, resp.Header.Get("WWW-Authenticate"), wantChallenge)
	}

	if status, _, body := b.post(as.Token("mcp-client", "mcp-secret", "tools:call admin", "https://elsewhere.example/mcp"), "", init); status != 401 {
		t.Errorf("a token for another audience: %d %s", status, body)
	}
	resp, err = hc.Get(metadata)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(md), `"authorization_servers":["`+as.Issuer+`"]`) {
		t.Errorf("metadata does not name the issuer: %s", md)
	}
}
