package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
