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

// LimitsConfig bounds what a client can make the server hold or wait for (docs/limits.md has
// every limit, its default and its flag in the server binary). A zero value means the default
// given; the zero LimitsConfig is usable.
type LimitsConfig struct {
	// MaxMessageSize bounds one incoming message in bytes. 0 means
	// protocol.DefaultMaxMessageSize (4 MiB).
	MaxMessageSize int
	// MaxCallsPerConnection bounds the tools/call requests (and those of custom methods,
	// [Config].Methods) in flight on one connection. A call counts from its acceptance until it is
	// answered or cancelled; one over the limit is refused, unprocessed, with the JSON-RPC
	// error -31000 "Server busy: too many calls in flight on this connection (limit N)" and
	// data {"scope":"connection","limit":N} (see protocol.ErrServerBusy). Pings,
	// cancellations and every other message are still processed. 0 means 20,000; negative
	// means no limit.
	MaxCallsPerConnection int
	// MaxCalls bounds the calls in flight on the whole server, over every connection; a call
	// over it is refused with "... on the server (limit N)" and scope "server". 0 means
	// 100,000; negative means no limit.
	MaxCalls int
	// MaxClientDeclaration bounds, in bytes, what one initialize declares, which its
	// connection or session keeps for its life: its capabilities as sent, and the strings of
	// its clientInfo (name, title, version, icons). An initialize over it is refused, no
	// session made, with -32602 "Invalid params: capabilities and clientInfo take N bytes,
	// more than the limit of L" and data {"limit":L}. 0 means 64 KiB, far beyond what real
	// clients declare; negative means no limit.
	MaxClientDeclaration int
	// ToolTimeout is the timeout of each call of a tool whose own tools.Tool.Timeout is zero.
	// A call past its timeout is an unexpected failure: the client gets the generic result and
	// OnError an error wrapping [ErrToolTimeout]. 0 means no timeout.
	ToolTimeout time.Duration
	// MaxOutputBacklog bounds, in bytes, the answers queued for a client that does not read
	// them (a slow consumer). While a stdio connection's backlog is over it, the connection
	// reads no new message (calls in flight go on, and their answers queue); it reads again
	// once the backlog has drained to half of it. 0 means [DefaultMaxOutputBacklog]; negative
	// means no limit.
	MaxOutputBacklog int
	// PageSize is the number of tools per tools/list page. 0 means 100.
	PageSize int
	// ProgressInterval rate-limits the progress notifications of one call: after a burst of
	// ten, one per interval goes out and the reports in between are dropped, except one that
	// reaches its total. 0 means 10 ms; negative means no limit.
	ProgressInterval time.Duration

	// HandlerGrace is how long closing a connection, or the server, waits for the handlers
	// of the calls it cancelled to return; one that ignores its context is then left to
	// finish on its own. 0 means 5 s.
	HandlerGrace time.Duration
	// EndOfInputGrace is how long the calls and other requests in flight on a stdio
	// connection whose input ended (EOF) get to answer; those still running then are
	// cancelled (they get no answer). 0 means 5 s.
	EndOfInputGrace time.Duration
	// OutputGrace is how long a stdio client gets to read its last answers once its
	// connection ended; those still unwritten then are abandoned and reported as stalled
	// output. 0 means 5 s.
	OutputGrace time.Duration
}
