package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// httpAnswerText is the whole of an HTTP answer but its Date: the status, every header, the body.
func httpAnswerText(status int, hdr http.Header, body string) string {
	h := hdr.Clone()
	h.Del("Date")
	var lines []string
	for k, vs := range h {
		lines = append(lines, k+": "+strings.Join(vs, ", "))
	}
	slices.Sort(lines)
	return fmt.Sprintf("%d\n%s\n%s", status, strings.Join(lines, "\n"), body)
}

// toolNames returns the names of a tools/list result's tools.
func toolNames(t *testing.T, body string) []string {
	t.Helper()
	var m struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("tools/list: %v: %s", err, body)
	}
	var out []string
	for _, tool := range m.Result.Tools {
		out = append(out, tool.Name)
	}
	return out
}

// TestBinaryTagScope: with --tool-tag fail=ops --tag-scope ops=admin, the token a (scope mcp)
// does not see fail: its tools/list leaves it out and its call of fail gets exactly the answer a
// call of the unknown tool nope gets (status, headers and body, once the name is replaced), in a
// legacy session and as a modern request; the token b (scopes mcp and admin) sees and calls it.
func TestBinaryTagScope(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	b := startHTTPBinary(t, "--auth-token", "a:mcp", "--auth-token", "b:mcp,admin", "--tool-tag", "fail=ops", "--tag-scope", "ops=admin")
	session := func(token string) string {
		_, hdr, body := b.post(token, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		sid := hdr.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize: %s", body)
		}
		return sid
	}
	const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	sa, sb := session("a"), session("b")
	legacy := func(token, sid, tool string) string {
		return httpAnswerText(b.post(token, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"mode":"result"}}}`))
	}
	modern := func(token, tool string) string {
		return httpAnswerText(b.postModern(token, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"mode":"result"},`+modernMeta+`}}`, tool))
	}
	for era, ask := range map[string]func(string) string{
		"legacy": func(tool string) string { return legacy("a", sa, tool) },
		"modern": func(tool string) string { return modern("a", tool) },
	} {
		hidden, unknown := ask("fail"), ask("nope")
		if !strings.Contains(unknown, `unknown tool \"nope\"`) {
			t.Fatalf("%s: the unknown tool: %s", era, unknown)
		}
		if strings.ReplaceAll(hidden, "fail", "nope") != unknown {
			t.Errorf("%s: a's call of fail answers differently from an unknown tool's\nfail: %s\nnope: %s", era, hidden, unknown)
		}
	}
	_, _, listA := b.post("a", sa, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	_, _, listB := b.post("b", sb, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if names := toolNames(t, listA); slices.Contains(names, "fail") || !slices.Contains(names, "echo") {
		t.Errorf("a's tools: %v", names)
	}
	if names := toolNames(t, listB); !slices.Contains(names, "fail") {
		t.Errorf("b's tools: %v", names)
	}
	if got := legacy("b", sb, "fail"); !strings.Contains(got, "public failure message") {
		t.Errorf("b's call of fail in a session: %s", got)
	}
	if got := modern("b", "fail"); !strings.Contains(got, "public failure message") {
		t.Errorf("b's modern call of fail: %s", got)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("exit: %v\n%s", err, b.stderr.String())
	}
}

// TestVisibilityFlagErrors: malformed --tool-tag and --tag-scope values, a tag that breaks the
// tag syntax and a tool the server does not have are refused at start.
func TestVisibilityFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tool-tag", "fail"}, "want TOOL=TAG"},
		{[]string{"--tool-tag", "fail="}, "want TOOL=TAG"},
		{[]string{"--tag-scope", "=admin"}, "want TAG=SCOPE"},
		{[]string{"--tag-scope", "a b=admin"}, `tag "a b"`},
		{[]string{"--tool-tag", "nosuch=ops"}, `no tool "nosuch"`},
		{[]string{"--tool-tag", "fail=o/ps"}, `tag "o/ps"`},
	} {
		err := run(t.Context(), tc.args, strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestBinaryTagsAtRunTime: --disable-tag beta hides fail (tagged beta) from the start; the admin
// listener's POST /tags/enable?tag=beta shows it again, and the session's GET stream is told
// with tools/list_changed; bad requests to /tags get 405 or 400.
func TestBinaryTagsAtRunTime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	b := startHTTPBinary(t, "--tool-tag", "fail=beta", "--disable-tag", "beta", "--admin-addr", "127.0.0.1:0", "--log-level", "info")
	admin := ""
	for _, line := range strings.Split(b.stderr.String(), "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "admin" {
			admin = "http://" + rec.Addr
		}
	}
	if admin == "" {
		t.Fatalf("no admin line:\n%s", b.stderr.String())
	}
	_, hdr, body := b.post("", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %s", body)
	}
	list := func() []string {
		_, _, body := b.post("", sid, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		return toolNames(t, body)
	}
	if names := list(); slices.Contains(names, "fail") || !slices.Contains(names, "echo") {
		t.Fatalf("with beta disabled: %v", names)
	}
	req, _ := http.NewRequest(http.MethodGet, b.base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	// The whole stream is bounded: a notification that never comes fails the test.
	get, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/tags/enable?tag=beta", http.StatusMethodNotAllowed},
		{http.MethodPost, "/tags/enable", http.StatusBadRequest},
		{http.MethodPost, "/tags/enable?tag=a%20b", http.StatusBadRequest},
		{http.MethodPost, "/tags/reset?tag=beta", http.StatusBadRequest},
		{http.MethodPost, "/tags/disable?tag=beta&subject=token-1&client=app", http.StatusBadRequest},
		{http.MethodPost, "/tags/disable?tag=beta&client=app", http.StatusNoContent},
		{http.MethodPost, "/tags/reset?tag=beta&client=app", http.StatusNoContent},
		{http.MethodPost, "/tags/nosuch?tag=beta", http.StatusNotFound},
		{http.MethodPost, "/tags/enable?tag=beta", http.StatusNoContent},
	} {
		r, _ := http.NewRequest(tc.method, admin+tc.path, nil)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
		}
	}
	// The stream's first message: the priming event carries no data.
	if data, err := mcptest.NewEventReader(get.Body).NextData(); err != nil {
		t.Errorf("the GET stream was not told: %v", err)
	} else if !strings.Contains(data, `"method":"notifications/tools/list_changed"`) {
		t.Errorf("the GET stream: %s", data)
	}
	if names := list(); !slices.Contains(names, "fail") {
		t.Errorf("with beta enabled: %v", names)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("exit: %v\n%s", err, b.stderr.String())
	}
}
