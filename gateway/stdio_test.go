package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// fake returns a mount of the fake upstream (fake_test.go) over stdio, with env added.
func fake(name string, env map[string]string) gateway.Mount {
	e := map[string]string{"GATEWAY_FAKE_UPSTREAM": "1"}
	for k, v := range env {
		e[k] = v
	}
	return gateway.Mount{Name: name, Source: gateway.Stdio{Command: os.Args[0], Env: e}}
}

// Every row of the error model through a stdio upstream.
func TestStdioErrorModel(t *testing.T) {
	t.Parallel()
	m := fake("fk", nil)
	m.Timeout = 300 * time.Millisecond
	f := newFront(t, toolgrain.Config{}, m)
	if st := f.gw.Status()[0]; st.ProtocolVersion != "2024-11-05" || st.PID == 0 {
		t.Errorf("status: %+v", st)
	}

	// Arguments that fail the upstream's schema: feedback from the gateway.
	r := f.call(t, "fk_echo", `{}`)
	if !r.IsError || text(r) != "invalid arguments: text: missing property" {
		t.Errorf("invalid: %+v", r)
	}
	// The upstream's isError result: unchanged.
	r = f.call(t, "fk_public", `{}`)
	if !r.IsError || text(r) != "public failure message" {
		t.Errorf("public: %+v", r)
	}
	if r := f.call(t, "fk_goodout", `{}`); r.IsError || string(r.StructuredContent) != `{"n":1}` {
		t.Errorf("goodout: %+v", r)
	}
	// Unexpected failures: hidden from the client, reported with the upstream and its tool.
	for i, c := range []struct{ tool, report string }{
		{"fk_rpcerror", `upstream "fk": tools/call "rpcerror": database down: ` + fakeSecret},
		{"fk_badout", `upstream "fk": tools/call "badout": `},
		{"fk_slow", `upstream "fk": tools/call "slow": `},
	} {
		r := f.call(t, c.tool, `{}`)
		if !r.IsError || text(r) != toolgrain.FailedText || len(r.StructuredContent) != 0 || strings.Contains(text(r), fakeSecret) {
			t.Errorf("%s: %+v", c.tool, r)
		}
		e, tool := f.reps.wait(t, i+1)
		if tool != c.tool || !strings.HasPrefix(e, c.report) {
			t.Errorf("%s: report %q for %q", c.tool, e, tool)
		}
	}
	if e, _ := f.reps.wait(t, 2); !strings.Contains(e, "output schema") {
		t.Errorf("bad output report: %q", e)
	}
	if e, _ := f.reps.wait(t, 3); !strings.Contains(e, "timed out after 300ms") {
		t.Errorf("timeout report: %q", e)
	}
	// The slow call, cancelled at its timeout, answered anyway: dropped.
	mcptest.Eventually(t, "the late answer dropped", func() bool { return f.gw.Status()[0].Late == 1 })
	if got := text(f.call(t, "fk_echo", `{"text":"still"}`)); got != "still" {
		t.Errorf("echo after: %q", got)
	}
	noMoreMessages(t, f.c)
}

// noMoreMessages fails if the client has a message no call claimed (a late answer, a stray
// notification).
func noMoreMessages(t *testing.T, c *toolgrain.InMemoryClient) {
	t.Helper()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		frame, err := c.Receive(done)
		if err != nil {
			return
		}
		if m, _ := protocol.Decode(frame); m != nil && strings.HasSuffix(m.Method, "list_changed") {
			continue // the mount's own listing, announced to a client connected before it
		}
		t.Errorf("unexpected message: %s", frame)
	}
}

// A cancelled call is cancelled upstream; the upstream's late answer is dropped; the client
// gets nothing for it.
func TestStdioCancellationLateAnswer(t *testing.T) {
	t.Parallel()
	f := newFront(t, toolgrain.Config{}, fake("fk", nil))
	for i := range 3 {
		ctx, cancel := context.WithCancel(ctxT(t))
		done := make(chan error, 1)
		go func() {
			_, err := f.c.CallTool(ctx, "fk_slow", json.RawMessage(`{}`))
			done <- err
		}()
		// The gateway forwards the call at once; cancel it once it is in flight there.
		mcptest.Eventually(t, "the call in flight", func() bool { return callsInFlight(f) == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		mcptest.Eventually(t, "the late answer dropped", func() bool { return f.gw.Status()[0].Late == uint64(i+1) })
	}
	if got := text(f.call(t, "fk_echo", `{"text":"x"}`)); got != "x" {
		t.Errorf("echo: %q", got)
	}
	noMoreMessages(t, f.c)
	if f.reps.count() != 0 {
		t.Errorf("reports: %v", f.reps.errs)
	}
}

func callsInFlight(f *front) int { return f.gw.Status()[0].InFlight }

// Under middleware a mounted tool's call runs on a handler goroutine rather than starting
// from the request actor: the same answers, the same cancellation, the same reports.
func TestStdioThroughMiddleware(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	mw := func(next tools.Handler) tools.Handler {
		return tools.HandlerFunc(func(ctx context.Context, r *tools.Request) (*tools.Result, error) {
			mu.Lock()
			seen = append(seen, r.Tool)
			mu.Unlock()
			return next.Handle(ctx, r)
		})
	}
	f := newFront(t, toolgrain.Config{Middleware: []tools.Middleware{mw}}, fake("fk", nil))
	if got := text(f.call(t, "fk_echo", `{"text":"hi"}`)); got != "hi" {
		t.Errorf("echo: %q", got)
	}
	if r := f.call(t, "fk_rpcerror", `{}`); !r.IsError || text(r) != toolgrain.FailedText {
		t.Errorf("rpcerror: %+v", r)
	}
	if e, tool := f.reps.wait(t, 1); tool != "fk_rpcerror" || !strings.HasPrefix(e, `upstream "fk": tools/call "rpcerror": database down`) {
		t.Errorf("report %q for %q", e, tool)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := f.c.CallTool(ctx, "fk_slow", json.RawMessage(`{}`))
		done <- err
	}()
	mcptest.Eventually(t, "the call in flight", func() bool { return callsInFlight(f) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	mcptest.Eventually(t, "the late answer dropped", func() bool { return f.gw.Status()[0].Late == 1 })
	noMoreMessages(t, f.c)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []string{"fk_echo", "fk_rpcerror", "fk_slow"}) {
		t.Errorf("the middleware saw %v", seen)
	}
}

// Progress and log messages of a call go to its client.
func TestStdioProgressAndLog(t *testing.T) {
	t.Parallel()
	f := newFront(t, toolgrain.Config{}, fake("fk", nil))
	ctx := ctxT(t)
	raw, err := f.c.Call(ctx, protocol.MethodToolsCall, json.RawMessage(`{"name":"fk_progress","arguments":{},"_meta":{"progressToken":"tok"}}`))
	if err != nil || !strings.Contains(string(raw), "done") {
		t.Fatalf("progress: %s %v", raw, err)
	}
	p1 := nextNotification(t, f.c, protocol.MethodProgress)
	p2 := nextNotification(t, f.c, protocol.MethodProgress)
	if string(p1) != `{"progressToken":"tok","progress":1,"total":2}` || string(p2) != `{"progressToken":"tok","progress":2,"total":2}` {
		t.Errorf("progress: %s %s", p1, p2)
	}
	if r := f.call(t, "fk_log", `{}`); text(r) != "logged" {
		t.Errorf("log: %+v", r)
	}
	if l := nextNotification(t, f.c, protocol.MethodLogMessage); string(l) != `{"level":"warning","logger":"fake","data":"from upstream"}` {
		t.Errorf("log message: %s", l)
	}
}

// An upstream killed mid-call: that call fails as "Tool execution failed" with a report naming
// the tool and the upstream; the upstream is started again and the next calls are served.
func TestStdioUpstreamKilledMidCall(t *testing.T) {
	t.Parallel()
	f := newFront(t, toolgrain.Config{}, fake("fk", nil))
	first := f.gw.Status()[0].PID

	// The process exits while it handles the call.
	r := f.call(t, "fk_crash", `{}`)
	if !r.IsError || text(r) != toolgrain.FailedText {
		t.Errorf("crash: %+v", r)
	}
	e, tool := f.reps.wait(t, 1)
	if tool != "fk_crash" || !strings.Contains(e, `upstream "fk": tools/call "crash": upstream: connection lost`) {
		t.Errorf("report %q for %q", e, tool)
	}
	// The next call waits for the new process.
	if got := text(f.call(t, "fk_echo", `{"text":"again"}`)); got != "again" {
		t.Errorf("echo after the restart: %q", got)
	}
	second := f.gw.Status()[0].PID
	if second == 0 || second == first {
		t.Errorf("pids: %d then %d", first, second)
	}

	// Killed from outside (SIGKILL) during a call.
	ctx := ctxT(t)
	done := make(chan *protocol.CallToolResult, 1)
	go func() {
		res, _ := f.c.CallTool(ctx, "fk_slow", json.RawMessage(`{}`))
		done <- res
	}()
	mcptest.Eventually(t, "the call in flight", func() bool { return callsInFlight(f) == 1 })
	if err := syscall.Kill(second, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r == nil || !r.IsError || text(r) != toolgrain.FailedText {
		t.Errorf("killed: %+v", r)
	}
	if e, tool := f.reps.wait(t, 2); tool != "fk_slow" || !strings.Contains(e, "connection lost") {
		t.Errorf("report %q for %q", e, tool)
	}
	if got := text(f.call(t, "fk_echo", `{"text":"served"}`)); got != "served" {
		t.Errorf("echo after the kill: %q", got)
	}
	if st := f.gw.Status()[0]; st.PID == second || st.State != "up" {
		t.Errorf("status: %+v", st)
	}
}

// An upstream that cannot start leaves the server serving; its components are absent, Ready
// says why; once it starts, its tools appear and the clients are told.
func TestStdioDownAtStart(t *testing.T) {
	t.Parallel()
	flag := filepath.Join(t.TempDir(), "go")
	reps := newReports()
	srv, err := toolgrain.NewServer(toolgrain.Config{OnError: reps.onError})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	gw, err := gateway.New(srv, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if err := gw.Mount(fake("late", map[string]string{"FAKE_FAIL_UNLESS": flag})); err != nil {
		t.Fatal(err)
	}
	if err := gw.Mount(gateway.Mount{Name: "missing", Source: gateway.Stdio{Command: "/nonexistent/mcp-server"}}); err != nil {
		t.Fatal(err)
	}
	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	mcptest.Eventually(t, "both mounts down", func() bool {
		st := gw.Status()
		return st[0].State == "down" && st[1].State == "down"
	})
	var nr *gateway.NotReadyError
	if err := gw.Ready(); !errors.As(err, &nr) || len(nr.Mounts) != 2 || !strings.Contains(err.Error(), "missing down") || !strings.Contains(err.Error(), "/nonexistent/mcp-server") {
		t.Errorf("ready: %v", err)
	}
	if names := toolNames(t, c); len(names) != 0 {
		t.Errorf("tools while down: %v", names)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitTools(t, c, func(names []string) bool { return slices.Contains(names, "late_echo") })
	// Its tools are served before its resources and prompts are listed, which Ready waits for.
	mcptest.Eventually(t, "late listed", func() bool { return gw.Status()[0].Listed })
	if err := gw.Ready(); !errors.As(err, &nr) || len(nr.Mounts) != 1 || nr.Mounts[0].Name != "missing" {
		t.Errorf("ready once one is up: %v", err)
	}
}

// The upstream's request to the client (elicitation) goes to the client whose call caused it,
// and its answer back; a client that did not declare the capability is not asked, and the
// upstream is told why.
func TestStdioElicitation(t *testing.T) {
	t.Parallel()
	f := newFront(t, toolgrain.Config{}, fake("fk", nil))
	ctx := ctxT(t)

	// f.c declared no capability: the upstream's request is refused.
	r := f.call(t, "fk_elicit", `{}`)
	if r.IsError || !strings.Contains(text(r), "elicitation/create refused") || !strings.Contains(text(r), "elicitation (form mode)") {
		t.Errorf("without the capability: %+v", r)
	}

	c, err := f.srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(ctx, protocol.MethodInitialize, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"asker","version":"1"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify(protocol.MethodInitialized, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan *protocol.CallToolResult, 1)
	go func() {
		res, err := c.CallTool(ctx, "fk_elicit", json.RawMessage(`{}`))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var req *protocol.Message
	for req == nil {
		frame, err := c.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := protocol.Decode(frame); m != nil && m.Method == protocol.MethodElicitationCreate {
			req = m
		}
	}
	if !strings.Contains(string(req.Params), `"message":"Your name?"`) {
		t.Errorf("elicitation: %s", req.Params)
	}
	answer, _ := protocol.EncodeResult(req.ID, json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`))
	if err := c.Send(answer); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r == nil || text(r) != `{"action":"accept","content":{"name":"Ada"}}` {
		t.Errorf("with the capability: %+v", r)
	}
}
