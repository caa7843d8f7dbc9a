package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
	"github.com/toolgrain/toolgrain/tools"
)

// The tasks extension (io.modelcontextprotocol/tasks) end to end, over stdio and over HTTP:
// every test runs on both transports against a fresh server.

const tasksCaps = `{"elicitation":{},"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// taskConn sends one modern request and returns its one answer, decoded.
type taskConn struct {
	t   testing.TB
	srv *toolgrain.Server
	do  func(body string) string
	id  atomic.Int64
}

// answer is a decoded JSON-RPC answer.
type answer struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw string
}

// request sends method with params (members, without braces) and the envelope of caps.
func (c *taskConn) request(method, params, caps string) answer {
	c.t.Helper()
	if params != "" {
		params += ","
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, c.id.Add(1), method, params, envelope(caps))
	raw := c.do(body)
	var a answer
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		c.t.Fatalf("%s: %v: %s", method, err, raw)
	}
	a.raw = raw
	return a
}

// call calls tool with args as a client that declares the tasks extension.
func (c *taskConn) call(tool, args string) answer {
	c.t.Helper()
	return c.request("tools/call", fmt.Sprintf(`"name":%q,"arguments":%s`, tool, args), tasksCaps)
}

// start calls tool and returns the id of the task it must be answered with.
func (c *taskConn) start(tool, args string) string {
	c.t.Helper()
	a := c.call(tool, args)
	id, _ := a.Result["taskId"].(string)
	if a.Result["resultType"] != "task" || id == "" {
		c.t.Fatalf("%s was not answered with a task: %s", tool, a.raw)
	}
	return id
}

func (c *taskConn) get(id string) answer {
	c.t.Helper()
	return c.request("tasks/get", fmt.Sprintf(`"taskId":%q`, id), tasksCaps)
}

// await polls the task until its status is one of want (or terminal), and returns it.
func (c *taskConn) await(id string, want ...string) answer {
	c.t.Helper()
	var a answer
	mcptest.Eventually(c.t, fmt.Sprintf("task %s to end or be %v", id, want), func() bool {
		a = c.get(id)
		st, _ := a.Result["status"].(string)
		return a.Error != nil || st == "completed" || st == "failed" || st == "cancelled" || contains(want, st)
	})
	return a
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// onBoth runs test over stdio and over HTTP, each with a server made from cfg.
func onBoth(t *testing.T, cfg func() toolgrain.Config, test func(t *testing.T, c *taskConn)) {
	t.Run("stdio", func(t *testing.T) {
		s := startStdio(t, cfg())
		c := &taskConn{t: t, srv: s.srv, do: func(body string) string {
			s.Send(body)
			return s.Recv()
		}}
		test(t, c)
	})
	t.Run("http", func(t *testing.T) {
		e := startHTTP(t, cfg())
		test(t, &taskConn{t: t, srv: e.srv, do: httpDo(t, e.Session())})
	})
}

// httpDo posts a modern request with its headers (Mcp-Name: the taskId for tasks/*) and
// returns its answer: the JSON body, or the last event of a stream.
func httpDo(t testing.TB, s *mcptest.Session) func(string) string {
	return func(body string) string {
		t.Helper()
		h := mcptest.ModernHeaders(t, body)
		var m struct {
			Method string `json:"method"`
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(body), &m)
		if strings.HasPrefix(m.Method, "tasks/") {
			h = append(h, "Mcp-Name", protocol.EncodeHeaderValue(m.Params.TaskID))
		}
		r := s.Post(body, h...)
		if r.IsSSE() {
			if len(r.Events) == 0 {
				t.Fatalf("empty stream for %s", body)
			}
			return r.Events[len(r.Events)-1]
		}
		return r.Body
	}
}

// waitTool returns a task tool that waits ms (or for its context), recording the cause of an
// early end on ended.
func waitTool(name string, sup tools.TaskSupport, ended chan<- error) tools.Tool {
	return tools.Tool{
		Name:        name,
		Description: "Waits.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}},"required":["ms"]}`),
		TaskSupport: sup,
		Handler: tools.Func(func(ctx context.Context, in struct {
			MS int `json:"ms"`
		}) (*tools.Result, error) {
			select {
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
				return tools.TextResult(fmt.Sprintf("waited %d", in.MS)), nil
			case <-ctx.Done():
				if ended != nil {
					ended <- context.Cause(ctx)
				}
				return nil, context.Cause(ctx)
			}
		}),
	}
}

func TestTaskLifecycle(t *testing.T) {
	t.Parallel()
	cfg := func() toolgrain.Config {
		return toolgrain.Config{Tools: append(demo.Tools(),
			waitTool("wait", tools.TaskOptional, nil), waitTool("must", tools.TaskRequired, nil))}
	}
	onBoth(t, cfg, func(t *testing.T, c *taskConn) {
		d := c.request("server/discover", "", `{}`)
		if caps, _ := d.Result["capabilities"].(map[string]any); caps["extensions"] == nil || !strings.Contains(d.raw, `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
			t.Errorf("discover does not offer the extension: %s", d.raw)
		}
		created := c.call("wait", `{"ms":200}`)
		r := created.Result
		id, _ := r["taskId"].(string)
		if r["resultType"] != "task" || len(id) != 26 || r["status"] != "working" || r["ttlMs"] != float64(3600000) ||
			r["pollIntervalMs"] != float64(1000) || r["createdAt"] == nil || r["lastUpdatedAt"] == nil || r["result"] != nil {
			t.Fatalf("CreateTaskResult: %s", created.raw)
		}
		if !strings.HasSuffix(created.raw, serverMeta+`}}`) {
			t.Errorf("CreateTaskResult lacks serverInfo: %s", created.raw)
		}
		// Found at once: the task was stored before the answer.
		if got := c.get(id); got.Result["status"] != "working" || got.Result["resultType"] != "complete" || got.Result["result"] != nil {
			t.Errorf("tasks/get while working: %s", got.raw)
		}
		done := c.await(id)
		if done.Result["status"] != "completed" || !strings.Contains(done.raw, `"result":{"content":[{"type":"text","text":"waited 200"}]}`) {
			t.Errorf("tasks/get once done: %s", done.raw)
		}
		// Without the extension the same tool is an ordinary call, a required one refused.
		plain := c.request("tools/call", `"name":"wait","arguments":{"ms":1}`, `{}`)
		if plain.Result["resultType"] != "complete" || plain.Result["taskId"] != nil || !strings.Contains(plain.raw, "waited 1") {
			t.Errorf("ordinary call: %s", plain.raw)
		}
		refused := c.request("tools/call", `"name":"must","arguments":{"ms":1}`, `{}`)
		if refused.Error == nil || refused.Error.Code != -32021 || string(refused.Error.Data) != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` {
			t.Errorf("a required task without the extension: %s", refused.raw)
		}
		// A tool without TaskSupport never runs as a task.
		if echo := c.call("echo", `{"text":"x"}`); echo.Result["resultType"] != "complete" {
			t.Errorf("echo: %s", echo.raw)
		}
		for _, tt := range []struct {
			method, params, caps string
			code                 int
		}{
			{"tasks/get", `"taskId":"` + id + `"`, `{}`, -32021},
			{"tasks/cancel", `"taskId":"` + id + `"`, `{}`, -32021},
			{"tasks/get", `"taskId":"nope"`, tasksCaps, -32602},
			{"tasks/get", `"taskId":" "`, tasksCaps, -32602},
			{"tasks/update", `"taskId":"` + id + `"`, tasksCaps, -32602}, // no inputResponses
			{"tasks/update", `"taskId":"` + id + `","inputResponses":{"k":3}`, tasksCaps, -32602},
			{"tasks/list", ``, tasksCaps, -32601},
			{"tasks/result", `"taskId":"` + id + `"`, tasksCaps, -32601},
		} {
			got := c.request(tt.method, tt.params, tt.caps)
			if got.Error == nil || got.Error.Code != tt.code {
				t.Errorf("%s %s: %s, want code %d", tt.method, tt.params, got.raw, tt.code)
			}
		}
		if got := c.request("tasks/get", `"taskId":"nope"`, tasksCaps); got.Error.Message != "Failed to retrieve task: Task not found" {
			t.Errorf("unknown task: %s", got.raw)
		}
		// tasks/update of a finished task is acknowledged and ignored.
		if got := c.request("tasks/update", `"taskId":"`+id+`","inputResponses":{}`, tasksCaps); got.Error != nil || got.Result["resultType"] != "complete" {
			t.Errorf("update of a finished task: %s", got.raw)
		}
	})
}

// TestTasksNotOffered: a server without task tools does not offer the extension.
func TestTasksNotOffered(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Send(modernRequest("1", "server/discover", ""))
	if got := c.Recv(); strings.Contains(got, "extensions") {
		t.Errorf("discover offers an extension: %s", got)
	}
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"x",`+envelope(tasksCaps)+`}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found: tasks/get"}}`)
	if err := c.srv.AddTools(waitTool("late", tools.TaskOptional, nil)); err == nil || !strings.Contains(err.Error(), "Config.Tasks.Enabled") {
		t.Errorf("AddTools of a task tool: %v", err)
	}
}

// TestTaskInput: a handler that asks for input (client.Input, client.Elicit) works unchanged in
// a task: the task waits input_required until tasks/update answers, part by part.
func TestTaskInput(t *testing.T) {
	t.Parallel()
	ask := tools.Tool{
		Name: "ask", Description: "Asks twice.", TaskSupport: tools.TaskOptional,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			schema := json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`)
			in, err := client.Input(ctx, map[string]client.InputRequest{
				"a": client.ElicitInput(&protocol.ElicitParams{Message: "A?", RequestedSchema: schema}),
				"b": client.RootsInput(),
			})
			if err != nil {
				return nil, err
			}
			roots, err := in["b"].Roots()
			if err != nil {
				return nil, err
			}
			res, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "Sure?", RequestedSchema: schema})
			if err != nil {
				return nil, err
			}
			a, _ := in["a"].Elicit()
			return tools.TextResult(fmt.Sprintf("%s %s %d %s %q", a.Action, a.Content, len(roots.Roots), res.Action, client.TaskID(ctx))), nil
		}),
	}
	cfg := func() toolgrain.Config { return toolgrain.Config{Tools: []tools.Tool{ask}} }
	onBoth(t, cfg, func(t *testing.T, c *taskConn) {
		// The roots request needs a capability the call did not declare: the task fails with
		// -32021 naming it.
		noRoots := c.start("ask", `{}`)
		if got := c.await(noRoots); got.Result["status"] != "failed" || !strings.Contains(got.raw, `"code":-32021`) || !strings.Contains(got.raw, `"roots":{}`) {
			t.Errorf("a task without the capability it needs: %s", got.raw)
		}
		a := c.request("tools/call", `"name":"ask","arguments":{}`, `{"elicitation":{},"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
		id := a.Result["taskId"].(string)
		got := c.await(id, "input_required")
		if got.Result["status"] != "input_required" || !strings.Contains(got.raw, `"inputRequests":{"a":{"method":"elicitation/create"`) ||
			!strings.Contains(got.raw, `"b":{"method":"roots/list","params":{}}`) {
			t.Fatalf("waiting for input: %s", got.raw)
		}
		// A malformed answer to an outstanding request is refused, and nothing is taken.
		if bad := c.request("tasks/update", `"taskId":"`+id+`","inputResponses":{"a":{"content":{}}}`, tasksCaps); bad.Error == nil || bad.Error.Code != -32602 || !strings.Contains(bad.Error.Message, `inputResponses["a"]`) {
			t.Errorf("malformed answer: %s", bad.raw)
		}
		// One answer (and an unknown key, ignored): the other is still asked for.
		up := c.request("tasks/update", `"taskId":"`+id+`","inputResponses":{"a":{"action":"accept","content":{"v":"x"}},"zzz":{"x":1}}`, tasksCaps)
		if up.Error != nil || up.Result["resultType"] != "complete" || up.Result["taskId"] != nil {
			t.Fatalf("update: %s", up.raw)
		}
		got = c.get(id)
		if got.Result["status"] != "input_required" || strings.Contains(got.raw, `"a":{`) || !strings.Contains(got.raw, `"b":{`) {
			t.Errorf("after a partial answer: %s", got.raw)
		}
		c.request("tasks/update", `"taskId":"`+id+`","inputResponses":{"b":{"roots":[{"uri":"file:///w"}]}}`, tasksCaps)
		got = c.await(id, "input_required")
		for got.Result["status"] == "input_required" && !strings.Contains(got.raw, "elicitation-1") {
			got = c.await(id, "input_required") // the roots answer is taken; the next question comes
		}
		if !strings.Contains(got.raw, `"elicitation-1":{"method":"elicitation/create"`) {
			t.Fatalf("the second question: %s", got.raw)
		}
		c.request("tasks/update", `"taskId":"`+id+`","inputResponses":{"elicitation-1":{"action":"decline"}}`, tasksCaps)
		done := c.await(id)
		want := fmt.Sprintf(`accept {\"v\":\"x\"} 1 decline \"%s\"`, id)
		if done.Result["status"] != "completed" || !strings.Contains(done.raw, want) {
			t.Errorf("done: %s, want the text %s", done.raw, want)
		}
	})
}

// TestTaskCancel: tasks/cancel cancels the handler's context (cause cancel.ErrTaskCancelled),
// the task ends cancelled whatever the handler returns, and nothing is reported.
func TestTaskCancel(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	ended := make(chan error, 4)
	cfg := func() toolgrain.Config {
		return toolgrain.Config{Tools: []tools.Tool{waitTool("wait", tools.TaskOptional, ended)}, OnError: rec.OnError}
	}
	onBoth(t, cfg, func(t *testing.T, c *taskConn) {
		id := c.start("wait", `{"ms":600000}`)
		ack := c.request("tasks/cancel", `"taskId":"`+id+`"`, tasksCaps)
		if ack.Error != nil || len(ack.Result) != 2 || ack.Result["resultType"] != "complete" {
			t.Fatalf("cancel ack: %s", ack.raw)
		}
		select {
		case cause := <-ended:
			if !errors.Is(cause, cancel.ErrTaskCancelled) {
				t.Errorf("the handler's context ended with %v", cause)
			}
		case <-time.After(mcptest.Watchdog):
			t.Fatal("the handler's context was not cancelled")
		}
		if got := c.await(id); got.Result["status"] != "cancelled" || got.Result["error"] != nil {
			t.Errorf("after cancel: %s", got.raw)
		}
		if again := c.request("tasks/cancel", `"taskId":"`+id+`"`, tasksCaps); again.Error != nil {
			t.Errorf("cancelling a cancelled task: %s", again.raw)
		}
		if unknown := c.request("tasks/cancel", `"taskId":"nope"`, tasksCaps); unknown.Error == nil || unknown.Error.Code != -32602 {
			t.Errorf("cancelling an unknown task: %s", unknown.raw)
		}
		mcptest.Eventually(t, "no task running", func() bool { return c.srv.Stats().RunningTasks == 0 })
		if n := len(rec.Snapshot()); n != 0 {
			t.Errorf("%d reports for a cancelled task", n)
		}
	})
}

// TestTaskPanic: an unexpected failure inside a task fails it with the generic error, and
// OnError gets the original with the task's id.
func TestTaskPanic(t *testing.T) {
	t.Parallel()
	var rec *mcptest.Recorder
	cfg := func() toolgrain.Config {
		rec = mcptest.NewRecorder()
		panicky := tools.Tool{Name: "boom", TaskSupport: tools.TaskOptional,
			Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
				panic("invariant violated: " + demo.Marker)
			})}
		return toolgrain.Config{Tools: []tools.Tool{panicky}, OnError: rec.OnError}
	}
	onBoth(t, cfg, func(t *testing.T, c *taskConn) {
		id := c.start("boom", `{}`)
		got := c.await(id)
		if got.Result["status"] != "failed" || got.Result["result"] != nil ||
			!strings.Contains(got.raw, `"statusMessage":"Tool execution failed"`) ||
			!strings.Contains(got.raw, `"error":{"code":-32603,"message":"Tool execution failed"}`) {
			t.Errorf("a task whose handler panicked: %s", got.raw)
		}
		if strings.Contains(got.raw, demo.Marker) {
			t.Errorf("the panic's text reached the client: %s", got.raw)
		}
		r := rec.Wait(t, 1)[0]
		var pe *tools.PanicError
		if !errors.As(r.Err, &pe) || !strings.Contains(r.Err.Error(), demo.Marker) {
			t.Errorf("OnError got %v, want the panic", r.Err)
		}
		if r.Details.TaskID() != id || r.Details.ToolName() != "boom" || r.Details.Request().Method() != "tools/call" {
			t.Errorf("details: task %q tool %q method %q", r.Details.TaskID(), r.Details.ToolName(), r.Details.Request().Method())
		}
	})
}

// TestTaskTTL: a task is forgotten when its TTL passes: its record is deleted (memory given
// back), it answers -32602, and one still running then is cancelled.
func TestTaskTTL(t *testing.T) {
	t.Parallel()
	var store *taskstore.Memory
	ended := make(chan error, 4)
	cfg := func() toolgrain.Config {
		store = taskstore.NewMemory()
		short := waitTool("short", tools.TaskOptional, ended)
		short.TaskTTL = 300 * time.Millisecond
		return toolgrain.Config{Tools: []tools.Tool{short}, Tasks: toolgrain.TaskConfig{Store: store}}
	}
	onBoth(t, cfg, func(t *testing.T, c *taskConn) {
		done := c.start("short", `{"ms":1}`)
		running := c.start("short", `{"ms":600000}`)
		if got := c.await(done); got.Result["status"] != "completed" || got.Result["ttlMs"] != float64(300) {
			t.Fatalf("before the TTL: %s", got.raw)
		}
		select {
		case cause := <-ended:
			if !errors.Is(cause, cancel.ErrTaskExpired) {
				t.Errorf("the running task's context ended with %v", cause)
			}
		case <-time.After(mcptest.Watchdog):
			t.Fatal("the running task was not stopped at its TTL")
		}
		mcptest.Eventually(t, "the tasks gone at their TTL", func() bool {
			return store.Len() == 0 && c.srv.Stats().LiveTasks == 0 && c.srv.Stats().RunningTasks == 0
		})
		for _, id := range []string{done, running} {
			if got := c.get(id); got.Error == nil || got.Error.Code != -32602 {
				t.Errorf("after the TTL: %s", got.raw)
			}
		}
	})
}

// TestTaskCaps: past the cap on tasks held, a call is refused with -31000; a task counts until
// its TTL passes, and its slot comes back then.
func TestTaskCaps(t *testing.T) {
	t.Parallel()
	cfg := func() toolgrain.Config {
		w := waitTool("wait", tools.TaskOptional, nil)
		w.TaskTTL = 300 * time.Millisecond
		return toolgrain.Config{Tools: []tools.Tool{w}, Tasks: toolgrain.TaskConfig{MaxTasks: 2}}
	}
	onBoth(t, cfg, func(t *testing.T, c *taskConn) {
		c.start("wait", `{"ms":1}`)
		c.start("wait", `{"ms":600000}`)
		got := c.call("wait", `{"ms":1}`)
		if got.Error == nil || got.Error.Code != -31000 || string(got.Error.Data) != `{"scope":"tasks","limit":2}` ||
			got.Error.Message != "Server busy: too many tasks on the server (limit 2; a task counts until its TTL passes)" {
			t.Fatalf("over the cap: %s", got.raw)
		}
		mcptest.Eventually(t, "no task left", func() bool { return c.srv.Stats().LiveTasks == 0 })
		c.start("wait", `{"ms":1}`)
	})
}

// TestTaskCallerScope: over HTTP with auth, a caller's tasks are its own: another caller gets
// "not found" for them, and the per-caller cap counts each caller apart.
func TestTaskCallerScope(t *testing.T) {
	t.Parallel()
	cfg := authConfig(mcptest.NewRecorder(), nil)
	cfg.Tools = append(cfg.Tools, waitTool("wait", tools.TaskOptional, nil))
	cfg.Tasks = toolgrain.TaskConfig{MaxTasksPerCaller: 1}
	e := startHTTP(t, cfg)
	alice, bob := e.Session(), e.Session()
	alice.Token, bob.Token = "alice-token", "bob-token"
	a := &taskConn{t: t, srv: e.srv, do: httpDo(t, alice)}
	b := &taskConn{t: t, srv: e.srv, do: httpDo(t, bob)}
	id := a.start("wait", `{"ms":600000}`)
	if got := b.get(id); got.Error == nil || got.Error.Code != -32602 || got.Error.Message != "Failed to retrieve task: Task not found" {
		t.Errorf("bob reads alice's task: %s", got.raw)
	}
	if got := b.request("tasks/cancel", `"taskId":"`+id+`"`, tasksCaps); got.Error == nil || got.Error.Code != -32602 {
		t.Errorf("bob cancels alice's task: %s", got.raw)
	}
	if got := a.get(id); got.Result["status"] != "working" {
		t.Errorf("alice's task: %s", got.raw)
	}
	if got := a.call("wait", `{"ms":1}`); got.Error == nil || string(got.Error.Data) != `{"scope":"tasks-caller","limit":1}` {
		t.Errorf("alice's second task: %s", got.raw)
	}
	b.start("wait", `{"ms":1}`)
	a.request("tasks/cancel", `"taskId":"`+id+`"`, tasksCaps)
}

// TestTaskDeferred: a tool with DeferTask asks for input on the call itself, then becomes a task
// (client.StartTask) whose new run gets the answers again.
func TestTaskDeferred(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	tool := tools.Tool{Name: "deferred", TaskSupport: tools.TaskOptional, DeferTask: true,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			runs.Add(1)
			name, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "Name?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
			if err != nil {
				return nil, err
			}
			if err := client.StartTask(ctx); err != nil {
				return nil, err
			}
			return tools.TextResult(fmt.Sprintf("hello %s in %q", name.Content, client.TaskID(ctx))), nil
		})}
	cfg := func() toolgrain.Config { runs.Store(0); return toolgrain.Config{Tools: []tools.Tool{tool}} }
	onBoth(t, cfg, func(t *testing.T, c *taskConn) {
		r1 := c.call("deferred", `{}`)
		state, _ := r1.Result["requestState"].(string)
		if r1.Result["resultType"] != "input_required" || r1.Result["taskId"] != nil || state == "" {
			t.Fatalf("round 1: %s", r1.raw)
		}
		r2 := c.request("tools/call", fmt.Sprintf(`"name":"deferred","arguments":{},"inputResponses":{"elicitation-1":{"action":"accept","content":{"name":"Ann"}}},"requestState":%q`, state), tasksCaps)
		id, _ := r2.Result["taskId"].(string)
		if r2.Result["resultType"] != "task" || id == "" || r2.Result["requestState"] != nil {
			t.Fatalf("round 2: %s", r2.raw)
		}
		done := c.await(id)
		if !strings.Contains(done.raw, fmt.Sprintf(`hello {\"name\":\"Ann\"} in \"%s\"`, id)) {
			t.Errorf("the task: %s", done.raw)
		}
		if n := runs.Load(); n != 3 {
			t.Errorf("%d runs, want 3 (round 1, round 2, the task)", n)
		}
		// Without the extension, StartTask lets the call go on as an ordinary one.
		plain := c.request("tools/call", fmt.Sprintf(`"name":"deferred","arguments":{},"inputResponses":{"elicitation-1":{"action":"accept","content":{"name":"Bo"}}},"requestState":%q`, state), `{"elicitation":{}}`)
		if plain.Error == nil && !strings.Contains(plain.raw, `hello`) {
			t.Errorf("without the extension: %s", plain.raw)
		}
	})
}

// TestTaskNotifications: a listen stream that follows a task gets notifications/tasks, each
// with the task's full state, tagged with its subscription id; a request without the extension
// may not follow tasks.
func TestTaskNotifications(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	gate := tools.Tool{Name: "gate", TaskSupport: tools.TaskOptional,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			select {
			case <-release:
				return tools.TextResult("opened"), nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		})}
	s := startStdio(t, toolgrain.Config{Tools: []tools.Tool{gate}})
	c := &taskConn{t: t, srv: s.srv, do: func(body string) string { s.Send(body); return s.Recv() }}
	id := c.start("gate", `{}`)
	s.Expect(`{"jsonrpc":"2.0","id":"L0","method":"subscriptions/listen","params":{"notifications":{"taskIds":["`+id+`"]},`+envelope(`{}`)+`}}`,
		`{"jsonrpc":"2.0","id":"L0","error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`)
	s.Send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `"]},` + envelope(tasksCaps) + `}}`)
	if got := s.Recv(); got != `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":{"taskIds":["`+id+`"]}}}` {
		t.Fatalf("ack: %s", got)
	}
	close(release)
	got := s.Recv()
	if !strings.HasPrefix(got, `{"jsonrpc":"2.0","method":"notifications/tasks","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"taskId":"`+id+`","status":"completed"`) ||
		!strings.Contains(got, `"result":{"content":[{"type":"text","text":"opened"}]}`) {
		t.Errorf("notification: %s", got)
	}
	s.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
}

// TestTaskShutdown: shutting down with tasks running cancels their handlers and returns; with
// a durable store the next server reports them failed (cmd/server's restart test kills the
// process instead).
func TestTaskShutdown(t *testing.T) {
	t.Parallel()
	store := taskstore.NewMemory()
	cfg := toolgrain.Config{Tools: []tools.Tool{waitTool("wait", tools.TaskOptional, nil)}, Tasks: toolgrain.TaskConfig{Store: store}}
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := attach(t, srv)
	conn := &taskConn{t: t, srv: srv, do: func(body string) string { c.Send(body); return c.Recv() }}
	var ids []string
	for range 20 {
		ids = append(ids, conn.start("wait", `{"ms":600000}`))
	}
	ctx, cancelCtx := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancelCtx()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The next server on the same store takes the tasks over.
	srv2, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	c2 := attach(t, srv2)
	conn2 := &taskConn{t: t, srv: srv2, do: func(body string) string { c2.Send(body); return c2.Recv() }}
	for _, id := range ids {
		if got := conn2.get(id); got.Result["status"] != "failed" || !strings.Contains(got.raw, toolgrain.TaskRestartedText) {
			t.Errorf("after the restart: %s", got.raw)
		}
	}
}

// heldStore is a task store whose writes of final records wait to be let through: held gets
// each such record when its Put starts, and the Put goes on once it receives from release.
type heldStore struct {
	*taskstore.Memory
	held    chan *taskstore.Record
	release chan struct{}
}

func newHeldStore() *heldStore {
	return &heldStore{Memory: taskstore.NewMemory(), held: make(chan *taskstore.Record, 16), release: make(chan struct{})}
}

func (s *heldStore) Put(ctx context.Context, rec *taskstore.Record) error {
	if rec.Status.Terminal() {
		s.held <- rec
		<-s.release
	}
	return s.Memory.Put(ctx, rec)
}

// TestTaskEndSeenOnceStored: a task's final status (completed, failed, cancelled) reaches a
// client only once the store holds it, so that a crash cannot take back a status a client
// has seen; until then tasks/get answers the task's last stored state.
func TestTaskEndSeenOnceStored(t *testing.T) {
	t.Parallel()
	var store *heldStore
	cfg := func() toolgrain.Config {
		store = newHeldStore()
		return toolgrain.Config{Tools: []tools.Tool{waitTool("wait", tools.TaskOptional, nil)},
			Tasks: toolgrain.TaskConfig{Store: store}}
	}
	onBoth(t, cfg, func(t *testing.T, c *taskConn) {
		for _, end := range []struct{ status, args string }{
			{"completed", `{"ms":0}`},
			{"cancelled", `{"ms":600000}`},
		} {
			id := c.start("wait", end.args)
			if end.status == "cancelled" {
				c.request("tasks/cancel", `"taskId":"`+id+`"`, tasksCaps)
			}
			var rec *taskstore.Record
			select {
			case rec = <-store.held:
			case <-time.After(mcptest.Watchdog):
				t.Fatalf("the task's final record was not written")
			}
			if rec.ID != id || string(rec.Status) != end.status {
				t.Fatalf("the final record written: %+v", rec)
			}
			// The final write is under way: the task's actor holds its end, the store does not.
			if got := c.get(id); got.Result["status"] != "working" || got.Result["result"] != nil {
				t.Errorf("tasks/get while its %s record is being written: %s", end.status, got.raw)
			}
			store.release <- struct{}{}
			if got := c.await(id); got.Result["status"] != end.status {
				t.Errorf("tasks/get once its %s record is stored: %s", end.status, got.raw)
			}
		}
	})
}
