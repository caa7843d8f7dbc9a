package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// longTests reports whether the long forms of the soak tests run: TOOLGRAIN_LONG=1, which
// .ci/run sets.
func longTests() bool { return os.Getenv("TOOLGRAIN_LONG") != "" }

// serverDir holds the server binary that buildServer compiles once for the whole test binary.
var serverDir string

// testParallel is how many of this package's parallel tests run at once unless -parallel says
// otherwise. They are mostly waits on child processes (a member's start, a hung member's
// detection, a shutdown's grace), so more of them than the two cores overlap well.
const testParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(testParallel))
	}
	dir, err := os.MkdirTemp("", "toolgrain-server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

var (
	portsMu sync.Mutex
	// portsTaken are the ports handed to this package's tests: a port the kernel gave out and
	// that was released for a child process to bind is never handed to a test running beside it.
	portsTaken = map[int]bool{}
)

// testPorts returns n distinct free ports on 127.0.0.1 that no other test of this process got.
// They are drawn below the kernel's ephemeral range: a port it gave out and took back could be
// given again, as the local port of any process's next outgoing connection, before the child
// process that is to listen on it binds it (seen: "address already in use").
func testPorts(t testing.TB, n int) []int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	low, high := 10000, ephemeralStart()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			t.Fatalf("found %d free ports of %d", len(ports), n)
		}
		port := low + rand.IntN(high-low)
		if portsTaken[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		portsTaken[port] = true
		ports = append(ports, port)
	}
	return ports
}

var (
	buildOnce sync.Once
	buildOut  []byte
	buildErr  error
)

// buildServer compiles the command once per test binary (with -race when the tests run with it)
// and returns its path; every test that runs the binary shares it.
func buildServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(serverDir, "server")
	buildOnce.Do(func() {
		buildOut, buildErr = exec.Command("go", "build", "-race="+fmt.Sprint(raceEnabled), "-o", bin, ".").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return bin
}

// TestBinaryOverStdio runs the real binary over real stdio pipes: the handshake, every
// demonstration tool and fail mode with their exact answers, then EOF, which must end the process
// with status 0 after flushing the diagnostics file.
func TestBinaryOverStdio(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	diag := filepath.Join(t.TempDir(), "diag.jsonl")
	cmd := exec.Command(bin, "--diagnostics-file", diag, "--log-level", "warn")
	stderr := new(syncBuffer) // written by exec's copier while a failing test may read it
	cmd.Stderr = stderr
	t.Cleanup(func() { // registered first, so it runs after the process has exited
		if t.Failed() {
			t.Logf("stderr: %s", stderr.String())
		}
	})
	c := mcptest.Command(t, cmd)
	exchange := func(req string) string {
		t.Helper()
		c.Send(req)
		return c.Recv()
	}
	got := exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolgrain-demo"`) {
		t.Fatalf("initialize: %s", got)
	}
	c.Send(mcptest.Initialized)

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
		if got := exchange(req); got != want {
			t.Errorf("%s\n got: %s\nwant: %s", tt.give, got, want)
		}
	}
	_ = c.CloseInput() // EOF: the server must exit 0
	if rest, err := c.Drain(); err != nil || len(rest) != 0 {
		t.Fatalf("exit: %v, after %q", err, rest)
	}
	if strings.Contains(stderr.String(), `"level":"info"`) {
		t.Errorf("info lines logged at --log-level warn: %s", stderr.String())
	}

	data, err := os.ReadFile(diag)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 {
		t.Fatalf("diagnostics file has %d lines, want 4 (error, panic, bad-output, provider):\n%s", len(lines), data)
	}
	ids := make(map[string]bool)
	for i, line := range lines {
		var rec struct {
			Error     string          `json:"error"`
			Tool      string          `json:"tool"`
			RequestID json.RawMessage `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if rec.Tool != "fail" {
			t.Errorf("line %d: tool %q", i, rec.Tool)
		}
		ids[string(rec.RequestID)] = true
		if strings.Contains(line, `"mode"`) || strings.Contains(line, "arguments") {
			t.Errorf("line %d carries arguments: %s", i, line)
		}
	}
	// Reports of calls answered in order may reach onError in another order.
	for _, id := range []string{"5", "6", "7", "8"} {
		if !ids[id] {
			t.Errorf("no report for request %s: %v", id, ids)
		}
	}
	if !strings.Contains(lines[0], demo.Marker) {
		t.Errorf("the operator should see the original error: %s", lines[0])
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		give    []string
		wantErr string
	}{
		{[]string{"--transport", "carrier-pigeon"}, `unknown transport "carrier-pigeon"`},
		{[]string{"--log-level", "loud"}, `invalid value "loud"`},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--fixtures", "everything"}, `unknown fixture set "everything"`},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.give, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tt.give, err, tt.wantErr)
		}
	}
}

// TestFixturesOverStdio runs the server in process with --fixtures conformance: the fixture
// tools, resources and prompts answer next to the demonstration tools.
func TestFixturesOverStdio(t *testing.T) {
	t.Parallel()
	exchange, stop := serveInProcess(t, "--fixtures", "conformance", "--log-level", "error")
	exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	tests := []struct{ give, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"still here"}]}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"test://static-text"}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}]}}`},
		{`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"test_simple_prompt"}}`,
			`{"jsonrpc":"2.0","id":4,"result":{"messages":[{"role":"user","content":{"type":"text","text":"This is a simple prompt for testing."}}]}}`},
	}
	for _, tt := range tests {
		if got := exchange(tt.give); got != tt.want {
			t.Errorf("%s\n got: %s\nwant: %s", tt.give, got, tt.want)
		}
	}
	stop()
}

// serveInProcess runs the command in process over pipes with args and returns a function that
// sends one line and reads one, and one that ends the input and waits for run to return.
func serveInProcess(t *testing.T, args ...string) (exchange func(string) string, stop func()) {
	t.Helper()
	c := mcptest.Pipe(t, func(ctx context.Context, in io.Reader, out io.Writer) error {
		if err := run(ctx, args, in, out, io.Discard); err != nil {
			return fmt.Errorf("run: %w", err)
		}
		return nil
	})
	exchange = func(req string) string {
		t.Helper()
		c.Send(req)
		return c.Recv()
	}
	stop = func() {
		t.Helper()
		_ = c.CloseInput()
		if _, err := c.Drain(); err != nil {
			t.Error(err)
		}
	}
	return exchange, stop
}

// TestRequestStateKeyFile: two servers given the same --request-state-key-file accept each
// other's requestState (what lets any of several processes take a client's retry); a key file
// too short is refused at start.
func TestRequestStateKeyFile(t *testing.T) {
	t.Parallel()
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, bytes.Repeat([]byte("k"), 32), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--fixtures", "conformance", "--log-level", "error", "--request-state-key-file", key}
	a, stopA := serveInProcess(t, args...)
	defer stopA()
	b, stopB := serveInProcess(t, args...)
	defer stopB()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	first := a(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_input_required_result_elicitation","arguments":{},` + meta + `}}`)
	var r struct {
		Result struct {
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(first), &r); err != nil || r.Result.RequestState == "" {
		t.Fatalf("round 1: %s", first)
	}
	got := b(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_input_required_result_elicitation","arguments":{},` +
		`"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}},"requestState":"` + r.Result.RequestState + `",` + meta + `}}`)
	if !strings.Contains(got, `"text":"Hello, Ada!"`) {
		t.Errorf("retry on the other server: %s", got)
	}

	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"--request-state-key-file", short}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "needs at least 32") {
		t.Errorf("short key: %v", err)
	}
}
