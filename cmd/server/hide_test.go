package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBinaryHidesForbiddenTools: with --hide-forbidden-tools, a token without the scope of
// --tool-scope fail=admin does not see fail: its tools/list leaves it out, and a call of it gets,
// in a legacy session and as a modern request, exactly the answer a call of the unknown tool
// nope gets (status, headers and body, once the name is replaced), where without the flag it
// gets 403 and the step-up challenge.
func TestBinaryHidesForbiddenTools(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	answer := func(status int, hdr http.Header, body string) string {
		h := hdr.Clone()
		h.Del("Date")
		var lines []string
		for k, vs := range h {
			lines = append(lines, k+": "+strings.Join(vs, ", "))
		}
		slices.Sort(lines)
		return fmt.Sprintf("%d\n%s\n%s", status, strings.Join(lines, "\n"), body)
	}
	for _, hide := range []bool{true, false} {
		args := []string{"--auth-token", "narrow:read", "--auth-token", "wide:read,admin", "--tool-scope", "fail=admin"}
		if hide {
			args = append(args, "--hide-forbidden-tools")
		}
		b := startHTTPBinary(t, args...)
		_, hdr, body := b.post("narrow", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		sid := hdr.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize: %s", body)
		}
		legacy := func(tool string) string {
			return answer(b.post("narrow", sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"mode":"result"}}}`))
		}
		modern := func(tool string) string {
			return answer(b.postModern("narrow", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"mode":"result"},`+
				`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, tool))
		}
		for era, ask := range map[string]func(string) string{"legacy": legacy, "modern": modern} {
			hidden, unknown := ask("fail"), ask("nope")
			if !strings.Contains(unknown, `unknown tool \"nope\"`) {
				t.Fatalf("%s: the unknown tool: %s", era, unknown)
			}
			same := strings.ReplaceAll(hidden, "fail", "nope") == unknown
			if hide && !same {
				t.Errorf("%s: the hidden tool answers differently from an unknown one\nhidden:  %s\nunknown: %s", era, hidden, unknown)
			}
			if !hide && (same || !strings.HasPrefix(hidden, "403\n")) {
				t.Errorf("%s, without hiding: %s", era, hidden)
			}
		}
		_, _, list := b.post("narrow", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
		if strings.Contains(list, `"name":"fail"`) == hide {
			t.Errorf("hide=%v: tools/list of the narrow token: %s", hide, list)
		}
		if _, _, got := b.postModern("wide", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail","arguments":{"mode":"result"},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, "fail"); !strings.Contains(got, "public failure message") {
			t.Errorf("hide=%v: the token with the scope: %s", hide, got)
		}
		if err := b.stop(); err != nil {
			t.Fatalf("exit: %v\n%s", err, b.stderr.String())
		}
	}
}

// postModern sends a modern tools/call of tool with its headers and returns the status, headers
// and whole body.
func (b *httpBinary) postModern(token, body, tool string) (int, http.Header, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.base+"/mcp", strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(data)
}
