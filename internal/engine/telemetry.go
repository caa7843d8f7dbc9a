package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/protocol"
)

// OpenTelemetry instrumentation, by the MCP semantic conventions: a SERVER span for every
// request and notification the engine serves (trace.go), the mcp.server.operation.duration and
// mcp.server.session.duration histograms, and the engine's own load signals under the
// "toolgrain." namespace. Only the OpenTelemetry API is used; the host brings the SDK.

// Names of the MCP semantic conventions (status: Development). They are defined here rather
// than taken from go.opentelemetry.io/otel/semconv: the core conventions deprecated every mcp.*
// and gen_ai.* name when those moved to their own repository, which ships no Go package yet.
// The names themselves did not change.
const (
	semMethod          = "mcp.method.name"
	semProtocolVersion = "mcp.protocol.version"
	semSessionID       = "mcp.session.id"
	semResourceURI     = "mcp.resource.uri"
	semToolName        = "gen_ai.tool.name"
	semPromptName      = "gen_ai.prompt.name"
	semOperationName   = "gen_ai.operation.name"
	semToolArguments   = "gen_ai.tool.call.arguments"
	semToolResult      = "gen_ai.tool.call.result"
	semRequestID       = "jsonrpc.request.id"
	semStatusCode      = "rpc.response.status_code"
	semErrorType       = "error.type"
	semTransport       = "network.transport"

	semExecuteTool = "execute_tool" // gen_ai.operation.name of tools/call
	semToolError   = "tool_error"   // error.type of an isError tool result
	semOther       = "_OTHER"       // the fallback value of error.type, and here of mcp.method.name

	semOperationDuration = "mcp.server.operation.duration"
	semSessionDuration   = "mcp.server.session.duration"
)

// durationBuckets are the explicit bucket boundaries, in seconds, the conventions give both
// MCP duration histograms.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// The engine's own names, beside the conventions'.
const (
	// Attributes of a server span.
	attrCancelled   = "toolgrain.request.cancelled"    // bool: the request was silenced, nothing was sent
	attrCancelCause = "toolgrain.request.cancel_cause" // client, connection_closed, shutdown
	attrOutcome     = "toolgrain.tool.outcome"         // a tools/call's metrics.Outcome
	// Attributes of a task's span.
	attrTaskID     = "toolgrain.task.id"     // the task's id
	attrTaskStatus = "toolgrain.task.status" // completed, failed or cancelled
	// Attributes of the engine's metrics.
	attrLimitScope = "toolgrain.limit.scope" // connection or server
	attrQueue      = "toolgrain.queue"       // connection, diagnostics or tool

	// Child spans of a server span.
	spanValidate  = "toolgrain.validate"   // the arguments and _meta against the tool's schemas
	spanWaitSlot  = "toolgrain.wait_slot"  // waiting for a run slot of a tool with MaxConcurrency
	spanHandler   = "toolgrain.handler"    // the handler, on its goroutine
	spanActorCall = "toolgrain.actor_call" // the call of an actor-backed tool, to its reply
	// The span of a task's run (the tasks extension), from its handler's start to its end.
	spanTask = "toolgrain.task"
)

// instrumentationName names the tracer and the meter.
const instrumentationName = "github.com/toolgrain/toolgrain"

// Telemetry configures the engine's OpenTelemetry instrumentation. Its zero value records
// nothing, and then costs nothing on the path of a call.
type Telemetry struct {
	// TracerProvider makes the engine's spans. Nil means none.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the engine's metrics. Nil means none.
	MeterProvider metric.MeterProvider
	// Propagator reads the trace context a request carries in params._meta. Nil means the W3C
	// Trace Context and Baggage formats (the keys traceparent, tracestate and baggage) when
	// TracerProvider is set, and no propagation otherwise.
	Propagator propagation.TextMapPropagator
	// Version is the instrumentation scope's version: the engine's.
	Version string
	// TraceArguments and TraceResults name the tools whose calls put their arguments
	// (gen_ai.tool.call.arguments) and their successful results (gen_ai.tool.call.result) on
	// their spans. Nil means none: arguments and results may be sensitive, and traces leave
	// the host.
	TraceArguments []string
	TraceResults   []string
	// TraceFailures puts the original error of an unexpected failure on its request's span
	// (an exception event), as OnError gets it. False means the span says only that the call
	// failed (error.type tool_error for a tools/call, the JSON-RPC code otherwise).
	TraceFailures bool
}

// telemetry is the engine's running instrumentation; nil when Telemetry records nothing.
type telemetry struct {
	tracer   trace.Tracer                  // nil: no spans
	prop     propagation.TextMapPropagator // nil: no trace context is read from _meta
	args     map[string]bool
	results  map[string]bool
	failures bool

	// Instruments; all nil without a MeterProvider.
	opDuration      metric.Float64Histogram
	sessionDuration metric.Float64Histogram
	refused         metric.Int64Counter
	gauges          metric.Registration

	// The attributes of mcp.server.operation.duration, by their values. Every value is bounded
	// (methods the engine serves, tools and prompts it has, codes it answers, versions it
	// knows), so the cache is small, and recording allocates nothing once a set was seen.
	opMu  sync.RWMutex
	ops   map[opKey]metric.MeasurementOption
	tools sync.Map // tool name → its gen_ai.tool.name option, for otelRecorder
}

// opKey is what the attributes of one mcp.server.operation.duration measurement are made of.
type opKey struct{ method, tool, prompt, errType, version, transport string }

// opAttrs returns the attributes of a measurement made of k.
func (t *telemetry) opAttrs(k opKey) metric.MeasurementOption {
	t.opMu.RLock()
	o, ok := t.ops[k]
	t.opMu.RUnlock()
	if ok {
		return o
	}
	attrs := appendTarget(make([]attribute.KeyValue, 0, 7), k.method, k.tool, k.prompt)
	if k.errType != "" {
		attrs = append(attrs, attribute.String(semErrorType, k.errType))
		if k.errType != semToolError {
			attrs = append(attrs, attribute.String(semStatusCode, k.errType))
		}
	}
	if k.version != "" {
		attrs = append(attrs, attribute.String(semProtocolVersion, k.version))
	}
	if k.transport != "" {
		attrs = append(attrs, attribute.String(semTransport, k.transport))
	}
	o = metric.WithAttributeSet(attribute.NewSet(attrs...))
	t.opMu.Lock()
	t.ops[k] = o
	t.opMu.Unlock()
	return o
}

// appendTarget appends what a request is about, on its span and its measurements alike: its
// method, and the tool (with gen_ai.operation.name) or prompt it names.
func appendTarget(attrs []attribute.KeyValue, method, tool, prompt string) []attribute.KeyValue {
	attrs = append(attrs, attribute.String(semMethod, method))
	if method == protocol.MethodToolsCall {
		attrs = append(attrs, attribute.String(semOperationName, semExecuteTool))
	}
	if tool != "" {
		attrs = append(attrs, attribute.String(semToolName, tool))
	}
	if prompt != "" {
		attrs = append(attrs, attribute.String(semPromptName, prompt))
	}
	return attrs
}

// toolAttr returns the gen_ai.tool.name option of tool.
func (t *telemetry) toolAttr(tool string) metric.MeasurementOption {
	if o, ok := t.tools.Load(tool); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(attribute.String(semToolName, tool)))
	t.tools.Store(tool, o)
	return o
}

// newTelemetry starts the instrumentation of e, or returns nil when cfg records nothing.
func newTelemetry(cfg Telemetry, e *Engine) (*telemetry, error) {
	if cfg.TracerProvider == nil && cfg.MeterProvider == nil && cfg.Propagator == nil {
		return nil, nil
	}
	t := &telemetry{prop: cfg.Propagator, failures: cfg.TraceFailures, args: nameSet(cfg.TraceArguments), results: nameSet(cfg.TraceResults),
		ops: make(map[opKey]metric.MeasurementOption)}
	if tp := cfg.TracerProvider; tp != nil {
		t.tracer = tp.Tracer(instrumentationName, trace.WithInstrumentationVersion(cfg.Version))
		if t.prop == nil {
			t.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
		}
	}
	if mp := cfg.MeterProvider; mp != nil {
		if err := t.startMetrics(mp.Meter(instrumentationName, metric.WithInstrumentationVersion(cfg.Version)), e); err != nil {
			return nil, fmt.Errorf("actors: telemetry: %w", err)
		}
	}
	return t, nil
}

func nameSet(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// startMetrics makes the instruments: the conventions' histograms, the refusal counter, the
// engine's load gauges, and a metrics.Recorder that counts calls in flight, cancellations,
// late answers and dropped reports, which joins the host's Recorder.
func (t *telemetry) startMetrics(m metric.Meter, e *Engine) error {
	var err error
	buckets := metric.WithExplicitBucketBoundaries(durationBuckets...)
	if t.opDuration, err = m.Float64Histogram(semOperationDuration, metric.WithUnit("s"), buckets,
		metric.WithDescription("MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.")); err != nil {
		return err
	}
	if t.sessionDuration, err = m.Float64Histogram(semSessionDuration, metric.WithUnit("s"), buckets,
		metric.WithDescription("The duration of the MCP session as observed on the MCP server.")); err != nil {
		return err
	}
	if t.refused, err = m.Int64Counter("toolgrain.calls.refused", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls refused, unprocessed, because a limit on calls in flight was reached.")); err != nil {
		return err
	}
	rec := &otelRecorder{tel: t}
	if rec.inFlight, err = m.Int64UpDownCounter("toolgrain.tool.calls.active", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls started and not yet answered or cancelled.")); err != nil {
		return err
	}
	if rec.cancelled, err = m.Int64Counter("toolgrain.tool.calls.cancelled", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls silenced by a cancellation: by the client, a closed connection or shutdown.")); err != nil {
		return err
	}
	if rec.late, err = m.Int64Counter("toolgrain.tool.late_answers.suppressed", metric.WithUnit("{answer}"),
		metric.WithDescription("Tool outcomes dropped because their call was already cancelled or answered.")); err != nil {
		return err
	}
	if rec.dropped, err = m.Int64Counter("toolgrain.diagnostics.reports.dropped", metric.WithUnit("{report}"),
		metric.WithDescription("Unexpected-failure reports dropped because the diagnostics queue was full.")); err != nil {
		return err
	}
	depth, err := m.Int64ObservableGauge("toolgrain.queue.depth", metric.WithUnit("{message}"),
		metric.WithDescription("Work waiting in the engine's queues: messages delivered to connection actors and not yet handled, reports waiting for OnError, calls waiting for a run slot of a tool."))
	if err != nil {
		return err
	}
	live, err := m.Int64ObservableUpDownCounter("toolgrain.tasks.live", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks the server holds: running, or finished and not yet expired."))
	if err != nil {
		return err
	}
	running, err := m.Int64ObservableUpDownCounter("toolgrain.tasks.running", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks whose handler has not ended."))
	if err != nil {
		return err
	}
	queues := [...]metric.ObserveOption{
		metric.WithAttributes(attribute.String(attrQueue, "connection")),
		metric.WithAttributes(attribute.String(attrQueue, "diagnostics")),
		metric.WithAttributes(attribute.String(attrQueue, "tool")),
	}
	t.gauges, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(depth, e.inboxDepth(), queues[0])
		o.ObserveInt64(depth, e.diagState.depth.Load(), queues[1])
		o.ObserveInt64(depth, e.slotWaiters.Load(), queues[2])
		ts := e.TaskStats()
		o.ObserveInt64(live, ts.Live)
		o.ObserveInt64(running, ts.Running)
		return nil
	}, depth, live, running)
	if err != nil {
		return err
	}
	if e.metrics == nil || e.metrics == (metrics.Nop{}) {
		e.metrics = rec
	} else {
		e.metrics = teeRecorder{e.metrics, rec}
	}
	return nil
}

// stop ends what the instrumentation registered with the host's MeterProvider.
func (t *telemetry) stop() {
	if t != nil && t.gauges != nil {
		_ = t.gauges.Unregister()
	}
}

// callRefused counts a call refused by the limit of scope ("connection" or "server").
func (t *telemetry) callRefused(scope string) {
	if t != nil && t.refused != nil {
		t.refused.Add(context.Background(), 1, metric.WithAttributes(attribute.String(attrLimitScope, scope)))
	}
}

// sessionEnded records the duration of a connection that served a client (stdio, in-memory, a
// legacy HTTP session) with the version it negotiated.
func (t *telemetry) sessionEnded(opened time.Time, version, transport string) {
	if t == nil || t.sessionDuration == nil || opened.IsZero() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 2)
	if version != "" {
		attrs = append(attrs, attribute.String(semProtocolVersion, version))
	}
	if transport != "" {
		attrs = append(attrs, attribute.String(semTransport, transport))
	}
	t.sessionDuration.Record(context.Background(), time.Since(opened).Seconds(), metric.WithAttributes(attrs...))
}

// networkTransport is the network.transport of a connection, told by its name: "stdio" is a
// pipe, an "http..." connection is carried by TCP, and the others (in-memory) have none.
func networkTransport(name string) string {
	switch {
	case name == "stdio":
		return "pipe"
	case strings.HasPrefix(name, "http"):
		return "tcp"
	}
	return ""
}

// otelRecorder is the metrics.Recorder side of the instrumentation.
type otelRecorder struct {
	tel       *telemetry
	inFlight  metric.Int64UpDownCounter
	cancelled metric.Int64Counter
	late      metric.Int64Counter
	dropped   metric.Int64Counter
}

var _ metrics.Recorder = (*otelRecorder)(nil)

func (r *otelRecorder) CallStarted(tool string) {
	r.inFlight.Add(context.Background(), 1, r.tel.toolAttr(tool))
}

func (r *otelRecorder) CallEnded(tool string, o metrics.Outcome, _ time.Duration) {
	r.inFlight.Add(context.Background(), -1, r.tel.toolAttr(tool))
	if o == metrics.Cancelled {
		r.cancelled.Add(context.Background(), 1, r.tel.toolAttr(tool))
	}
}

func (r *otelRecorder) LateResponseSuppressed(tool string) {
	r.late.Add(context.Background(), 1, r.tel.toolAttr(tool))
}

func (r *otelRecorder) ReportDropped() { r.dropped.Add(context.Background(), 1) }

// teeRecorder hands every measurement to two recorders.
type teeRecorder [2]metrics.Recorder

func (t teeRecorder) CallStarted(tool string) {
	t[0].CallStarted(tool)
	t[1].CallStarted(tool)
}

func (t teeRecorder) CallEnded(tool string, o metrics.Outcome, d time.Duration) {
	t[0].CallEnded(tool, o, d)
	t[1].CallEnded(tool, o, d)
}

func (t teeRecorder) LateResponseSuppressed(tool string) {
	t[0].LateResponseSuppressed(tool)
	t[1].LateResponseSuppressed(tool)
}

func (t teeRecorder) ReportDropped() {
	t[0].ReportDropped()
	t[1].ReportDropped()
}

// inboxDepth is the number of messages delivered to the engine's connection actors and not yet
// handled, over every connection.
func (e *Engine) inboxDepth() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for c := range e.conns {
		n += c.inbox.messages.Load()
	}
	return n
}
