package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

// With Config.HideForbiddenTools, a tool the caller may not see answers exactly as a tool that
// does not exist: the tests below call the hidden tool "deploy" and the unknown tool "absent"
// (a name of the same length, so that even Content-Length agrees) the same way and compare the
// whole answers, status and headers included, once the name is replaced.

// hiddenTools are "deploy", which needs the scope admin, mirrors its region argument in an
// Mcp-Param-Region header and may run as a task (it waits for release), and "status", which
// needs nothing.
func hiddenTools(release <-chan struct{}) []tools.Tool {
	return []tools.Tool{
		{Name: "deploy", Scopes: []string{"admin"}, TaskSupport: tools.TaskOptional,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`),
			Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				select {
				case <-release:
					return tools.TextResult("deployed"), nil
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
			})},
		{Name: "status", Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
			return tools.TextResult("ok"), nil
		})},
	}
}

// The callers: one subject, with and without the scope admin.
var (
	opsFull   = &toolgrain.Identity{Subject: "ops", Scopes: []string{"admin"}}
	opsNarrow = &toolgrain.Identity{Subject: "ops"}
)

var hideVerifier = toolgrain.TokenVerifierFunc(func(_ context.Context, token string) (*toolgrain.Identity, error) {
	switch token {
	case "full":
		return opsFull, nil
	case "narrow":
		return opsNarrow, nil
	}
	return nil, toolgrain.ErrInvalidToken
})

func hideConfig(release <-chan struct{}) toolgrain.Config {
	return toolgrain.Config{
		Tools:              hiddenTools(release),
		HideForbiddenTools: true,
		HTTP: toolgrain.HTTPConfig{
			AllowedHosts: []string{"127.0.0.1"},
			Auth:         &toolgrain.AuthConfig{Verifier: hideVerifier, Resource: "/mcp"},
		},
	}
}

// sameAnswer fails unless hidden, once "deploy" is replaced by "absent", is unknown.
func sameAnswer(t *testing.T, what, hidden, unknown string) {
	t.Helper()
	if got := strings.ReplaceAll(hidden, "deploy", "absent"); got != unknown {
		t.Errorf("%s: the hidden tool answers differently from an unknown one\nhidden:  %s\nunknown: %s", what, hidden, unknown)
	}
}

// httpAnswer is the whole of an HTTP answer but its Date: the status, every header, the body.
func httpAnswer(r mcptest.Reply) string {
	h := r.Header.Clone()
	h.Del("Date")
	var lines []string
	for k, vs := range h {
		lines = append(lines, k+": "+strings.Join(vs, ", "))
	}
	slices.Sort(lines)
	return fmt.Sprintf("%d\n%s\n%s%s", r.Status, strings.Join(lines, "\n"), r.Body, strings.Join(r.Events, "\n"))
}

// TestHiddenToolStdio: over stdio with an identity (ServeStdioAs), in both eras.
func TestHiddenToolStdio(t *testing.T) {
	t.Parallel()
	srv, err := toolgrain.NewServer(hideConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c := attachAs(t, srv, opsNarrow)
	c.Initialize()
	ask := func(req string) string { c.Send(req); return c.Recv() }
	for _, tc := range []struct{ name, req string }{
		{"legacy", call("1", "%s", `{}`)},
		{"modern", modernCall("2", "%s", `{"region":"eu"}`, `{}`)},
		{"modern, as a task", modernCall("3", "%s", `{}`, tasksCaps)},
	} {
		hidden := ask(strings.ReplaceAll(tc.req, `"%s"`, `"deploy"`))
		unknown := ask(strings.ReplaceAll(tc.req, `"%s"`, `"absent"`))
		if !strings.Contains(unknown, `unknown tool \"absent\"`) {
			t.Fatalf("%s: unknown tool answered %s", tc.name, unknown)
		}
		sameAnswer(t, tc.name, hidden, unknown)
	}
	// The caller with the scope is refused by the tool's input schema, which the hidden tool's
	// callers never reach.
	full := attachAs(t, srv, opsFull)
	full.Initialize()
	full.Expect(call("4", "deploy", `{"region":1}`), `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"invalid arguments: region: must be string, got number"}],"isError":true}}`)
}

// TestHiddenToolInMemory: a client connected with ConnectInMemoryAs, in both eras.
func TestHiddenToolInMemory(t *testing.T) {
	t.Parallel()
	srv, err := toolgrain.NewServer(hideConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c, err := srv.ConnectInMemoryAs(opsNarrow)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	ask := func(req string) string {
		if err := c.Send([]byte(req)); err != nil {
			t.Fatal(err)
		}
		b, err := c.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct{ name, req string }{
		{"legacy", call("1", "%s", `{}`)},
		{"modern", modernCall("2", "%s", `{"region":"eu"}`, `{}`)},
	} {
		sameAnswer(t, tc.name, ask(strings.ReplaceAll(tc.req, `"%s"`, `"deploy"`)), ask(strings.ReplaceAll(tc.req, `"%s"`, `"absent"`)))
	}
	_, hiddenErr := c.CallTool(ctx, "deploy", map[string]any{})
	_, unknownErr := c.CallTool(ctx, "absent", map[string]any{})
	sameAnswer(t, "CallTool", errText(hiddenErr), errText(unknownErr))
}

// TestHiddenToolHTTP: over Streamable HTTP, a legacy session's call and modern calls, with the
// hidden tool's Mcp-Param-Region header missing, wrong or right: none of them is checked
// before the caller is refused, since that too would tell the tool exists.
func TestHiddenToolHTTP(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, hideConfig(nil))
	s := e.Session()
	s.Token = "narrow"
	s.Initialize()
	sameAnswer(t, "legacy session", httpAnswer(s.Post(call("1", "deploy", `{}`))), httpAnswer(s.Post(call("1", "absent", `{}`))))

	m := e.Session()
	m.Token = "narrow"
	for _, tc := range []struct {
		name, args string
		extra      []string
	}{
		{"modern", `{}`, nil},
		{"modern, Mcp-Param-Region missing", `{"region":"eu"}`, nil},
		{"modern, Mcp-Param-Region wrong", `{"region":"eu"}`, []string{"Mcp-Param-Region", "us"}},
		{"modern, Mcp-Param-Region right", `{"region":"eu"}`, []string{"Mcp-Param-Region", "eu"}},
		{"modern, Mcp-Param-Region without a body value", `{}`, []string{"Mcp-Param-Region", "eu"}},
		{"modern, as a task", `{}`, nil},
	} {
		caps := `{}`
		if strings.HasSuffix(tc.name, "task") {
			caps = tasksCaps
		}
		hidden := m.ModernPost(modernCall("2", "deploy", tc.args, caps), tc.extra...)
		unknown := m.ModernPost(modernCall("2", "absent", tc.args, caps), tc.extra...)
		if unknown.Status != http.StatusBadRequest || !strings.Contains(unknown.Body, `unknown tool \"absent\"`) {
			t.Fatalf("%s: unknown tool answered %s", tc.name, httpAnswer(unknown))
		}
		sameAnswer(t, tc.name, httpAnswer(hidden), httpAnswer(unknown))
	}

	// Unhidden, the same requests reach the tool: the header check, then the call.
	m.Token = "full"
	if r := m.ModernPost(modernCall("3", "deploy", `{"region":"eu"}`, `{}`), "Mcp-Param-Region", "us"); r.Status != http.StatusBadRequest ||
		!strings.Contains(r.Body, "-32020") {
		t.Errorf("the caller with the scope, wrong header: %s", httpAnswer(r))
	}
}

// TestHiddenToolTasks: a task of a tool the caller may not see is a task it does not have:
// tasks/get, tasks/update and tasks/cancel answer as for an id no task has, while the task runs
// and once it has ended, and a listen stream of that caller following it is told nothing.
func TestHiddenToolTasks(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	e := startHTTP(t, hideConfig(release))
	full := &taskConn{t: t, srv: e.srv, do: httpDo(t, &mcptest.Session{HTTP: e.HTTP, Token: "full"})}
	narrow := &taskConn{t: t, srv: e.srv, do: httpDo(t, &mcptest.Session{HTTP: e.HTTP, Token: "narrow"})}
	id := full.start("deploy", `{}`)
	other := strings.Repeat("0", len(id)) // no task has it

	ops := []struct{ method, params string }{
		{"tasks/get", `"taskId":%q`},
		{"tasks/update", `"taskId":%q,"inputResponses":{"k":{"action":"cancel"}}`},
		{"tasks/cancel", `"taskId":%q`},
	}
	compare := func(when string) {
		t.Helper()
		for _, op := range ops {
			narrow.id.Store(10)
			hidden := narrow.request(op.method, fmt.Sprintf(op.params, id), tasksCaps).raw
			narrow.id.Store(10)
			unknown := narrow.request(op.method, fmt.Sprintf(op.params, other), tasksCaps).raw
			if !strings.Contains(unknown, "Task not found") {
				t.Fatalf("%s %s of no task: %s", when, op.method, unknown)
			}
			if strings.ReplaceAll(hidden, id, other) != unknown {
				t.Errorf("%s, %s: the hidden tool's task answers differently from no task\nhidden:  %s\nunknown: %s", when, op.method, hidden, unknown)
			}
		}
	}
	compare("running")
	if got := full.get(id); got.Result["status"] != "working" {
		t.Fatalf("the narrow caller's tasks/cancel reached the task: %s", got.raw)
	}

	// Two listen streams follow the task over stdio, one per caller.
	listen := func(who *toolgrain.Identity) *stdioClient {
		c := attachAs(t, e.srv, who)
		c.Send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `"]},` + envelope(tasksCaps) + `}}`)
		if got := c.Recv(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged"`) {
			t.Fatalf("ack: %s", got)
		}
		return c
	}
	seen, unseen := listen(opsFull), listen(opsNarrow)
	close(release)
	if got := seen.Recv(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","method":"notifications/tasks"`) || !strings.Contains(got, `"status":"completed"`) {
		t.Fatalf("the caller with the scope: %s", got)
	}
	// Both notifications would have been queued together, before this request's answer.
	unseen.Send(modernRequest("1", "server/discover", ""))
	if got := unseen.Recv(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result":`) {
		t.Errorf("the caller without the scope was told of the task: %s", got)
	}
	if got := full.await(id); got.Result["status"] != "completed" {
		t.Fatalf("task: %s", got.raw)
	}
	compare("completed")
	for _, c := range []*stdioClient{seen, unseen} {
		c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	}
}
