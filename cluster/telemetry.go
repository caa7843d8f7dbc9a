package cluster

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgrain/toolgrain/internal/clusterhook"
)

// instrumentationName is the engine's instrumentation scope: the cluster's spans and metrics are
// the engine's, under the same namespace.
const instrumentationName = "github.com/toolgrain/toolgrain"

// ForwardSpanName is the CLIENT span an edge member records for a request it forwards to the
// session's home, from the send to the end of the home's answer.
const ForwardSpanName = "toolgrain.cluster.forward"

// telemetry is a Node's instrumentation; a nil *telemetry records nothing.
type telemetry struct {
	tracer  trace.Tracer                  // nil: no spans
	prop    propagation.TextMapPropagator // nil: no trace context crosses the hop
	headDur metric.Float64Histogram       // nil: no metrics
	reg     metric.Registration
}

// setTelemetry makes the Node record forward spans and cluster metrics (see the package doc);
// toolgrain.NewServer calls it with the server's providers before wrap. Without a
// TracerProvider, MeterProvider or Propagator it does nothing and forwarding costs nothing more.
// It may be called once; Close ends the metric registration.
func (n *Node) setTelemetry(cfg clusterhook.Telemetry) error {
	if cfg.TracerProvider == nil && cfg.MeterProvider == nil && cfg.Propagator == nil {
		return nil
	}
	if n.tel.Load() != nil {
		return errors.New("cluster: the node's telemetry is set already")
	}
	t := &telemetry{prop: cfg.Propagator}
	if tp := cfg.TracerProvider; tp != nil {
		t.tracer = tp.Tracer(instrumentationName, trace.WithInstrumentationVersion(cfg.Version))
		if t.prop == nil {
			t.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
		}
	}
	if mp := cfg.MeterProvider; mp != nil {
		m := mp.Meter(instrumentationName, metric.WithInstrumentationVersion(cfg.Version))
		members, err := m.Int64ObservableGauge("toolgrain.cluster.members",
			metric.WithDescription("Members in this member's view of the cluster, itself included."),
			metric.WithUnit("{member}"))
		if err != nil {
			return err
		}
		forwarded, err := m.Int64ObservableCounter("toolgrain.cluster.requests.forwarded",
			metric.WithDescription("Requests this member forwarded to their session's home."),
			metric.WithUnit("{request}"))
		if err != nil {
			return err
		}
		served, err := m.Int64ObservableCounter("toolgrain.cluster.requests.served_for_edge",
			metric.WithDescription("Requests other members forwarded to this one, the home of their session."),
			metric.WithUnit("{request}"))
		if err != nil {
			return err
		}
		t.headDur, err = m.Float64Histogram("toolgrain.cluster.forward.duration",
			metric.WithDescription("Time from forwarding a request to the head of the home's answer: the cost of a hop."),
			metric.WithUnit("s"))
		if err != nil {
			return err
		}
		t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			o.ObserveInt64(members, int64(n.memberCount()))
			o.ObserveInt64(forwarded, n.stats.forwarded.Load())
			o.ObserveInt64(served, n.stats.served.Load())
			return nil
		}, members, forwarded, served)
		if err != nil {
			return err
		}
	}
	if !n.tel.CompareAndSwap(nil, t) {
		t.close()
		return errors.New("cluster: the node's telemetry is set already")
	}
	return nil
}

// memberCount is the size of the last topology.
func (n *Node) memberCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.members)
}

// startForward starts the forward span of r to home: nil without tracing.
func (t *telemetry) startForward(r *http.Request, home string) (trace.Span, context.Context) {
	if t == nil || t.tracer == nil {
		return nil, nil
	}
	ctx := r.Context()
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	ctx, span := t.tracer.Start(ctx, ForwardSpanName, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String(attrHome, home),
			attribute.String("http.request.method", r.Method),
		))
	return span, ctx
}

// attrHome is the forward span's attribute naming the home member's address.
const attrHome = "toolgrain.cluster.home"

// inject replaces the trace context in h (a copy of the forwarded request's headers) with ctx's.
func (t *telemetry) inject(ctx context.Context, h http.Header) {
	for _, k := range t.prop.Fields() {
		h.Del(k)
	}
	t.prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// setStatus records the status of the home's answer on span (nil: none).
func setStatus(span trace.Span, status int) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}

// spanError marks span (nil: none) as failed.
func spanError(span trace.Span, msg string) {
	if span != nil {
		span.SetStatus(codes.Error, msg)
	}
}

// headed records the time to the head of a forwarded request's answer.
func (t *telemetry) headed(d time.Duration) {
	if t == nil || t.headDur == nil {
		return
	}
	t.headDur.Record(context.Background(), d.Seconds())
}

// homeContext returns ctx with the trace context of a forwarded request's headers.
func (t *telemetry) homeContext(ctx context.Context, h http.Header) context.Context {
	if t == nil || t.prop == nil {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.HeaderCarrier(h))
}

func (t *telemetry) close() {
	if t != nil && t.reg != nil {
		_ = t.reg.Unregister()
	}
}
