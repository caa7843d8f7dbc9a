// Package clusterhook lets the root package wire a server to its *cluster.Node without package
// cluster exporting the wiring: package cluster registers the accessor when it is initialised,
// and toolgrain.NewServer calls it. A user of package cluster sees only what a deployment needs
// (Start, Attach, the member list, the counters); what the engine and the HTTP transport need
// of a member is here.
package clusterhook

import (
	"net/http"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry is what a member records its forward spans and cluster metrics with: the server's
// providers.
type Telemetry struct {
	// TracerProvider makes the forward spans. Nil means none.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the cluster's metrics. Nil means none.
	MeterProvider metric.MeterProvider
	// Propagator carries the forward span's context to the home in the forwarded request's
	// headers. Nil means W3C trace context and baggage when TracerProvider is set.
	Propagator propagation.TextMapPropagator
	// Version is the instrumentation version.
	Version string
}

// Node is what a server needs of its membership of a cluster, each function bound to the
// member; see package cluster for what each does.
type Node struct {
	// NewSessionID mints a legacy session id homed on this member (the HTTP transport's
	// NewSessionID).
	NewSessionID func() string
	// Relay tells every other member of a list change or resource update made on this one (the
	// engine's Relay). It never blocks.
	Relay func(method, uri string)
	// RelayTags sends the tag entries of a change made on this member to the others (the
	// engine's TagSync.Relay). It never blocks.
	RelayTags func(entries []byte)
	// TaskHome is the reference that names this member in task ids (the engine's task home).
	TaskHome string
	// TaskGone reports whether a task id names another member as its home and that member has
	// left the member list (the engine's task Gone). It never blocks.
	TaskGone func(id string) bool
	// SetDeliver sets how this member tells its clients of a change made on another member.
	SetDeliver func(fn func(method, uri string))
	// SetTagSync sets how this member merges the tag entries others send, and what it sends a
	// member that joins.
	SetTagSync func(merge func([]byte) error, state func() []byte)
	// SetTelemetry makes the member record forward spans and metrics; called once, before Wrap.
	SetTelemetry func(Telemetry) error
	// Wrap returns the member's MCP endpoint: the requests of sessions and tasks homed on other
	// members forwarded there, the rest served by local.
	Wrap func(local http.Handler, maxBody int) http.Handler
}

var of func(node any) (Node, bool)

// Register sets the accessor; package cluster calls it from an init function.
func Register(f func(node any) (Node, bool)) { of = f }

// Of returns the wiring of node, a *cluster.Node, and false for anything else (a nil node
// included).
func Of(node any) (Node, bool) {
	if of == nil || node == nil {
		return Node{}, false
	}
	return of(node)
}
