package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMountFile: --mount serves the upstreams of an mcpServers file beside (here instead of)
// the demonstration tools: the server binary mounted over stdio under its key, and an upstream
// that cannot start, which the server serves without and /readyz names.
func TestMountFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	file := filepath.Join(t.TempDir(), "mcp.json")
	writeJSON(t, file, map[string]any{"mcpServers": map[string]any{
		"up":   map[string]any{"command": bin, "args": []string{"--log-level", "error"}, "exclude": []string{"spin"}},
		"gone": map[string]any{"command": "/nonexistent/mcp-server"},
	}})
	admin := fmt.Sprintf("127.0.0.1:%d", testPorts(t, 1)[0])
	s := startBinary(t, bin, "--mount", file, "--mount-wait", "100ms", "--demo-tools=false", "--admin-addr", admin, "--log-level", "info")
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	s.answer(0)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The upstream's tools appear once it answered; a list_changed says when.
	id := 1
	for {
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id))
		list := s.answer(id)
		id++
		if strings.Contains(list, `"name":"up_echo"`) {
			if strings.Contains(list, `"name":"echo"`) || strings.Contains(list, `"name":"up_spin"`) {
				t.Errorf("tools: %s", list)
			}
			break
		}
		s.until(`"method":"notifications/tools/list_changed"`)
	}
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up_echo","arguments":{"text":"through"}}}`, id))
	if got := s.answer(id); got != fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"through"}]}}`, id) {
		t.Errorf("up_echo: %s", got)
	}
	resp, err := http.Get("http://" + admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "gone down") || !strings.Contains(string(body), "/nonexistent/mcp-server") || strings.Contains(string(body), "up ") {
		t.Errorf("/readyz: %d %s", resp.StatusCode, body)
	}
	_ = s.stdin.Close()
	s.wait(0)
	if logs := s.stderr.String(); !strings.Contains(logs, `"msg":"upstream unreachable; its components are withdrawn until it answers","upstream":"gone"`) {
		t.Errorf("the log does not say that gone is down:\n%s", logs)
	}
}

// answer reads lines until the response with id, and returns it.
func (s *binary) answer(id int) string {
	s.t.Helper()
	return s.until(fmt.Sprintf(`"id":%d,`, id))
}

// until reads lines until one contains sub, and returns it.
func (s *binary) until(sub string) string {
	s.t.Helper()
	for {
		line, err := s.stdout.ReadString('\n')
		if err != nil {
			s.t.Fatalf("read: %v (stderr: %s)", err, s.stderr.String())
		}
		if strings.Contains(line, sub) {
			return strings.TrimSuffix(line, "\n")
		}
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMountFileErrors: a bad --mount file stops the server at start, with the file and the key.
func TestMountFileErrors(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	dir := t.TempDir()
	for _, c := range []struct{ file, want string }{
		{`{"mcpServers": {"files": {"command": "npx", "args": "-y"}}}`, `mcpServers."files".args: must be an array of strings`},
		{`{"mcpServers": {"files": {"comand": "npx"}}}`, `mcpServers."files".comand: unknown key`},
		{`not json`, `(file): not a JSON object`},
	} {
		path := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--mount", path).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "server: --mount: "+path+": "+c.want) {
			t.Errorf("%s: %v\n%s", c.file, err, out)
		}
	}
	out, err := exec.Command(bin, "--mount", filepath.Join(dir, "missing.json")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "missing.json: no such file") {
		t.Errorf("missing file: %v\n%s", err, out)
	}
}

// TestMountedTags: the server binary mounted over stdio, started with --tool-tag greet=beta (so
// it lists greet's tag in its _meta), from a --mount file that tags every component of the
// mount up and the tool fail ops, in front of --tag-scope ops=admin. The token a (scope mcp)
// does not see up_fail, and its call of up_fail answers exactly as a call of the unknown
// up_nope (status, headers and body once the name is replaced), in a session and as a
// 2026-07-28 request; b (mcp, admin) sees and calls it. The toolsets narrow to mounted tools:
// X-MCP-Toolsets: ops to up_fail for b and to nothing for a (a toolset never widens), the path
// /mcp/t/beta to up_greet (the upstream's own tag), the header up to the mounted tools alone.
func TestMountedTags(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	file := filepath.Join(t.TempDir(), "mcp.json")
	writeJSON(t, file, map[string]any{"mcpServers": map[string]any{
		"up": map[string]any{"command": bin, "args": []string{"--log-level", "error", "--tool-tag", "greet=beta"},
			"tags": []string{"up"}, "tools": map[string]any{"fail": map[string]any{"tags": []string{"ops"}}}},
	}})
	// --mount-wait: the upstream is listed in milliseconds; the bound is for a loaded machine.
	b := startHTTPBinary(t, "--auth-token", "a:mcp", "--auth-token", "b:mcp,admin", "--tag-scope", "ops=admin",
		"--mount", file, "--mount-wait", "15s")
	post := func(path, token, sid, body string, header ...string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, string(data)
	}
	session := func(path, token string) string {
		_, hdr, body := post(path, token, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		sid := hdr.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize: %s", body)
		}
		return sid
	}
	const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	sa, sb := session("/mcp", "a"), session("/mcp", "b")
	list := func(path, token, sid string, header ...string) []string {
		t.Helper()
		_, _, body := post(path, token, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, header...)
		return toolNames(t, body)
	}
	if names := list("/mcp", "a", sa); slices.Contains(names, "up_fail") || !slices.Contains(names, "up_echo") || !slices.Contains(names, "fail") {
		t.Fatalf("a's tools: %v", names)
	}
	if names := list("/mcp", "b", sb); !slices.Contains(names, "up_fail") {
		t.Fatalf("b's tools: %v", names)
	}
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"mode":"result"}}}`
	}
	modern := func(tool string) string {
		return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"mode":"result"},` + modernMeta + `}}`
	}
	for era, ask := range map[string]func(string) string{
		"legacy": func(tool string) string { return httpAnswerText(post("/mcp", "a", sa, call(tool))) },
		"modern": func(tool string) string {
			return httpAnswerText(post("/mcp", "a", "", modern(tool), "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool))
		},
	} {
		hidden, unknown := ask("up_fail"), ask("up_nope")
		if !strings.Contains(unknown, `unknown tool \"up_nope\"`) {
			t.Fatalf("%s: the unknown tool: %s", era, unknown)
		}
		if strings.ReplaceAll(hidden, "up_fail", "up_nope") != unknown {
			t.Errorf("%s: a's call of up_fail answers differently from an unknown tool's\nup_fail: %s\nup_nope: %s", era, hidden, unknown)
		}
	}
	if _, _, got := post("/mcp", "b", sb, call("up_fail")); !strings.Contains(got, "public failure message") {
		t.Errorf("b's call of up_fail: %s", got)
	}

	sbt := session("/mcp/t/beta", "b")
	for _, tc := range []struct {
		name, path, token, sid string
		header                 []string
		want                   []string
	}{
		{"b, toolset ops", "/mcp", "b", sb, []string{"X-MCP-Toolsets", "ops"}, []string{"up_fail"}},
		{"a, toolset ops", "/mcp", "a", sa, []string{"X-MCP-Toolsets", "ops"}, nil},
		{"b, /mcp/t/beta", "/mcp/t/beta", "b", sbt, nil, []string{"up_greet"}},
		{"b, toolset up", "/mcp", "b", sb, []string{"X-MCP-Toolsets", "up"}, []string{"up_echo", "up_greet", "up_sleep", "up_fail", "up_spin"}},
		{"a, toolset up", "/mcp", "a", sa, []string{"X-MCP-Toolsets", "up"}, []string{"up_echo", "up_greet", "up_sleep", "up_spin"}},
	} {
		if got := list(tc.path, tc.token, tc.sid, tc.header...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatalf("exit: %v\n%s", err, b.stderr.String())
	}
}
