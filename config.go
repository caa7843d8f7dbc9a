package toolgrain

import (
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgrain/toolgrain/metrics"
)

// DiagnosticsConfig bounds the delivery of unexpected failures to [Config].OnError, which runs
// one report at a time, off the path of the calls: a callback that blocks or is slow costs
// reports, never calls. The zero value is usable.
type DiagnosticsConfig struct {
	// Queue bounds the reports waiting for OnError; further ones are dropped and counted
	// ([Stats].DroppedReports). 0 means 1024.
	Queue int
	// CallbackTimeout bounds one OnError call; a slower one is abandoned (left to finish on
	// its own, counted in [Stats].AbandonedCallbacks) and the next report starts. 0 means
	// [DefaultCallbackTimeout].
	CallbackTimeout time.Duration
}

// RequestStateConfig protects the requestState the server hands a modern client that must
// answer input_required (MCP 2026-07-28 multi-round-trip requests), which the client sends
// back with its answers. The zero value is usable.
type RequestStateConfig struct {
	// Key is the key (at least 32 bytes) that protects a state, with HMAC-SHA256. Servers
	// that share it accept each other's states, which lets any of several server processes
	// (the members of a cluster) take a client's retry. Nil means a random key made by
	// NewServer: a state is then accepted by this server only, and not after a restart.
	Key []byte
	// TTL is how long a state is accepted after it was issued. 0 means 10 minutes.
	TTL time.Duration
}

// TelemetryConfig is what the server measures and traces, and where it goes: a
// [metrics.Recorder] of its own counters, and the host's OpenTelemetry providers (see
// docs/observability.md for the spans and metrics). The server never touches the global
// providers; with everything nil (the zero value) it records nothing and costs nothing on the
// path of a call.
type TelemetryConfig struct {
	// Metrics receives the server's measurements: calls by tool and outcome, calls in flight,
	// cancellations, late responses suppressed, diagnostics reports dropped and latency. Nil
	// records nothing. See package metrics, and metrics/prom for Prometheus.
	Metrics metrics.Recorder

	// TracerProvider makes a SERVER span for every request and notification the server
	// serves, named and attributed by the MCP semantic conventions, with child spans for
	// validation, the wait for a run slot, the handler and the call of an actor-backed tool.
	// The handler's context carries its span, so the tool's own outgoing calls join the trace.
	// Nil means no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider records mcp.server.operation.duration, mcp.server.session.duration and the
	// engine's toolgrain.* load metrics. It is in addition to Metrics, which keeps working.
	// Nil means none.
	MeterProvider metric.MeterProvider
	// Propagator reads the trace context (and baggage) a request carries in params._meta, the
	// parent of its span; a span of the transport's (an HTTP server span in the request's
	// context) is linked, not made the parent. Nil means the W3C Trace Context and Baggage
	// formats, whose keys traceparent, tracestate and baggage MCP reserves in _meta, when
	// TracerProvider is set.
	Propagator propagation.TextMapPropagator
	// TraceArguments and TraceResults name the tools whose calls put their arguments
	// (gen_ai.tool.call.arguments) and successful results (gen_ai.tool.call.result) on their
	// spans. Nil means none, the default: arguments and results may be sensitive, and traces
	// usually leave the host.
	TraceArguments []string
	TraceResults   []string
	// TraceFailures puts the original error of an unexpected failure on its span (an exception
	// event), as OnError receives it. False, the default, keeps it private to OnError: the span
	// only says that the call failed (error.type tool_error).
	TraceFailures bool
}
