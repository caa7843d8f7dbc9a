package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// httpBinary is the built server running with --transport http on a free loopback port.
type httpBinary struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	stderr *strings.Builder
	lines  chan string // stderr, line by line
	exited chan error
}

func startHTTPBinary(t *testing.T, args ...string) *httpBinary {
	t.Helper()
	return startHTTPBinaryEnv(t, nil, args...)
}

// startHTTPBinaryEnv is startHTTPBinary with env added to the process's environment.
func startHTTPBinaryEnv(t *testing.T, env []string, args ...string) *httpBinary {
	t.Helper()
	bin := buildServer(t)
	cmd := exec.Command(bin, append([]string{"--transport", "http", "--addr", "127.0.0.1:0"}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return startHTTPCommand(t, cmd)
}

// startHTTPCommand starts cmd, which runs the built server with --transport http, and waits
// (up to 20 s, a build's worth of margin on a loaded machine) for its serving line.
func startHTTPCommand(t *testing.T, cmd *exec.Cmd) *httpBinary {
	t.Helper()
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &httpBinary{t: t, cmd: cmd, stderr: &strings.Builder{}, lines: make(chan string, 1024), exited: make(chan error, 1)}
	go func() {
		defer close(b.lines)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			_ = b.cmd.Process.Kill()
			_ = b.cmd.Wait()
		}
	})
	deadline := time.After(20 * time.Second)
	for b.base == "" {
		select {
		case line, ok := <-b.lines:
			if !ok {
				t.Fatalf("server exited before serving:\n%s", b.stderr.String())
			}
			b.stderr.WriteString(line + "\n")
			var rec struct {
				Msg string `json:"msg"`
				URL string `json:"url"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" {
				b.base = strings.TrimSuffix(rec.URL, "/mcp")
			}
		case <-deadline:
			t.Fatalf("no serving line:\n%s", b.stderr.String())
		}
	}
	return b
}

// stop sends SIGTERM and waits for the exit status.
func (b *httpBinary) stop() error {
	b.t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for line := range b.lines {
			b.stderr.WriteString(line + "\n")
		}
		done <- b.cmd.Wait()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		_ = b.cmd.Process.Kill()
		b.t.Fatalf("server did not exit after SIGTERM:\n%s", b.stderr.String())
	}
	return nil
}

// post sends one message to the endpoint and returns the status, headers and whole body.
func (b *httpBinary) post(token, session, body string) (int, http.Header, string) {
	b.t.Helper()
	resp := b.send(token, session, body)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(data)
}

func (b *httpBinary) send(token, session, body string) *http.Response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.base+"/mcp", strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp
}

// TestBinaryOverHTTP runs the real binary with --transport http and the demo verifier: the
// handshake, every demonstration tool and fail mode with their exact answers, the auth rows, the
// metadata, then SIGTERM with a call in flight, which must end that call's stream with no
// response and exit 0 with the diagnostics flushed.
func TestBinaryOverHTTP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	diag := filepath.Join(t.TempDir(), "diag.jsonl")
	b := startHTTPBinary(t, "--auth-token", "good-token", "--auth-token", "narrow-token:read", "--auth-scope", "tools",
		"--diagnostics-file", diag, "--log-level", "info")

	status, hdr, body := b.post("good-token", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != 200 || sid == "" || !strings.HasPrefix(body, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolgrain-demo"`) {
		t.Fatalf("initialize: %d %q %s", status, sid, body)
	}
	if status, _, body := b.post("good-token", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 || body != "" {
		t.Fatalf("initialized: %d %s", status, body)
	}

	failed := `{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}`
	tests := []struct{ give, want string }{
		{`{"name":"echo","arguments":{"text":"hello"}}`, `{"content":[{"type":"text","text":"hello"}]}`},
		{`{"name":"greet","arguments":{"name":"Ada"}}`, `{"content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada!\"}"}],"structuredContent":{"greeting":"Hello, Ada!"}}`},
		{`{"name":"sleep","arguments":{"ms":10}}`, `{"content":[{"type":"text","text":"slept"}]}`},
		{`{"name":"fail","arguments":{"mode":"result"}}`, `{"content":[{"type":"text","text":"public failure message"}],"isError":true}`},
		{`{"name":"fail","arguments":{"mode":"error"}}`, failed},
		{`{"name":"fail","arguments":{"mode":"panic"}}`, failed},
		{`{"name":"fail","arguments":{"mode":"bad-output"}}`, failed},
		{`{"name":"fail","arguments":{"mode":"provider"}}`, failed},
		{`{"name":"fail","arguments":{"mode":"nope"}}`, `{"content":[{"type":"text","text":"invalid arguments: mode: must be one of \"result\", \"error\", \"panic\", \"bad-output\", \"provider\""}],"isError":true}`},
	}
	for i, tt := range tests {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, tt.give)
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, i+1, tt.want)
		if status, hdr, got := b.post("good-token", sid, req); status != 200 || hdr.Get("Content-Type") != "application/json" || got != want {
			t.Errorf("%s\n got: %d %s\nwant: 200 %s", tt.give, status, got, want)
		}
	}

	metadata := b.base + "/.well-known/oauth-protected-resource/mcp"
	authTests := []struct {
		name, token string
		status      int
		challenge   string
	}{
		{"missing token", "", 401, `Bearer resource_metadata="` + metadata + `", scope="tools"`},
		{"unknown token", "guess", 401, `Bearer resource_metadata="` + metadata + `", scope="tools", error="invalid_token", error_description="the access token is invalid or expired"`},
		{"insufficient scope", "narrow-token", 403, `Bearer resource_metadata="` + metadata + `", scope="tools", error="insufficient_scope", error_description="the access token lacks a required scope"`},
		{"verifier outage", "auth-outage", 503, ""},
	}
	for _, tt := range authTests {
		status, hdr, body := b.post(tt.token, sid, `{"jsonrpc":"2.0","id":"a","method":"ping"}`)
		if status != tt.status || hdr.Get("WWW-Authenticate") != tt.challenge {
			t.Errorf("%s: %d %q, want %d %q", tt.name, status, hdr.Get("WWW-Authenticate"), tt.status, tt.challenge)
		}
		if strings.Contains(body, demo.Marker) || strings.Contains(body, "unreachable") {
			t.Errorf("%s: the body leaks the internal error: %s", tt.name, body)
		}
	}

	resp, err := http.Get(metadata)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"resource":"` + b.base + `/mcp","scopes_supported":["tools"],"bearer_methods_supported":["header"],"resource_name":"Toolgrain demo"}`; string(meta) != want {
		t.Errorf("metadata = %s, want %s", meta, want)
	}

	// A call in flight when SIGTERM arrives is cancelled: its stream ends with no response.
	inflight := b.send("good-token", sid, `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":"long"}}}`)
	defer inflight.Body.Close()
	stream := mcptest.NewEventReader(inflight.Body)
	for {
		data, err := stream.NextData()
		if err != nil {
			t.Fatalf("the call did not start: %v", err)
		}
		if strings.Contains(data, "notifications/progress") {
			break
		}
	}
	if err := b.stop(); err != nil {
		t.Fatalf("exit: %v\nstderr:\n%s", err, b.stderr.String())
	}
	rest, _ := io.ReadAll(stream)
	if strings.Contains(string(rest), `"result"`) || strings.Contains(string(rest), `"error"`) {
		t.Errorf("a call cancelled by shutdown was answered: %s", rest)
	}
	if strings.Contains(b.stderr.String(), "good-token") {
		t.Errorf("a token reached the log:\n%s", b.stderr.String())
	}

	data, err := os.ReadFile(diag)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 5 {
		t.Fatalf("diagnostics file has %d lines, want 5 (four fail modes, the auth outage):\n%s", len(lines), data)
	}
	var outage struct {
		Error string `json:"error"`
		Tool  string `json:"tool"`
	}
	if err := json.Unmarshal([]byte(lines[4]), &outage); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(outage.Error, demo.Marker) || outage.Tool != "" || strings.Contains(lines[4], "request_id") {
		t.Errorf("auth outage report = %s, want the original error and no tool details", lines[4])
	}
}

// TestSessionLimitFlags: --max-sessions and --max-sessions-per-subject reach the transport's
// configuration; left out, they are 0, the documented defaults.
func TestSessionLimitFlags(t *testing.T) {
	tests := []struct {
		give                    []string
		wantMax, wantPerSubject int
	}{
		{[]string{"--transport", "http"}, 0, 0},
		{[]string{"--transport", "http", "--max-sessions", "7", "--max-sessions-per-subject", "3"}, 7, 3},
		{[]string{"--transport", "http", "--max-sessions", "-1"}, -1, 0},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.give, io.Discard)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", tt.give, err)
		}
		if cfg, err := o.http.config(); err != nil || cfg.MaxSessions != tt.wantMax || cfg.MaxSessionsPerSubject != tt.wantPerSubject {
			t.Errorf("parseFlags(%q): MaxSessions %d, MaxSessionsPerSubject %d; want %d, %d", tt.give, cfg.MaxSessions, cfg.MaxSessionsPerSubject, tt.wantMax, tt.wantPerSubject)
		}
	}
}

func TestHTTPFlags(t *testing.T) {
	tests := []struct {
		give    []string
		wantErr string
	}{
		{[]string{"--auth-token", "x"}, "need --transport http"},
		{[]string{"--auth-issuer", "https://as.example"}, "need --transport http"},
		{[]string{"--tool-scope", "fail=admin"}, "need --transport http"},
		{[]string{"--transport", "http", "--tool-scope", "fail=admin"}, "need --auth-token, --auth-issuer or --auth-introspection-url"},
		{[]string{"--transport", "http", "--auth-issuer", "https://as.example", "--tool-scope", "fail"}, `--tool-scope "fail": want TOOL=SCOPE[,SCOPE...]`},
		{[]string{"--transport", "http", "--auth-issuer", "https://as.example", "--auth-token", "x"}, "cannot be combined"},
		{[]string{"--transport", "http", "--auth-introspection-url", "https://as.example/introspect"}, "needs --auth-client-id and --auth-client-secret-file"},
		{[]string{"--transport", "http", "--auth-client-id", "rs"}, "need --auth-introspection-url"},
		{[]string{"--transport", "http", "--auth-audience", "https://mcp.example/mcp"}, "--auth-audience needs --auth-issuer or --auth-introspection-url"},
		{[]string{"--transport", "http", "--addr", "nope"}, `--addr "nope"`},
		{[]string{"--transport", "http", "--auth-token", ":scope"}, "empty token"},
		{[]string{"--transport", "http", "--auth-scope", "s"}, "need --auth-token"},
		{[]string{"--transport", "http", "--hide-forbidden-tools"}, "need --auth-token"},
		{[]string{"--hide-forbidden-tools"}, "need --transport http"},
		{[]string{"--transport", "http", "--auth-token", "t", "--auth-allow-sender-constrained"}, "--auth-allow-sender-constrained needs --auth-issuer or --auth-introspection-url"},
		{[]string{"--auth-allow-sender-constrained"}, "--auth-allow-sender-constrained needs --auth-issuer"},
		{[]string{"--transport", "http", "--addr", "0.0.0.0:8080", "--auth-token", "t"}, "--addr 0.0.0.0:8080 is not a loopback address: with auth on, set --resource"},
		{[]string{"--transport", "http", "--addr", ":8080", "--auth-token", "t", "--resource", "/mcp"}, "set --resource"},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.give, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tt.give, err, tt.wantErr)
		}
	}
}
