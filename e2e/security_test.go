package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/faults"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

// The security promises of RELIABILITY.md, one test each.

const secretArg = "CANARY-secret-argument-9b1c"

// secretTools fail in every way an unexpected failure can happen, each with secretArg among
// their arguments and never in their own error text.
func secretTools() []tools.Tool {
	type in struct {
		Password string `json:"password"`
		Mode     string `json:"mode"`
	}
	schema := json.RawMessage(`{"type":"object","properties":{"password":{"type":"string"},"mode":{"type":"string"}},"required":["password","mode"]}`)
	failing := tools.NewDependency("vault", func(ctx context.Context) (*struct{}, error) {
		return nil, errors.New("vault sealed")
	})
	return []tools.Tool{
		{
			Name: "login", InputSchema: schema, Timeout: 30 * time.Millisecond,
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`),
			Handler: tools.Func(func(ctx context.Context, v in) (*tools.Result, error) {
				switch v.Mode {
				case "error":
					return nil, errors.New("login rejected")
				case "panic":
					panic("login exploded")
				case "bad-output":
					return &tools.Result{StructuredContent: map[string]any{"ok": "yes"}}, nil
				case "hang":
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return &tools.Result{StructuredContent: map[string]any{"ok": true}}, nil
			}),
		},
		{Name: "vaulted", InputSchema: schema, Providers: []tools.Provider{failing}, Handler: tools.HandlerFunc(
			func(context.Context, *tools.Request) (*tools.Result, error) {
				return tools.TextResult("unreachable"), nil
			})},
		{Name: "probe", InputSchema: schema, Handler: tools.HandlerFunc(
			func(context.Context, *tools.Request) (*tools.Result, error) {
				return tools.TextResult("unreachable"), nil
			})},
	}
}

// secretCalls exercise every outcome of secretTools, and a few of the other paths.
func secretCalls() []string {
	args := func(mode string) string { return fmt.Sprintf(`{"password":%q,"mode":%q}`, secretArg, mode) }
	return []string{
		call("1", "login", args("error")),
		call("2", "login", args("panic")),
		call("3", "login", args("bad-output")),
		call("4", "login", args("hang")),
		call("5", "login", args("ok")),
		call("6", "vaulted", args("x")),
		call("7", "probe", args("x")),
		call("8", "login", fmt.Sprintf(`{"password":%q}`, secretArg)), // invalid: feedback
		call("9", "nope", fmt.Sprintf(`{"password":%q}`, secretArg)),  // unknown tool
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"login","arguments":{"password":"` + secretArg + `","mode":"error"},"_meta":{"progressToken":"` + secretArg + `"}}}`,
	}
}

// serveSecrets runs secretCalls against a server built from cfg, with the engine fault of the
// probe tool, and returns what the client saw.
func serveSecrets(t *testing.T, cfg toolgrain.Config) []string {
	restore := faults.Set(func(point, tool string) {
		if point == faults.RequestAnswer && tool == "probe" {
			panic("engine bug")
		}
	})
	defer restore()
	cfg.Tools = secretTools()
	c := startStdio(t, cfg)
	c.Initialize()
	var wire []string
	for _, req := range secretCalls() {
		c.Send(req)
		wire = append(wire, c.Recv())
	}
	return wire
}

// TestSecurityNoArgumentsInDiagnostics: whatever fails, neither the error OnError receives nor
// its details nor the two sinks the engine provides carry an argument of the call.
func TestSecurityNoArgumentsInDiagnostics(t *testing.T) {
	rec := mcptest.NewRecorder()
	var lines syncBuffer
	jsonSink := diagnostics.JSONLinesSink(&lines)
	core, logs := observer.New(zapcore.DebugLevel)
	zapSink := diagnostics.ZapSink(zap.New(core))
	serveSecrets(t, toolgrain.Config{OnError: func(err error, d *diagnostics.ToolErrorDetails) {
		jsonSink(err, d)
		zapSink(err, d)
		rec.OnError(err, d)
	}})
	reports := rec.Wait(t, 7) // error, panic, bad-output, timeout, provider, engine fault, and request 10
	for _, r := range reports {
		seen := fmt.Sprintf("%v %+v %#v %s %s %s", r.Err, r.Err, r.Err, r.Details.ToolName(), r.Details.Request().ID(), r.Details.Request().Method())
		if strings.Contains(seen, secretArg) {
			t.Errorf("a report carries an argument: %s", seen)
		}
	}
	if strings.Contains(lines.String(), secretArg) {
		t.Errorf("the JSON lines sink wrote an argument: %s", lines.String())
	}
	for _, e := range logs.All() {
		if s := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(s, secretArg) {
			t.Errorf("the zap sink logged an argument: %s", s)
		}
	}
}

// TestSecurityDetailsHoldNoArgumentsOrIdentity pins the shape of what OnError receives: the
// tool name, the request's id, method, tool name and _meta, and the id of the task a failure
// happened in (the server's own handle, not the caller's). Adding a field (arguments, an
// identity, a credential) must be a deliberate change of this promise.
func TestSecurityDetailsHoldNoArgumentsOrIdentity(t *testing.T) {
	t.Parallel()
	fields := func(v any) string {
		typ := reflect.TypeOf(v)
		var names []string
		for i := range typ.NumField() {
			names = append(names, typ.Field(i).Name+" "+typ.Field(i).Type.String())
		}
		return strings.Join(names, ", ")
	}
	if got, want := fields(diagnostics.ToolErrorDetails{}), "toolName string, request diagnostics.ToolRequest, taskID string"; got != want {
		t.Errorf("ToolErrorDetails fields: %s, want %s", got, want)
	}
	if got, want := fields(diagnostics.ToolRequest{}), "id protocol.ID, method string, toolName string, meta json.RawMessage"; got != want {
		t.Errorf("ToolRequest fields: %s, want %s", got, want)
	}
}

// TestSecurityMetaIsUntrusted: _meta is client input. Claims in it (an identity, a token)
// change nothing the engine does; it reaches the handler and the report as it came, marked
// unverified; a progress token of the wrong type is ignored; the zap sink does not log it; and
// a tool's metadata schema checks it like arguments, without quoting it back.
func TestSecurityMetaIsUntrusted(t *testing.T) {
	t.Parallel()
	const claim = `{"user":"admin","authorization":"Bearer CANARY-meta-token","progressToken":{"evil":true}}`
	gotMeta := make(chan json.RawMessage, 1)
	whoami := tools.Tool{
		Name: "whoami",
		Handler: tools.HandlerFunc(func(_ context.Context, r *tools.Request) (*tools.Result, error) {
			gotMeta <- r.Meta
			return nil, errors.New("whoami failed")
		}),
	}
	strict := tools.Tool{
		Name:       "strict",
		MetaSchema: json.RawMessage(`{"type":"object","properties":{"user":{"enum":["guest"]}},"additionalProperties":false}`),
		Handler:    tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) { return tools.TextResult("ok"), nil }),
	}
	rec := mcptest.NewRecorder()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{whoami, strict}, Logger: log, OnError: func(err error, d *diagnostics.ToolErrorDetails) {
		diagnostics.ZapSink(log)(err, d)
		rec.OnError(err, d)
	}})
	c.Initialize()
	c.Expect(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":`+claim+`}}`,
		`{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`) // no progress: the token was an object
	if got := <-gotMeta; string(got) != claim {
		t.Errorf("the handler got _meta %s, want it as sent", got)
	}
	if r := rec.Wait(t, 1)[0]; string(r.Details.Request().Meta()) != claim {
		t.Errorf("the report's _meta is %s, want it as sent", r.Details.Request().Meta())
	}
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"strict","_meta":{"user":"CANARY-meta-admin"}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"invalid _meta: user: must be \"guest\""}],"isError":true}}`)
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"strict","_meta":"not an object"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"invalid _meta: _meta: must be an object"}],"isError":true}}`)
	for _, e := range logs.All() {
		if s := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(s, "CANARY-meta") {
			t.Errorf("a log line carries the client's _meta: %s", s)
		}
	}
}

// TestSecurityDefaultLogsCarryNoArguments: at the default level of the server binary (info),
// and even at debug, no log line of the engine carries an argument, whatever happens to the
// call, with OnError left to its default (the zap sink).
func TestSecurityDefaultLogsCarryNoArguments(t *testing.T) {
	for _, level := range []zapcore.Level{zapcore.InfoLevel, zapcore.DebugLevel} {
		t.Run(level.String(), func(t *testing.T) {
			core, logs := observer.New(level)
			wire := serveSecrets(t, toolgrain.Config{Logger: zap.New(core)})
			if len(wire) != len(secretCalls()) {
				t.Fatalf("%d answers", len(wire))
			}
			// OnError runs after the answer.
			mcptest.Eventually(t, "7 failures logged", func() bool { return logs.FilterMessage("unexpected failure").Len() >= 7 })
			for _, e := range logs.All() {
				if s := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(s, secretArg) {
					t.Errorf("a log line carries an argument: %s", s)
				}
			}
		})
	}
}

// TestSecurityInternalDetailsNeverOnTheWire: the text of an unexpected failure (an error, a
// panic, a provider outage, a bad output, a timeout, a bug in the engine) never reaches the
// client, and neither does an argument the client did not ask to have echoed.
func TestSecurityInternalDetailsNeverOnTheWire(t *testing.T) {
	wire := serveSecrets(t, toolgrain.Config{OnError: func(error, *diagnostics.ToolErrorDetails) {}})
	for i, line := range wire {
		for _, secret := range []string{secretArg, "login rejected", "login exploded", "vault sealed", "engine bug", "timed out", "goroutine", ".go:"} {
			if strings.Contains(line, secret) {
				t.Errorf("answer %d carries %q: %s", i+1, secret, line)
			}
		}
	}
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	for i, mode := range []string{"error", "panic", "bad-output", "provider"} {
		c.Send(call(fmt.Sprint(i), "fail", `{"mode":"`+mode+`"}`))
		if line := c.Recv(); strings.Contains(line, demo.Marker) || !strings.Contains(line, toolgrain.FailedText) {
			t.Errorf("fail %s: %s", mode, line)
		}
	}
}
