package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
)

type (
	reindexIn struct {
		Index string `json:"index"`
		Limit int    `json:"limit,omitempty"`
	}
	reindexOut struct {
		Reindexed string `json:"reindexed"`
		Count     int    `json:"count"`
	}
)

// methodEnv is a server with the custom methods of these tests, and what they saw.
type methodEnv struct {
	rec       *mcptest.Recorder
	started   chan struct{} // acme/wait: the handler runs
	cancelled chan error    // acme/wait: the handler's context ended, with its cause
}

func newMethodEnv() *methodEnv {
	return &methodEnv{rec: mcptest.NewRecorder(), started: make(chan struct{}, 16), cancelled: make(chan error, 16)}
}

func (e *methodEnv) config() toolgrain.Config {
	return toolgrain.Config{
		Tools:   demo.Tools(),
		OnError: e.rec.OnError,
		Methods: []toolgrain.Method{
			{Name: "acme/reindex", Handler: toolgrain.TypedMethod(func(ctx context.Context, in reindexIn) (reindexOut, error) {
				switch in.Index {
				case "broken":
					return reindexOut{}, errors.New("index store: " + demo.Marker)
				case "panic":
					panic("reindex: " + demo.Marker)
				}
				return reindexOut{Reindexed: in.Index, Count: 3}, nil
			})},
			{Name: "acme/wait", Handler: toolgrain.TypedMethod(func(ctx context.Context, _ json.RawMessage) (reindexOut, error) {
				e.started <- struct{}{}
				<-ctx.Done()
				e.cancelled <- context.Cause(ctx)
				return reindexOut{Reindexed: "late"}, nil // never sent: the request was cancelled
			})},
			{Name: "acme/array", Handler: toolgrain.TypedMethod(func(ctx context.Context, _ struct{}) ([]int, error) {
				return []int{1}, nil
			})},
		},
		Extensions: map[string]json.RawMessage{"com.example/search": json.RawMessage(`{ "v": 1 }`), "com.example/plain": nil},
	}
}

// waitStarted waits for acme/wait's handler to run.
func (e *methodEnv) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-e.started:
	case <-time.After(mcptest.Watchdog):
		t.Fatal("the handler did not start")
	}
}

// waitCancelled waits for acme/wait's handler to see its context end, and returns the cause.
func (e *methodEnv) waitCancelled(t *testing.T) error {
	t.Helper()
	select {
	case cause := <-e.cancelled:
		if cause == nil {
			t.Error("the handler's context ended without a cause")
		}
		return cause
	case <-time.After(mcptest.Watchdog):
		t.Fatal("the handler's context did not end")
	}
	return nil
}

const (
	methodInternal = `"error":{"code":-32603,"message":"Internal error"}`
	reindexResult  = `{"reindexed":"books","count":3}`
)

// TestCustomMethodLegacy: a custom method in a 2025-11-25 session over stdio, with the error
// model, cancellation and the declared extensions.
func TestCustomMethodLegacy(t *testing.T) {
	t.Parallel()
	env := newMethodEnv()
	c := startStdio(t, env.config())
	c.Expect(`{"jsonrpc":"2.0","id":1,"method":"acme/reindex","params":{"index":"books"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request: acme/reindex before initialize"}}`)
	c.Expect(mcptest.InitRequest, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{},"experimental":{"com.example/plain":{},"com.example/search":{"v":1}}},"serverInfo":{"name":"toolgrain","version":"`+toolgrain.Version+`"}}}`)
	c.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"acme/reindex","params":{"index":"books"}}`, `{"jsonrpc":"2.0","id":2,"result":`+reindexResult+`}`)
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"acme/reindex","params":{"index":7}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: index: must be a string, got number"}}`)
	c.Expect(`{"jsonrpc":"2.0","id":4,"method":"acme/reindex","params":{"index":"broken"}}`, `{"jsonrpc":"2.0","id":4,`+methodInternal+`}`)
	c.Expect(`{"jsonrpc":"2.0","id":5,"method":"acme/reindex","params":{"index":"panic"}}`, `{"jsonrpc":"2.0","id":5,`+methodInternal+`}`)
	c.Expect(`{"jsonrpc":"2.0","id":6,"method":"acme/array"}`, `{"jsonrpc":"2.0","id":6,`+methodInternal+`}`)
	c.Expect(`{"jsonrpc":"2.0","id":7,"method":"acme/unknown"}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: acme/unknown"}}`)

	reports := env.rec.Wait(t, 3)
	// A report goes out after its answer, from the call's own actor: the next call may
	// report first. In the order of the calls (ids 4, 5, 6):
	slices.SortFunc(reports, func(a, b mcptest.Report) int {
		return strings.Compare(a.Details.Request().ID().String(), b.Details.Request().ID().String())
	})
	for i, want := range []string{"acme/reindex: index store: " + demo.Marker, "acme/reindex: handler panicked: reindex: " + demo.Marker, "acme/array: the result []int does not encode as a JSON object"} {
		r := reports[i]
		if !strings.HasPrefix(r.Err.Error(), want) || r.Details.Request().Method() == "" || r.Details.Request().ID().IsZero() {
			t.Errorf("report %d: %v (method %q, id %s), want %q", i, r.Err, r.Details.Request().Method(), r.Details.Request().ID(), want)
		}
	}
	if m := reports[0].Details.Request().Method(); m != "acme/reindex" {
		t.Errorf("report's method = %q", m)
	}

	// Cancellation: the handler's context ends, nothing is sent, nothing is reported.
	c.Send(`{"jsonrpc":"2.0","id":8,"method":"acme/wait"}`)
	env.waitStarted(t)
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`)
	env.waitCancelled(t)
	c.Expect(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, `{"jsonrpc":"2.0","id":9,"result":{}}`)
	c.Silent(200*time.Millisecond, "the cancelled method's late answer would be out")
	if n := len(env.rec.Snapshot()); n != 3 {
		t.Errorf("%d reports, want 3: the cancelled request reported something", n)
	}
}

// TestCustomMethodModern: the same method as a 2026-07-28 request, over stdio.
func TestCustomMethodModern(t *testing.T) {
	t.Parallel()
	env := newMethodEnv()
	c := startStdio(t, env.config())
	c.Expect(modernRequest(`"d"`, "server/discover", ""), `{"jsonrpc":"2.0","id":"d","result":{"resultType":"complete","ttlMs":0,"cacheScope":"public","supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{},"extensions":{"com.example/plain":{},"com.example/search":{"v":1}}},`+serverMeta+`}}`)
	c.Expect(modernRequest("1", "acme/reindex", `"index":"books"`), modernResult("1", `"reindexed":"books","count":3`))
	c.Expect(modernRequest("2", "acme/reindex", `"index":"broken"`), `{"jsonrpc":"2.0","id":2,`+methodInternal+`}`)
	c.Expect(modernRequest("3", "acme/reindex", `"limit":"x"`),
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: limit: must be an integer, got string"}}`)
	if r := env.rec.Wait(t, 1); !strings.Contains(r[0].Err.Error(), demo.Marker) {
		t.Errorf("report: %v", r[0].Err)
	}
	c.Send(modernRequest("4", "acme/wait", ""))
	env.waitStarted(t)
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`)
	env.waitCancelled(t)
	c.Expect(modernRequest("5", "tools/list", `"cursor":"x"`), `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: invalid cursor"}}`)
	c.Silent(200*time.Millisecond, "the cancelled method's late answer would be out")
}

func TestCustomMethodHTTP(t *testing.T) {
	t.Parallel()
	env := newMethodEnv()
	e := startHTTP(t, env.config())
	c := e.Session()
	c.Initialize()
	c.Expect(`{"jsonrpc":"2.0","id":1,"method":"acme/reindex","params":{"index":"books"}}`, `{"jsonrpc":"2.0","id":1,"result":`+reindexResult+`}`)
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"acme/reindex","params":{"index":"panic"}}`, `{"jsonrpc":"2.0","id":2,`+methodInternal+`}`)

	// Modern: Mcp-Method names it; closing the request's stream cancels it, silently.
	m := e.Session()
	modern := []string{"MCP-Protocol-Version", protocol.LatestModernVersion, "Mcp-Method", "acme/reindex", "Mcp-Session-Id", ""}
	assertReply(t, "modern", m.Post(modernRequest("3", "acme/reindex", `"index":"books"`), modern...), http.StatusOK,
		modernResult("3", `"reindexed":"books","count":3`))
	assertReply(t, "modern, no such method", m.Post(modernRequest("4", "acme/nope", ""), "MCP-Protocol-Version", protocol.LatestModernVersion, "Mcp-Method", "acme/nope"),
		http.StatusNotFound, `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: acme/nope"}}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		body := modernRequest("5", "acme/wait", "")
		resp, err := (&http.Client{}).Do(m.Request(ctx, http.MethodPost, body, "MCP-Protocol-Version", protocol.LatestModernVersion, "Mcp-Method", "acme/wait"))
		if err == nil {
			resp.Body.Close()
		}
	}()
	env.waitStarted(t)
	cancel()
	if cause := env.waitCancelled(t); cause == nil || !strings.Contains(cause.Error(), "cancelled by the client") {
		t.Errorf("cause %v", cause)
	}
	<-done
	if r := env.rec.Wait(t, 1); len(r) != 1 || !strings.Contains(r[0].Err.Error(), "panicked") {
		t.Errorf("reports: %v", r)
	}
}

func TestCustomMethodInMemory(t *testing.T) {
	t.Parallel()
	env := newMethodEnv()
	srv, err := toolgrain.NewServer(env.config())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := cl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := cl.Call(ctx, "acme/reindex", reindexIn{Index: "books"})
	if err != nil || string(raw) != reindexResult {
		t.Errorf("acme/reindex: %s %v", raw, err)
	}
	_, err = cl.Call(ctx, "acme/reindex", reindexIn{Index: "broken"})
	var we *protocol.WireError
	if !errors.As(err, &we) || we.Code != protocol.CodeInternalError || strings.Contains(we.Error(), demo.Marker) {
		t.Errorf("broken: %v", err)
	}
	// A modern request on the same connection.
	if err := cl.Send([]byte(modernRequest(`"m"`, "acme/reindex", `"index":"books"`))); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.Receive(ctx); err != nil || string(got) != modernResult(`"m"`, `"reindexed":"books","count":3`) {
		t.Errorf("modern: %s %v", got, err)
	}
	// A client that gives up: the handler's context ends, and Call returns at once.
	waitCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := cl.Call(waitCtx, "acme/wait", nil); done <- err }()
	env.waitStarted(t)
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Call = %v", err)
	}
	env.waitCancelled(t)
}

// TestCustomMethodLimit: a custom method holds a place under MaxCallsPerConnection.
func TestCustomMethodLimit(t *testing.T) {
	t.Parallel()
	env := newMethodEnv()
	cfg := env.config()
	cfg.Limits.MaxCallsPerConnection = 1
	c := startStdio(t, cfg)
	c.Initialize()
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"acme/wait"}`)
	env.waitStarted(t)
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"acme/reindex","params":{"index":"books"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-31000,"message":"Server busy: too many calls in flight on this connection (limit 1)","data":{"scope":"connection","limit":1}}}`)
	c.Expect(call("3", "echo", `{"text":"x"}`),
		`{"jsonrpc":"2.0","id":3,"error":{"code":-31000,"message":"Server busy: too many calls in flight on this connection (limit 1)","data":{"scope":"connection","limit":1}}}`)
	// Cancelling gives the place back.
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	env.waitCancelled(t)
	c.Expect(`{"jsonrpc":"2.0","id":4,"method":"acme/reindex","params":{"index":"books"}}`, `{"jsonrpc":"2.0","id":4,"result":`+reindexResult+`}`)
}

func TestCustomMethodConstruction(t *testing.T) {
	t.Parallel()
	ok := toolgrain.TypedMethod(func(ctx context.Context, _ struct{}) (struct{}, error) { return struct{}{}, nil })
	tests := []struct {
		name string
		cfg  toolgrain.Config
		want string
	}{
		{"spec method", toolgrain.Config{Methods: []toolgrain.Method{{Name: "tools/list", Handler: ok}}},
			`toolgrain: method "tools/list": in the tools/ namespace of the MCP specification`},
		{"spec namespace", toolgrain.Config{Methods: []toolgrain.Method{{Name: "notifications/acme", Handler: ok}}},
			`toolgrain: method "notifications/acme": in the notifications/ namespace of the MCP specification`},
		{"ping", toolgrain.Config{Methods: []toolgrain.Method{{Name: "ping", Handler: ok}}}, `toolgrain: method "ping": a method of the MCP specification`},
		{"no prefix", toolgrain.Config{Methods: []toolgrain.Method{{Name: "reindex", Handler: ok}}}, `toolgrain: method "reindex": needs a namespace prefix, as in acme/reindex`},
		{"bad prefix", toolgrain.Config{Methods: []toolgrain.Method{{Name: "9acme/reindex", Handler: ok}}},
			`toolgrain: method "9acme/reindex": prefix "9acme": each dot-separated label starts with a letter and ends with a letter or a digit, with letters, digits and hyphens between`},
		{"bad name", toolgrain.Config{Methods: []toolgrain.Method{{Name: "acme/re index", Handler: ok}}},
			`toolgrain: method "acme/re index": the name after the prefix must be letters, digits, '-', '_', '.' and '/', starting and ending with a letter or a digit`},
		{"rpc", toolgrain.Config{Methods: []toolgrain.Method{{Name: "rpc.acme/x", Handler: ok}}}, `toolgrain: method "rpc.acme/x": JSON-RPC 2.0 reserves the names that begin with "rpc."`},
		{"no handler", toolgrain.Config{Methods: []toolgrain.Method{{Name: "acme/x"}}}, `toolgrain: method "acme/x": no handler`},
		{"twice", toolgrain.Config{Methods: []toolgrain.Method{{Name: "acme/x", Handler: ok}, {Name: "acme/x", Handler: ok}}}, `toolgrain: method "acme/x": declared twice`},
		{"extension id", toolgrain.Config{Extensions: map[string]json.RawMessage{"search": nil}}, `toolgrain: extension "search": needs a vendor prefix, as in com.example/search`},
		{"extension settings", toolgrain.Config{Extensions: map[string]json.RawMessage{"com.example/search": json.RawMessage(`[1]`)}},
			`toolgrain: extension "com.example/search": its settings must be a JSON object`},
		{"tasks extension", toolgrain.Config{Extensions: map[string]json.RawMessage{protocol.ExtensionTasks: nil}},
			`toolgrain: extension "io.modelcontextprotocol/tasks": declared by the engine itself when tasks are on (Config.Tasks)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := toolgrain.NewServer(tt.cfg)
			if err == nil {
				srv.Close()
				t.Fatal("NewServer accepted it")
			}
			if err.Error() != tt.want {
				t.Errorf("\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}
