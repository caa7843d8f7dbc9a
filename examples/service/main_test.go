package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// protoactor starts this goroutine on a dead letter to throttle its logging; it ends by itself
// after one second.
const deadLetterThrottle = "github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(deadLetterThrottle)) }

const watchdog = 20 * time.Second

// fixture is a running service with an in-memory MCP client, its log observed.
type fixture struct {
	h      *host
	client *toolgrain.InMemoryClient
	logs   *observer.ObservedLogs
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	h := newHost(zap.New(core))
	t.Cleanup(h.close)
	if err := h.startMCP(options{restockTimeout: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.stopMCP(); err != nil {
			t.Errorf("stopMCP: %v", err)
		}
	})
	c, err := h.mcp.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	return &fixture{h: h, client: c, logs: logs}
}

func text(r *protocol.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// failures returns the "unexpected failure" log lines of the MCP server's OnError, waiting
// until there are n.
func (f *fixture) failures(t *testing.T, n int) []observer.LoggedEntry {
	t.Helper()
	deadline := time.Now().Add(watchdog)
	for {
		got := f.logs.FilterMessage("unexpected failure").All()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestActorToolsErrorModel runs the service's actor-backed tools through every row of the
// error model a tool call can reach.
func TestActorToolsErrorModel(t *testing.T) {
	tests := []struct {
		name       string
		tool       string
		args       string
		want       string // the client's text
		wantError  bool
		wantReport string // substring of the operator's report; "" means none
	}{
		{name: "success", tool: "stock", args: `{"item":"bolts"}`, want: "120 bolts in stock"},
		{name: "success after work elsewhere", tool: "restock", args: `{"item":"washers","qty":5,"supplier":"acme"}`, want: "restocked 5 washers"},
		{name: "public error", tool: "reserve", args: `{"item":"nuts","qty":500}`, want: "only 80 nuts in stock", wantError: true},
		{name: "public error, spawned actor", tool: "restock", args: `{"item":"nuts","qty":5,"supplier":"nobody"}`, want: `no supplier named "nobody"`, wantError: true},
		{name: "invalid arguments", tool: "reserve", args: `{"item":"nuts","qty":0}`, want: "invalid arguments: qty: must be >= 1", wantError: true},
		{name: "failure reply", tool: "restock", args: `{"item":"nuts","qty":5,"supplier":"offline"}`, want: toolgrain.FailedText, wantError: true, wantReport: "192.0.2.10:443"},
		{name: "crash", tool: "restock", args: `{"item":"nuts","qty":5,"supplier":"glitchy"}`, want: toolgrain.FailedText, wantError: true, wantReport: "panicked: assignment to entry in nil map"},
		{name: "no reply before the timeout", tool: "restock", args: `{"item":"nuts","qty":5,"supplier":"slowpoke"}`, want: toolgrain.FailedText, wantError: true, wantReport: "timed out after 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := context.WithTimeout(context.Background(), watchdog)
			defer cancel()
			res, err := f.client.CallTool(ctx, tt.tool, json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if text(res) != tt.want || res.IsError != tt.wantError {
				t.Errorf("result %q (isError %v), want %q (isError %v)", text(res), res.IsError, tt.want, tt.wantError)
			}
			if tt.wantReport == "" {
				if got := f.failures(t, 0); len(got) != 0 {
					t.Errorf("reported an expected outcome: %v", got[0].ContextMap())
				}
				return
			}
			got := f.failures(t, 1)
			if len(got) != 1 {
				t.Fatalf("%d reports, want 1", len(got))
			}
			fields := got[0].ContextMap()
			if !strings.Contains(fields["error"].(string), tt.wantReport) || fields["tool"] != tt.tool {
				t.Errorf("report = %v, want tool %s and an error containing %q", fields, tt.tool, tt.wantReport)
			}
			// The tool keeps working, on an actor restarted after the crash.
			if tt.tool == "restock" {
				res, err := f.client.CallTool(ctx, "restock", json.RawMessage(`{"item":"nuts","qty":1,"supplier":"acme"}`))
				if err != nil || text(res) != "restocked 1 nuts" {
					t.Errorf("next restock: %+v, %v", res, err)
				}
			}
		})
	}
}

// TestRestockCancellation: a client that gives up cancels the call; the client gets nothing
// more, nothing is reported, and the supplier actor drops the order.
func TestRestockCancellation(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := f.client.CallTool(ctx, "restock", json.RawMessage(`{"item":"bolts","qty":5,"supplier":"slowpoke"}`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CallTool = %v, want the client's deadline", err)
	}
	deadline := time.Now().Add(watchdog)
	for f.h.ordersCancelled.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := f.h.ordersCancelled.Load(); n != 1 {
		t.Fatalf("orders cancelled = %d, want 1", n)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 500*time.Millisecond) // past the tool's timeout
	defer rcancel()
	if msg, err := f.client.Receive(rctx); err == nil {
		t.Errorf("message after cancellation: %s", msg)
	}
	if got := f.failures(t, 0); len(got) != 0 {
		t.Errorf("a cancelled call was reported: %v", got[0].ContextMap())
	}
}

// TestRoutes: the service's own routes work next to the MCP server, and its registry carries the
// server's metrics.
func TestRoutes(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	if _, err := f.client.CallTool(ctx, "reserve", json.RawMessage(`{"item":"bolts","qty":20}`)); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(f.h.routes())
	defer ts.Close()
	for _, tt := range []struct{ path, want string }{
		{"/healthz", "ok\n"},
		{"/inventory", `{"bolts":100,"nuts":80,"washers":0}` + "\n"},
		{"/metrics", `toolgrain_tool_calls_total{outcome="ok",tool="reserve"} 1`},
	} {
		body := get(t, ts.URL+tt.path)
		if !strings.Contains(body, tt.want) {
			t.Errorf("GET %s = %q, want %q", tt.path, body, tt.want)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mcpPost sends one JSON-RPC message to the MCP endpoint as a Streamable HTTP client does and
// returns the status, the session id the server gave and the body.
func mcpPost(t *testing.T, url, session, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(protocol.HeaderSessionID, session)
		req.Header.Set(protocol.HeaderProtocolVersion, protocol.LatestLegacyVersion)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get(protocol.HeaderSessionID), string(b)
}

// TestMCPOverHTTP: the MCP server's Streamable HTTP handler sits in the service's mux at /mcp,
// behind the service's middleware, next to its other routes; the actor-backed tools answer
// there as they do in memory.
func TestMCPOverHTTP(t *testing.T) {
	f := newFixture(t)
	ts := httptest.NewServer(f.h.routes())
	defer ts.Close()
	url := ts.URL + "/mcp"
	status, sid, body := mcpPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if status != http.StatusOK || sid == "" || !strings.Contains(body, `"name":"inventory"`) {
		t.Fatalf("initialize: %d, session %q, %s", status, sid, body)
	}
	if status, _, _ := mcpPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d", status)
	}
	for _, tt := range []struct{ give, want string }{
		{`{"name":"stock","arguments":{"item":"nuts"}}`, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"80 nuts in stock"}],"structuredContent":{"item":"nuts","qty":80}}}`},
		{`{"name":"stock","arguments":{"item":"gears"}}`, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"unknown item \"gears\""}],"isError":true}}`},
		{`{"name":"restock","arguments":{"item":"nuts","qty":1,"supplier":"offline"}}`, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}}`},
	} {
		status, _, body := mcpPost(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`+tt.give+`}`)
		if status != http.StatusOK || body != tt.want {
			t.Errorf("%s\n got %d %s\nwant 200 %s", tt.give, status, body, tt.want)
		}
	}
	if got := f.failures(t, 1); len(got) != 1 || !strings.Contains(got[0].ContextMap()["error"].(string), "192.0.2.10") {
		t.Errorf("reports = %v", got)
	}
	seen := 0
	for _, e := range f.logs.FilterMessage("http").All() {
		if e.ContextMap()["path"] == "/mcp" {
			seen++
		}
	}
	if seen != 5 {
		t.Errorf("the service's middleware saw %d /mcp requests, want 5", seen)
	}
	if body := get(t, ts.URL+"/healthz"); body != "ok\n" {
		t.Errorf("healthz next to /mcp: %q", body)
	}
}

// TestStopMCPLeavesTheHostRunning: closing the MCP server with calls in flight stops every
// actor and goroutine it started, and the host's actor system, actors and routes keep running.
func TestStopMCPLeavesTheHostRunning(t *testing.T) {
	h := newHost(zap.NewNop())
	defer h.close()
	ts := httptest.NewServer(h.routes())
	defer ts.Close()
	get(t, ts.URL+"/inventory") // the HTTP machinery's own goroutines belong to the baseline
	baseline := goleak.IgnoreCurrent()

	if err := h.startMCP(options{restockTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	c, err := h.mcp.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := c.CallTool(ctx, "restock", json.RawMessage(`{"item":"nuts","qty":1,"supplier":"acme"}`)); err != nil || res.IsError {
		t.Fatalf("restock: %+v, %v", res, err)
	}
	inFlight := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "restock", json.RawMessage(`{"item":"nuts","qty":1,"supplier":"slowpoke"}`))
		inFlight <- err
	}()
	time.Sleep(50 * time.Millisecond) // the order is placed

	root := h.mcp.RootPID()
	if err := h.stopMCP(); err != nil {
		t.Fatalf("stopMCP: %v", err)
	}
	if err := <-inFlight; !errors.Is(err, toolgrain.ErrClientClosed) {
		t.Errorf("call in flight: %v", err)
	}
	goleak.VerifyNone(t, baseline, goleak.IgnoreTopFunction(deadLetterThrottle))
	if _, err := h.system.Root.RequestFuture(root, "anyone there?", time.Second).Result(); !errors.Is(err, actor.ErrDeadLetter) {
		t.Errorf("the MCP server's root actor still answers: %v", err)
	}

	// The host is untouched: its actor holds the delivered restock, its routes answer, and its
	// actor system still spawns and runs actors.
	if body := get(t, ts.URL+"/inventory"); body != `{"bolts":120,"nuts":81,"washers":0}`+"\n" {
		t.Errorf("inventory after stopMCP = %s", body)
	}
	echo := h.system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			ctx.Respond(s)
		}
	}))
	if status, _, _ := mcpPost(t, ts.URL+"/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != http.StatusServiceUnavailable {
		t.Errorf("/mcp after stopMCP: %d, want 503", status)
	}
	if res, err := h.system.Root.RequestFuture(echo, "still here", time.Second).Result(); err != nil || res != "still here" {
		t.Errorf("new host actor: %v, %v", res, err)
	}
	res, err := h.system.Root.RequestFuture(h.inventory, &tools.ActorCall{Tool: "stock", Arguments: json.RawMessage(`{"item":"nuts"}`)}, time.Second).Result()
	if r, ok := res.(*tools.ActorResult); err != nil || !ok || !strings.Contains(r.Result.Content[0].Text, "81 nuts") {
		t.Errorf("inventory actor after stopMCP: %#v, %v", res, err)
	}
}

// TestRunStdioAndHTTPAtOnce runs the whole command with --stdio: one MCP connection on stdin and
// stdout and another over HTTP at /mcp, served by the one server at the same time, then a
// clean exit when stdin ends.
func TestRunStdioAndHTTPAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"--stdio", "--addr", addr}, inR, outW, &errOut)
		outW.Close()
		done <- err
	}()
	out := bufio.NewScanner(outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if !out.Scan() || !strings.Contains(out.Text(), `"name":"inventory"`) {
		t.Fatalf("stdio initialize: %s", out.Text())
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// The HTTP session, while the stdio one is open.
	url := "http://" + addr + "/mcp"
	deadline := time.Now().Add(watchdog)
	var sid string
	for sid == "" && time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the listener is not up yet
			continue
		}
		resp.Body.Close()
		_, sid, _ = mcpPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`)
	}
	mcpPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, _, body := mcpPost(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"reserve","arguments":{"item":"bolts","qty":20}}}`); !strings.Contains(body, "reserved 20 bolts, 100 left") {
		t.Fatalf("http reserve: %s", body)
	}
	// The stdio connection sees the same inventory.
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stock","arguments":{"item":"bolts"}}}`)
	if !out.Scan() || !strings.Contains(out.Text(), "100 bolts in stock") {
		t.Fatalf("stdio stock: %s", out.Text())
	}

	inW.Close() // EOF: the service exits
	for out.Scan() {
	}
	defer http.DefaultClient.CloseIdleConnections()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), `"msg":"serving"`) || !strings.Contains(errOut.String(), `"msg":"stopped"`) {
		t.Errorf("stderr: %s", errOut.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
