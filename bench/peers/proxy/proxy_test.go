package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the tests, or, as the server a test's proxy starts, a line server: it answers
// each line with "echo: " and the line, and exits with the status in PROXY_TEST_EXIT at the
// end of its input.
func TestMain(m *testing.M) {
	if os.Getenv("PROXY_TEST_SERVER") == "1" {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Printf("echo: %s %s\n", sc.Text(), os.Getenv("PROXY_TEST_TAG"))
		}
		code := 0
		fmt.Sscan(os.Getenv("PROXY_TEST_EXIT"), &code)
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

// mountFile writes an mcpServers file whose one server is this test binary as the line server.
func mountFile(t *testing.T, exit string) string {
	t.Helper()
	f := map[string]any{"mcpServers": map[string]any{"up": map[string]any{
		"command": os.Args[0],
		"args":    []string{"-test.run", "^$"},
		"env":     map[string]string{"PROXY_TEST_SERVER": "1", "PROXY_TEST_EXIT": exit, "PROXY_TEST_TAG": "tagged"},
		"cwd":     t.TempDir(),
	}}}
	raw, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mount.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProxyCopiesBothWays(t *testing.T) {
	for _, tc := range []struct {
		exit string
		code int
	}{{"0", 0}, {"3", 3}} {
		t.Run("exit "+tc.exit, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			type ended struct {
				code int
				err  error
			}
			done := make(chan ended, 1)
			// Ends when the server exits, after the end of its input below.
			go func() {
				code, err := run([]string{"--mount", mountFile(t, tc.exit), "--transport", "stdio"}, inR, outW, io.Discard)
				outW.Close()
				done <- ended{code, err}
			}()
			lines := bufio.NewScanner(outR)
			for _, msg := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "second"} {
				if _, err := io.WriteString(inW, msg+"\n"); err != nil {
					t.Fatal(err)
				}
				if !lines.Scan() {
					t.Fatalf("no answer to %q: %v", msg, lines.Err())
				}
				if got, want := lines.Text(), "echo: "+msg+" tagged"; got != want {
					t.Fatalf("got %q, want %q", got, want)
				}
			}
			inW.Close()
			if lines.Scan() {
				t.Fatalf("more output after the end of input: %q", lines.Text())
			}
			e := <-done
			if e.err != nil || e.code != tc.code {
				t.Fatalf("run = %d, %v; want %d, nil", e.code, e.err, tc.code)
			}
		})
	}
}

func TestProxyBadMount(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--mount FILE is required"},
		{[]string{"--mount", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"--mount", write("bad.json", "{")}, "unexpected end of JSON"},
		{[]string{"--mount", write("two.json", `{"mcpServers":{"a":{"command":"x"},"b":{"command":"y"}}}`)}, "want one server in mcpServers, got 2"},
		{[]string{"--mount", write("url.json", `{"mcpServers":{"web":{"url":"http://127.0.0.1:1/mcp"}}}`)}, "mcpServers.web: a command is required"},
		{[]string{"--mount", write("ok.json", `{"mcpServers":{"a":{"command":"x"}}}`), "--transport", "http"}, "--transport http: stdio only"},
	} {
		code, err := run(tc.args, strings.NewReader(""), io.Discard, io.Discard)
		if code != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %d, %v; want 2 and an error with %q", tc.args, code, err, tc.want)
		}
	}
}
