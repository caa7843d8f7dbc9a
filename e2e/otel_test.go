package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// The OpenTelemetry spans, asserted exactly against the MCP semantic conventions with the SDK's
// span recorder. A span ends just before its answer is queued, so a test that has read the
// answer finds the span recorded: no polling.

// clientTrace is the trace id every test request carries in its params._meta.
const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// parentSpan is the span id of the client span of test request n.
func parentSpan(n int) string { return fmt.Sprintf("00f067aa0ba9%04x", n) }

// traceMeta is the _meta member that makes test request n a child of the client's span n.
func traceMeta(n int) string {
	return fmt.Sprintf(`"_meta":{"traceparent":"00-%s-%s-01","baggage":"tenant=acme"}`, clientTrace, parentSpan(n))
}

// spans records the spans of a tracer provider made for one test.
type spans struct {
	t  testing.TB
	sr *tracetest.SpanRecorder
	tp *sdktrace.TracerProvider
}

func newSpans(t testing.TB) *spans {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &spans{t: t, sr: sr, tp: tp}
}

// served returns the one server span whose parent is the client's span n.
func (s *spans) served(n int) sdktrace.ReadOnlySpan {
	s.t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, sp := range s.sr.Ended() {
		if sp.Parent().SpanID().String() == parentSpan(n) {
			found = append(found, sp)
		}
	}
	if len(found) != 1 {
		s.t.Fatalf("%d spans with the parent %s, want 1", len(found), parentSpan(n))
	}
	return found[0]
}

// children returns the names of the ended spans whose parent is sp, sorted.
func (s *spans) children(sp sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, c := range s.sr.Ended() {
		if c.Parent().SpanID() == sp.SpanContext().SpanID() {
			names = append(names, c.Name())
		}
	}
	slices.Sort(names)
	return names
}

// child returns the ended span named name whose parent is sp.
func (s *spans) child(sp sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	s.t.Helper()
	for _, c := range s.sr.Ended() {
		if c.Parent().SpanID() == sp.SpanContext().SpanID() && c.Name() == name {
			return c
		}
	}
	s.t.Fatalf("no span %q under %q", name, sp.Name())
	return nil
}

// named returns the ended spans called name.
func (s *spans) named(name string) []sdktrace.ReadOnlySpan {
	var found []sdktrace.ReadOnlySpan
	for _, sp := range s.sr.Ended() {
		if sp.Name() == name {
			found = append(found, sp)
		}
	}
	return found
}

func attrsOf(sp sdktrace.ReadOnlySpan) map[string]string {
	m := make(map[string]string)
	for _, kv := range sp.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// span is what a test expects of a server span.
type span struct {
	name   string
	attrs  map[string]string
	status codes.Code
	desc   string
}

// checkServer asserts that sp is a SERVER span of the client's trace, child of its span n,
// with exactly the name, attributes and status of want.
func checkServer(t *testing.T, sp sdktrace.ReadOnlySpan, n int, want span) {
	t.Helper()
	if sp.Name() != want.name || sp.SpanKind() != trace.SpanKindServer {
		t.Errorf("span %q kind %v, want %q kind server", sp.Name(), sp.SpanKind(), want.name)
	}
	p := sp.Parent()
	if p.TraceID().String() != clientTrace || p.SpanID().String() != parentSpan(n) || !p.IsRemote() {
		t.Errorf("%s: parent %v, want the remote span %s of trace %s", want.name, p, parentSpan(n), clientTrace)
	}
	if sp.SpanContext().TraceID().String() != clientTrace {
		t.Errorf("%s: trace %s, want the client's %s", want.name, sp.SpanContext().TraceID(), clientTrace)
	}
	if got := attrsOf(sp); !reflect.DeepEqual(got, want.attrs) {
		t.Errorf("%s attributes\n got: %v\nwant: %v", want.name, got, want.attrs)
	}
	if st := sp.Status(); st.Code != want.status || st.Description != want.desc {
		t.Errorf("%s status %v %q, want %v %q", want.name, st.Code, st.Description, want.status, want.desc)
	}
}

// with returns a copy of base with more attributes, given as name/value pairs.
func with(base map[string]string, kv ...string) map[string]string {
	m := make(map[string]string, len(base)+len(kv)/2)
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// stdioCall is the tools/call line of test request n.
func stdioCall(n int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, n, tool, args, traceMeta(n))
}

// TestTraceToolCalls: one server span per tools/call, named and attributed as the conventions
// say, parented on the client's span from _meta, with child spans for validation and the
// handler; every isError result is error.type tool_error, whether the client got validation
// feedback, a public error or the generic failure.
func TestTraceToolCalls(t *testing.T) {
	t.Parallel()
	tr := newSpans(t)
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Telemetry: toolgrain.TelemetryConfig{TracerProvider: tr.tp}})
	c.Initialize()
	call := func(tool string) map[string]string {
		return map[string]string{
			"mcp.method.name": "tools/call", "gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool",
			"network.transport": "pipe", "mcp.protocol.version": "2025-11-25",
		}
	}
	tests := []struct {
		tool, args string
		outcome    string
		errorType  string
		children   []string
		handlerErr bool
	}{
		{"echo", `{"text":"hello"}`, "ok", "", []string{"toolgrain.handler", "toolgrain.validate"}, false},
		{"echo", `{"text":5}`, "invalid", "tool_error", []string{"toolgrain.validate"}, false},
		{"fail", `{"mode":"result"}`, "tool_error", "tool_error", []string{"toolgrain.handler", "toolgrain.validate"}, false},
		{"fail", `{"mode":"error"}`, "failed", "tool_error", []string{"toolgrain.handler", "toolgrain.validate"}, true},
		{"fail", `{"mode":"panic"}`, "failed", "tool_error", []string{"toolgrain.handler", "toolgrain.validate"}, true},
		{"fail", `{"mode":"bad-output"}`, "failed", "tool_error", []string{"toolgrain.handler", "toolgrain.validate"}, true},
		{"fail", `{"mode":"provider"}`, "failed", "tool_error", []string{"toolgrain.handler", "toolgrain.validate"}, true},
	}
	for i, tt := range tests {
		n := i + 1
		c.Send(stdioCall(n, tt.tool, tt.args))
		if got := c.Recv(); !strings.HasPrefix(got, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":`, n)) {
			t.Fatalf("%s %s: %s", tt.tool, tt.args, got)
		}
		want := span{name: "tools/call " + tt.tool, attrs: with(call(tt.tool), "jsonrpc.request.id", fmt.Sprint(n), "toolgrain.tool.outcome", tt.outcome)}
		if tt.errorType != "" {
			want.attrs["error.type"] = tt.errorType
			want.status = codes.Error
		}
		sp := tr.served(n)
		checkServer(t, sp, n, want)
		if got := tr.children(sp); !slices.Equal(got, tt.children) {
			t.Errorf("%s %s: child spans %v, want %v", tt.tool, tt.args, got, tt.children)
		}
		if slices.Contains(tt.children, "toolgrain.handler") {
			h := tr.child(sp, "toolgrain.handler")
			if failed := h.Status().Code == codes.Error; failed != tt.handlerErr || h.Status().Description != "" {
				t.Errorf("%s %s: handler span status %v %q", tt.tool, tt.args, h.Status().Code, h.Status().Description)
			}
		}
	}
}

// TestTraceCancelledCall: a cancelled call's span ends when it is cancelled, with no error (the
// client chose to end it) and toolgrain.request.cancelled; notifications/cancelled has a span
// of its own.
func TestTraceCancelledCall(t *testing.T) {
	t.Parallel()
	tr := newSpans(t)
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Telemetry: toolgrain.TelemetryConfig{TracerProvider: tr.tp}})
	c.Initialize()
	c.Send(stdioCall(1, "sleep", `{"ms":600000}`))
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,%s}}`, traceMeta(2)))
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, `{"jsonrpc":"2.0","id":3,"result":{}}`)
	checkServer(t, tr.served(1), 1, span{name: "tools/call sleep", attrs: map[string]string{
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "1", "gen_ai.tool.name": "sleep", "gen_ai.operation.name": "execute_tool",
		"network.transport": "pipe", "mcp.protocol.version": "2025-11-25",
		"toolgrain.request.cancelled": "true", "toolgrain.request.cancel_cause": "client",
	}})
	checkServer(t, tr.served(2), 2, span{name: "notifications/cancelled", attrs: map[string]string{
		"mcp.method.name": "notifications/cancelled", "network.transport": "pipe", "mcp.protocol.version": "2025-11-25",
	}})
}

// TestTraceJSONRPCErrors: a request answered with a JSON-RPC error has error.type and
// rpc.response.status_code set to its code, and the error's message as its status. What a
// client names freely (an unknown tool, an unknown method) stays out of span names and
// attributes.
func TestTraceJSONRPCErrors(t *testing.T) {
	t.Parallel()
	tr := newSpans(t)
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Telemetry: toolgrain.TelemetryConfig{TracerProvider: tr.tp}})
	c.Initialize()
	c.Send(stdioCall(1, "no-such-tool", `{}`))
	c.Recv()
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"req-2","method":"no/such/method","params":{%s}}`, traceMeta(2)))
	c.Recv()
	checkServer(t, tr.served(1), 1, span{name: "tools/call", attrs: map[string]string{
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "1", "gen_ai.operation.name": "execute_tool",
		"network.transport": "pipe", "mcp.protocol.version": "2025-11-25",
		"error.type": "-32602", "rpc.response.status_code": "-32602",
	}, status: codes.Error, desc: `Invalid params: unknown tool "no-such-tool"`})
	checkServer(t, tr.served(2), 2, span{name: "_OTHER", attrs: map[string]string{
		"mcp.method.name": "_OTHER", "jsonrpc.request.id": "req-2",
		"network.transport": "pipe", "mcp.protocol.version": "2025-11-25",
		"error.type": "-32601", "rpc.response.status_code": "-32601",
	}, status: codes.Error, desc: "Method not found: no/such/method"})
}

// TestTraceModernRequest: a modern request's span has the version of its envelope and no
// session, and an input_required answer is no error.
func TestTraceModernRequest(t *testing.T) {
	t.Parallel()
	tr := newSpans(t)
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Telemetry: toolgrain.TelemetryConfig{TracerProvider: tr.tp}})
	meta := fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-%s-%s-01"}`, clientTrace, parentSpan(1))
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta + `}}`)
	if got := c.Recv(); !strings.Contains(got, `"resultType":"complete"`) {
		t.Fatalf("modern call: %s", got)
	}
	checkServer(t, tr.served(1), 1, span{name: "tools/call echo", attrs: map[string]string{
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "1", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"network.transport": "pipe", "mcp.protocol.version": "2026-07-28", "toolgrain.tool.outcome": "ok",
	}})
}

// TestTraceHTTP: over Streamable HTTP the span of a legacy session's request carries the
// session id and is linked to the HTTP server span of the POST that carried it; a modern
// request's span has no session, and is linked too.
func TestTraceHTTP(t *testing.T) {
	t.Parallel()
	tr := newSpans(t)
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools(), Telemetry: toolgrain.TelemetryConfig{TracerProvider: tr.tp}})
	if err != nil {
		t.Fatal(err)
	}
	// The host's HTTP instrumentation, as otelhttp would do it: a SERVER span per request, in
	// the request's context.
	httpTracer := tr.tp.Tracer("host-http")
	posts := make(chan trace.SpanContext, 16)
	mcp := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, sp := httpTracer.Start(r.Context(), r.Method+" /mcp", trace.WithSpanKind(trace.SpanKindServer))
		defer sp.End()
		if r.Method == http.MethodPost {
			posts <- sp.SpanContext()
		}
		mcp.ServeHTTP(w, r.WithContext(ctx))
	}))
	e := &httpEnv{HTTP: &mcptest.HTTP{T: t, URL: ts.URL + "/mcp", Client: &http.Client{Timeout: mcptest.Watchdog}}, srv: srv, ts: ts}
	t.Cleanup(func() {
		_ = srv.Close()
		ts.Close()
		e.Client.CloseIdleConnections()
	})
	legacy := e.Session()
	legacy.Initialize()
	<-posts // initialize
	<-posts // notifications/initialized
	legacy.Expect(stdioCall(1, "echo", `{"text":"hi"}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	post := <-posts
	sp := tr.served(1)
	checkServer(t, sp, 1, span{name: "tools/call echo", attrs: map[string]string{
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "1", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"network.transport": "tcp", "mcp.protocol.version": "2025-11-25", "mcp.session.id": legacy.ID, "toolgrain.tool.outcome": "ok",
	}})
	if l := sp.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != post.SpanID() || l[0].SpanContext.TraceID() != post.TraceID() {
		t.Errorf("links %v, want the HTTP span %v", l, post)
	}

	modern := e.Session()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-%s-%s-01"}}}`, clientTrace, parentSpan(2))
	if r := modern.ModernPost(body); r.Status != http.StatusOK {
		t.Fatalf("modern POST: %d %s", r.Status, r.Body)
	}
	post = <-posts
	sp = tr.served(2)
	checkServer(t, sp, 2, span{name: "tools/call echo", attrs: map[string]string{
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "2", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"network.transport": "tcp", "mcp.protocol.version": "2026-07-28", "toolgrain.tool.outcome": "ok",
	}})
	if l := sp.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != post.SpanID() {
		t.Errorf("links %v, want the HTTP span %v", l, post)
	}
	// The initialize span has the session id it opened, and the version it negotiated.
	init := tr.named("initialize")
	if len(init) != 1 || attrsOf(init[0])["mcp.session.id"] != legacy.ID || attrsOf(init[0])["mcp.protocol.version"] != "2025-11-25" {
		t.Errorf("initialize spans: %v", init)
	}
}

// spanText is everything a span carries as text: its name, attributes, status and events.
func spanText(sp sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	b.WriteString(sp.Name())
	for _, kv := range sp.Attributes() {
		fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
	}
	b.WriteString(" " + sp.Status().Description)
	for _, ev := range sp.Events() {
		b.WriteString(" " + ev.Name)
		for _, kv := range ev.Attributes {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
		}
	}
	return b.String()
}

// TestTracePrivacy: by default no span carries a call's arguments, its result or the text of
// an unexpected failure; each goes on the spans of the tools the operator opted in for, and
// only those.
func TestTracePrivacy(t *testing.T) {
	t.Parallel()
	const canary = "ARG-canary-42"
	run := func(t *testing.T, cfg toolgrain.Config) *spans {
		tr := newSpans(t)
		cfg.Tools, cfg.Telemetry.TracerProvider = demo.Tools(), tr.tp
		c := startStdio(t, cfg)
		c.Initialize()
		c.Send(stdioCall(1, "echo", `{"text":"`+canary+`"}`))
		c.Recv()
		c.Send(stdioCall(2, "greet", `{"name":"`+canary+`"}`))
		c.Recv()
		for i, mode := range []string{"error", "panic", "bad-output", "provider"} {
			c.Send(stdioCall(3+i, "fail", `{"mode":"`+mode+`"}`))
			c.Recv()
		}
		return tr
	}

	t.Run("default", func(t *testing.T) {
		tr := run(t, toolgrain.Config{})
		all := tr.sr.Ended()
		if len(all) < 6*3 {
			t.Fatalf("%d spans, want a server span and two children per call", len(all))
		}
		for _, sp := range all {
			if text := spanText(sp); strings.Contains(text, canary) || strings.Contains(text, demo.Marker) || strings.Contains(text, "Hello") {
				t.Errorf("span carries private text: %s", text)
			}
		}
	})

	t.Run("opted_in", func(t *testing.T) {
		tr := run(t, toolgrain.Config{Telemetry: toolgrain.TelemetryConfig{TraceArguments: []string{"echo"}, TraceResults: []string{"echo"}, TraceFailures: true}})
		echo := attrsOf(tr.served(1))
		if echo["gen_ai.tool.call.arguments"] != `{"text":"`+canary+`"}` ||
			echo["gen_ai.tool.call.result"] != `{"content":[{"type":"text","text":"`+canary+`"}]}` {
			t.Errorf("echo, opted in: %v", echo)
		}
		if text := spanText(tr.served(2)); strings.Contains(text, canary) {
			t.Errorf("greet, not opted in: %s", text)
		}
		for i, mode := range []string{"error", "panic", "bad-output", "provider"} {
			sp := tr.served(3 + i)
			ev := sp.Events()
			// The output's schema error does not quote the output, marker and all.
			if len(ev) != 1 || ev[0].Name != "exception" || (mode != "bad-output" && !strings.Contains(spanText(sp), demo.Marker)) {
				t.Errorf("%s: events %v, want the failure's exception", mode, ev)
			}
			if sp.Status().Description != "" {
				t.Errorf("%s: status description %q: the failure's text goes to the event only", sp.Name(), sp.Status().Description)
			}
		}
	})
}

// TestTraceHandlerContext: the handler's context carries its span, a child of the request's,
// and the baggage of the request's _meta, so that the tool's own calls join the trace.
func TestTraceHandlerContext(t *testing.T) {
	t.Parallel()
	tr := newSpans(t)
	seen := make(chan context.Context, 1)
	probe := tools.Tool{Name: "probe", InputSchema: []byte(`{"type":"object"}`),
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			seen <- ctx
			return tools.TextResult("ok"), nil
		})}
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{probe}, Telemetry: toolgrain.TelemetryConfig{TracerProvider: tr.tp}})
	c.Initialize()
	c.Send(stdioCall(1, "probe", `{}`))
	c.Recv()
	ctx := <-seen
	handler := tr.child(tr.served(1), "toolgrain.handler")
	if got := trace.SpanContextFromContext(ctx); got.SpanID() != handler.SpanContext().SpanID() || got.TraceID().String() != clientTrace {
		t.Errorf("handler context's span %v, want the handler span %v", got, handler.SpanContext())
	}
	if got := baggage.FromContext(ctx).Member("tenant").Value(); got != "acme" {
		t.Errorf("baggage tenant = %q, want acme", got)
	}
}

// endOrder is a span processor that keeps the order in which spans end.
type endOrder struct {
	mu    sync.Mutex
	ended []sdktrace.ReadOnlySpan
}

func (o *endOrder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (o *endOrder) Shutdown(context.Context) error                  { return nil }
func (o *endOrder) ForceFlush(context.Context) error                { return nil }
func (o *endOrder) OnEnd(s sdktrace.ReadOnlySpan) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = append(o.ended, s)
}

// endedBefore returns the names of the children of sp that ended before it, sorted.
func (o *endOrder) endedBefore(sp sdktrace.ReadOnlySpan) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var names []string
	for _, s := range o.ended {
		if s.SpanContext().SpanID() == sp.SpanContext().SpanID() {
			break
		}
		if s.Parent().SpanID() == sp.SpanContext().SpanID() {
			names = append(names, s.Name())
		}
	}
	slices.Sort(names)
	return names
}

// traceparentActor answers every call with the traceparent of the message's header.
type traceparentActor struct{}

// A call with the argument "stop" stops it instead.
func (traceparentActor) Receive(ctx actor.Context) {
	if call, ok := ctx.Message().(*tools.ActorCall); ok {
		if strings.Contains(string(call.Arguments), `"stop"`) {
			ctx.Stop(ctx.Self())
			return
		}
		ctx.Respond(&tools.ActorResult{Result: tools.TextResult(ctx.MessageHeader().Get("traceparent"))})
	}
}

// TestTraceActorTool: the call of an actor-backed tool is a child span, whose context the
// actor finds in the message header.
func TestTraceActorTool(t *testing.T) {
	t.Parallel()
	tr := newSpans(t)
	tool := tools.Tool{Name: "actor", InputSchema: []byte(`{"type":"object"}`),
		Handler: tools.NewActorPropsHandler(actor.PropsFromProducer(func() actor.Actor { return traceparentActor{} }))}
	order := &endOrder{}
	tr.tp.RegisterSpanProcessor(order)
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{tool}, Telemetry: toolgrain.TelemetryConfig{TracerProvider: tr.tp}})
	c.Initialize()
	c.Send(stdioCall(1, "actor", `{}`))
	got := c.Recv()
	sp := tr.served(1)
	if names := tr.children(sp); !slices.Equal(names, []string{"toolgrain.actor_call", "toolgrain.validate"}) {
		t.Errorf("child spans %v", names)
	}
	// The actor's call is over once its reply is in: its span ends before the request's, which
	// ends as the answer is queued.
	if names := order.endedBefore(sp); !slices.Equal(names, []string{"toolgrain.actor_call", "toolgrain.validate"}) {
		t.Errorf("child spans ended before the request's span: %v", names)
	}
	call := tr.child(sp, "toolgrain.actor_call").SpanContext()
	want := fmt.Sprintf("00-%s-%s-01", call.TraceID(), call.SpanID())
	if !strings.Contains(got, `"text":"`+want+`"`) {
		t.Errorf("the actor saw traceparent %s, want %s", got, want)
	}
	// So for a call that fails: the actor stops instead of replying.
	c.Send(stdioCall(2, "actor", `{"stop":true}`))
	if got := c.Recv(); !strings.Contains(got, `"isError":true`) {
		t.Errorf("a call whose actor stopped: %s", got)
	}
	if names := order.endedBefore(tr.served(2)); !slices.Equal(names, []string{"toolgrain.actor_call", "toolgrain.validate"}) {
		t.Errorf("child spans ended before the failed request's span: %v", names)
	}
}

// TestTraceOff: with no providers nothing is traced, and the handler's context has no span.
func TestTraceOff(t *testing.T) {
	t.Parallel()
	seen := make(chan context.Context, 1)
	probe := tools.Tool{Name: "probe", InputSchema: []byte(`{"type":"object"}`),
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			seen <- ctx
			return tools.TextResult("ok"), nil
		})}
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{probe}})
	c.Initialize()
	c.Send(stdioCall(1, "probe", `{}`))
	c.Recv()
	if sc := trace.SpanContextFromContext(<-seen); sc.IsValid() {
		t.Errorf("the handler's context has a span %v with tracing off", sc)
	}
}

// TestOTelMetrics: mcp.server.operation.duration and mcp.server.session.duration exactly as
// the conventions define them (seconds, their buckets, no session or request id), and the
// engine's own load metrics, next to a metrics.Recorder that keeps working.
func TestOTelMetrics(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	mem := metrics.NewMemory()
	srv, c := memoryClient(t, toolgrain.Config{Tools: demo.Tools(), Telemetry: toolgrain.TelemetryConfig{MeterProvider: mp, Metrics: mem}, Limits: toolgrain.LimitsConfig{MaxCallsPerConnection: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "no-such-tool", map[string]any{}); err == nil {
		t.Fatal("an unknown tool was called")
	}
	// A sleeping call holds the connection's only slot: the next call is refused. Closing the
	// connection cancels the sleep, and ends the session once its request actor is gone.
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}}}`)); err != nil {
		t.Fatal(err)
	}
	var busy *protocol.WireError
	for {
		_, err := c.CallTool(ctx, "echo", map[string]any{"text": "refused?"})
		if errors.As(err, &busy) && busy.Code == protocol.CodeServerBusy {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no refusal: %v", err)
		}
	}
	_ = c.Close()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := make(map[string]metricdata.Metrics)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/toolgrain/toolgrain" || sm.Scope.Version != toolgrain.Version {
			t.Errorf("scope %s %s", sm.Scope.Name, sm.Scope.Version)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	buckets := []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	histogram := func(name string) map[string]uint64 {
		t.Helper()
		m, ok := got[name]
		if !ok {
			t.Fatalf("no metric %s; have %v", name, slices.Sorted(maps.Keys(got)))
		}
		h, ok := m.Data.(metricdata.Histogram[float64])
		if !ok || m.Unit != "s" {
			t.Fatalf("%s: %T in %q, want a float64 histogram in seconds", name, m.Data, m.Unit)
		}
		counts := make(map[string]uint64)
		for _, dp := range h.DataPoints {
			if !slices.Equal(dp.Bounds, buckets) {
				t.Errorf("%s buckets %v, want %v", name, dp.Bounds, buckets)
			}
			counts[attrKey(dp.Attributes)] += dp.Count
		}
		return counts
	}
	v := "mcp.protocol.version=2025-11-25"
	call := "gen_ai.operation.name=execute_tool gen_ai.tool.name=echo mcp.method.name=tools/call " + v
	wantOps := map[string]uint64{
		"mcp.method.name=initialize " + v:                1,
		"mcp.method.name=notifications/initialized " + v: 1,
		call:                            1,
		"error.type=tool_error " + call: 1,
		"error.type=-32602 gen_ai.operation.name=execute_tool mcp.method.name=tools/call " + v + " rpc.response.status_code=-32602": 1,
	}
	ops := histogram("mcp.server.operation.duration")
	// The calls refused while the sleep was being admitted: at least one.
	refused := "error.type=-31000 " + call + " rpc.response.status_code=-31000"
	if ops[refused] == 0 || ops[refused] != srv.Stats().RefusedCalls {
		t.Errorf("%d refused calls among the operations, %d refused", ops[refused], srv.Stats().RefusedCalls)
	}
	delete(ops, refused)
	if !reflect.DeepEqual(ops, wantOps) {
		t.Errorf("mcp.server.operation.duration counts\n got: %v\nwant: %v", ops, wantOps)
	}
	if sessions := histogram("mcp.server.session.duration"); !reflect.DeepEqual(sessions, map[string]uint64{v: 1}) {
		t.Errorf("mcp.server.session.duration counts %v", sessions)
	}

	sum := func(name string) map[string]int64 {
		t.Helper()
		m, ok := got[name]
		if !ok {
			t.Fatalf("no metric %s; have %v", name, slices.Sorted(maps.Keys(got)))
		}
		values := make(map[string]int64)
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				values[attrKey(dp.Attributes)] = dp.Value
			}
		case metricdata.Gauge[int64]:
			for _, dp := range d.DataPoints {
				values[attrKey(dp.Attributes)] = dp.Value
			}
		default:
			t.Fatalf("%s: %T", name, m.Data)
		}
		return values
	}
	checks := []struct {
		name string
		want map[string]int64
	}{
		{"toolgrain.tool.calls.active", map[string]int64{"gen_ai.tool.name=echo": 0, "gen_ai.tool.name=sleep": 0}},
		{"toolgrain.tool.calls.cancelled", map[string]int64{"gen_ai.tool.name=sleep": 1}},
		{"toolgrain.calls.refused", map[string]int64{"toolgrain.limit.scope=connection": int64(srv.Stats().RefusedCalls)}},
		{"toolgrain.queue.depth", map[string]int64{"toolgrain.queue=connection": 0, "toolgrain.queue=diagnostics": 0, "toolgrain.queue=tool": 0}},
		{"toolgrain.tasks.live", map[string]int64{"": 0}},
		{"toolgrain.tasks.running", map[string]int64{"": 0}},
	}
	for _, tt := range checks {
		if got := sum(tt.name); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
	if n := mem.Snapshot().Calls("echo", metrics.OK); n != 1 {
		t.Errorf("the metrics.Recorder counted %d successful echo calls, want 1", n)
	}
}

// attrKey is an attribute set as sorted "key=value" pairs.
func attrKey(set attribute.Set) string {
	var parts []string
	for _, kv := range set.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// TestTraceTask: a task's run has its own span, toolgrain.task, under the span of the tools/call
// that made the task (which has ended by then); the handler's context carries it, and it ends
// with the task's status: completed, failed (an error status, no text), or cancelled.
func TestTraceTask(t *testing.T) {
	t.Parallel()
	var tr *spans
	seen := make(chan context.Context, 1)
	okTool := tools.Tool{Name: "ok", InputSchema: []byte(`{"type":"object"}`), TaskSupport: tools.TaskRequired,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			seen <- ctx
			return tools.TextResult("ok"), nil
		})}
	failTool := tools.Tool{Name: "bad", InputSchema: []byte(`{"type":"object"}`), TaskSupport: tools.TaskRequired,
		Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
			return nil, errors.New("SECRET-internal-detail")
		})}
	cfg := func() toolgrain.Config {
		return toolgrain.Config{Tools: []tools.Tool{okTool, failTool, waitTool("wait", tools.TaskRequired, nil)},
			Telemetry: toolgrain.TelemetryConfig{TracerProvider: tr.tp}, OnError: func(error, *toolgrain.ToolErrorDetails) {}}
	}
	onBoth(t, func() toolgrain.Config { tr = newSpans(t); return cfg() }, func(t *testing.T, c *taskConn) {
		taskSpan := func(id string) sdktrace.ReadOnlySpan {
			t.Helper()
			for _, sp := range tr.named("toolgrain.task") {
				if attrsOf(sp)["toolgrain.task.id"] == id {
					return sp
				}
			}
			t.Fatalf("no span of task %s", id)
			return nil
		}
		id := c.start("ok", `{}`)
		if got := c.await(id); got.Result["status"] != "completed" {
			t.Fatalf("ok: %s", got.raw)
		}
		sp := taskSpan(id)
		calls := tr.named("tools/call ok")
		if len(calls) != 1 || sp.Parent().SpanID() != calls[0].SpanContext().SpanID() || sp.SpanContext().TraceID() != calls[0].SpanContext().TraceID() {
			t.Errorf("the task's span is not under its tools/call's span (%d of those)", len(calls))
		}
		if got, want := attrsOf(sp), map[string]string{"gen_ai.tool.name": "ok", "toolgrain.task.id": id, "toolgrain.task.status": "completed"}; !maps.Equal(got, want) {
			t.Errorf("attributes %v, want %v", got, want)
		}
		if sp.SpanKind() != trace.SpanKindInternal || sp.Status().Code != codes.Unset {
			t.Errorf("kind %v status %v", sp.SpanKind(), sp.Status())
		}
		if got := trace.SpanContextFromContext(<-seen); got.SpanID() != sp.SpanContext().SpanID() {
			t.Errorf("the handler's context carries span %v, want the task's %v", got.SpanID(), sp.SpanContext().SpanID())
		}

		id = c.start("bad", `{}`)
		if got := c.await(id); got.Result["status"] != "failed" && !strings.Contains(got.raw, "Tool execution failed") {
			t.Fatalf("bad: %s", got.raw)
		}
		sp = taskSpan(id)
		if st := attrsOf(sp)["toolgrain.task.status"]; sp.Status().Code != codes.Error || sp.Status().Description != "" || st != "failed" {
			t.Errorf("failed task's span: status %v, task status %q", sp.Status(), st)
		}
		if strings.Contains(spanText(sp), "SECRET") {
			t.Errorf("the original error reached the span: %s", spanText(sp))
		}

		id = c.start("wait", `{"ms":600000}`)
		c.request("tasks/cancel", `"taskId":"`+id+`"`, tasksCaps)
		if got := c.await(id); got.Result["status"] != "cancelled" {
			t.Fatalf("wait: %s", got.raw)
		}
		got := attrsOf(taskSpan(id))
		if got["toolgrain.task.status"] != "cancelled" || got["toolgrain.request.cancelled"] != "true" || got["toolgrain.request.cancel_cause"] != "task_cancelled" {
			t.Errorf("cancelled task's span: %v", got)
		}
	})
}
