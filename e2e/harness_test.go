package e2e_test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/enginehook"
)

// watchdog bounds every wait in these tests. It is not a performance assertion: it only turns a
// hang into a failure.
const watchdog = 20 * time.Second

// longTests reports whether the long forms of the soak and load tests run: TOOLGRAIN_LONG=1,
// which .ci/run sets. The default forms check the same properties with smaller loads, so that
// the README's test command stays short.
func longTests() bool { return os.Getenv("TOOLGRAIN_LONG") != "" }

// stdioClient drives a server over an in-process stdio connection (two pipes) and sees exactly the
// bytes a real client would.
type stdioClient struct {
	t     testing.TB
	srv   *toolgrain.Server
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

// startStdio builds a server from cfg and serves one stdio connection to the returned client.
// Cleanup closes the input, waits for ServeStdio and closes the server.
func startStdio(t testing.TB, cfg toolgrain.Config) *stdioClient {
	t.Helper()
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	// Registered first, so it runs last: after attach's cleanup has ended the connection.
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return attach(t, srv)
}

func (c *stdioClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *stdioClient) recv() string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("server closed its output")
		}
		return line
	case <-time.After(watchdog):
		c.t.Fatal("no message from the server")
	}
	return ""
}

// expect sends one request and asserts the exact line that answers it.
func (c *stdioClient) expect(request, want string) {
	c.t.Helper()
	c.send(request)
	if got := c.recv(); got != want {
		c.t.Errorf("request %s\n got: %s\nwant: %s", request, got, want)
	}
}

// silent asserts that the server sends nothing during d.
func (c *stdioClient) silent(d time.Duration) {
	c.t.Helper()
	select {
	case line := <-c.lines:
		c.t.Errorf("unexpected message: %s", line)
	case <-time.After(d):
	}
}

const initRequest = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

func (c *stdioClient) initialize() {
	c.t.Helper()
	c.send(initRequest)
	if got := c.recv(); !strings.Contains(got, `"protocolVersion":"2025-11-25"`) {
		c.t.Fatalf("initialize: %s", got)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// recorder is an OnError callback that keeps every report.
type recorder struct {
	mu      sync.Mutex
	reports []reported
	signal  chan struct{}
}

type reported struct {
	err     error
	details *diagnostics.ToolErrorDetails
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{}, 1024)} }

func (r *recorder) onError(err error, d *diagnostics.ToolErrorDetails) {
	r.mu.Lock()
	r.reports = append(r.reports, reported{err, d})
	r.mu.Unlock()
	r.signal <- struct{}{}
}

// wait returns once n reports arrived.
func (r *recorder) wait(t testing.TB, n int) []reported {
	t.Helper()
	deadline := time.After(watchdog)
	for {
		r.mu.Lock()
		got := append([]reported(nil), r.reports...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.signal:
		case <-deadline:
			t.Fatalf("%d reports arrived, want %d", len(got), n)
		}
	}
}

func (r *recorder) snapshot() []reported {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reported(nil), r.reports...)
}

// decode parses one line into a generic map, failing the test on invalid JSON.
func decode(t testing.TB, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("invalid JSON from server: %v: %s", err, line)
	}
	return m
}

var errCanary = errors.New("canary")

// engineOccupancy returns what the engine of srv holds now: connection actors, calls in flight
// and open listen streams.
func engineOccupancy(srv *toolgrain.Server) engine.Occupancy {
	s, ok := enginehook.Of(srv)
	if !ok {
		panic("engineOccupancy: not a server")
	}
	return s.Engine.Occupancy()
}
