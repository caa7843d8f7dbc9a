package gateway

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgrain/toolgrain/internal/upstream"
	"github.com/toolgrain/toolgrain/protocol"
)

// The gateway's OpenTelemetry instrumentation, by the MCP semantic conventions for clients: a
// CLIENT span for each request to an upstream, a child of the call's own span (the server's
// SERVER span and its handler span), whose trace context goes upstream in params._meta; the
// mcp.client.operation.duration histogram; and, per upstream, its calls in flight, its state
// and the late answers it dropped. The server's providers are used; none records nothing and
// costs nothing.

// Names of the MCP semantic conventions (see internal/engine/telemetry.go for why they are here).
const (
	semMethod          = "mcp.method.name"
	semProtocolVersion = "mcp.protocol.version"
	semResourceURI     = "mcp.resource.uri"
	semToolName        = "gen_ai.tool.name"
	semPromptName      = "gen_ai.prompt.name"
	semOperationName   = "gen_ai.operation.name"
	semRequestID       = "jsonrpc.request.id"
	semStatusCode      = "rpc.response.status_code"
	semErrorType       = "error.type"
	semTransport       = "network.transport"
	semServerAddress   = "server.address"
	semServerPort      = "server.port"
	semClientDuration  = "mcp.client.operation.duration"

	attrUpstream = "toolgrain.upstream" // the mount's name
)

var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// telemetry is a gateway's instrumentation; nil records nothing.
type telemetry struct {
	tracer   trace.Tracer // nil: no spans
	prop     propagation.TextMapPropagator
	duration metric.Float64Histogram // nil: no metrics
	gauges   metric.Registration
}

func newTelemetry(g *Gateway) (*telemetry, error) {
	tp, mp := g.srv.TracerProvider, g.srv.MeterProvider
	if tp == nil && mp == nil {
		return nil, nil
	}
	t := &telemetry{prop: g.srv.Propagator}
	if tp != nil {
		t.tracer = tp.Tracer("github.com/toolgrain/toolgrain/gateway")
		if t.prop == nil {
			t.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
		}
	}
	if mp != nil {
		m := mp.Meter("github.com/toolgrain/toolgrain/gateway")
		var err error
		if t.duration, err = m.Float64Histogram(semClientDuration, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets...),
			metric.WithDescription("The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.")); err != nil {
			return nil, err
		}
		inFlight, err := m.Int64ObservableGauge("toolgrain.upstream.calls_in_flight", metric.WithUnit("{call}"),
			metric.WithDescription("Calls in flight on a mounted upstream's connection."))
		if err != nil {
			return nil, err
		}
		up, err := m.Int64ObservableGauge("toolgrain.upstream.up", metric.WithUnit("1"),
			metric.WithDescription("1 while a mounted upstream is connected, 0 otherwise."))
		if err != nil {
			return nil, err
		}
		late, err := m.Int64ObservableCounter("toolgrain.upstream.late_dropped", metric.WithUnit("{message}"),
			metric.WithDescription("What a mounted upstream sent for calls already over (cancelled, timed out), dropped."))
		if err != nil {
			return nil, err
		}
		if t.gauges, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			for _, s := range g.Status() {
				attrs := metric.WithAttributes(attribute.String(attrUpstream, s.Name))
				o.ObserveInt64(inFlight, int64(s.InFlight), attrs)
				v := int64(0)
				if s.State == string(upstream.StateUp) {
					v = 1
				}
				o.ObserveInt64(up, v, attrs)
				o.ObserveInt64(late, int64(s.Late), attrs)
			}
			return nil
		}, inFlight, up, late); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *telemetry) stop() {
	if t != nil && t.gauges != nil {
		_ = t.gauges.Unregister()
	}
}

// hop is the telemetry of one request to an upstream.
type hop struct {
	t     *telemetry
	span  trace.Span
	start time.Time
	attrs []attribute.KeyValue
}

// begin starts the hop of c on mount m: its span, a child of ctx's, and the trace context to
// send in the request's _meta (nil without spans).
func (t *telemetry) begin(ctx context.Context, m *mount, c *upstream.Call) (*hop, context.Context, map[string]string) {
	if t == nil {
		return nil, ctx, nil
	}
	h := &hop{t: t, start: time.Now()}
	h.attrs = append(h.attrs, attribute.String(semMethod, c.Method), attribute.String(attrUpstream, m.name))
	switch c.Method {
	case protocol.MethodToolsCall:
		h.attrs = append(h.attrs, attribute.String(semToolName, c.Name), attribute.String(semOperationName, "execute_tool"))
	case protocol.MethodPromptsGet:
		h.attrs = append(h.attrs, attribute.String(semPromptName, c.Name))
	case protocol.MethodResourcesRead:
		h.attrs = append(h.attrs, attribute.String(semResourceURI, c.Name))
	}
	if v := m.up.Status().Version; v != "" {
		h.attrs = append(h.attrs, attribute.String(semProtocolVersion, v))
	}
	h.attrs = append(h.attrs, m.netAttrs...)
	if t.tracer == nil {
		return h, ctx, nil
	}
	name := c.Method
	if c.Name != "" {
		name += " " + c.Name
	}
	ctx, h.span = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(h.attrs...))
	carrier := propagation.MapCarrier{}
	t.prop.Inject(ctx, carrier)
	return h, ctx, carrier
}

// end ends the hop with the call's outcome: err, or the result (isError for a tool).
func (h *hop) end(err error, isError bool) {
	if h == nil {
		return
	}
	var extra []attribute.KeyValue
	var werr *protocol.WireError
	switch {
	case err == nil && isError:
		extra = append(extra, attribute.String(semErrorType, "tool_error"))
	case errors.As(err, &werr):
		code := strconv.FormatInt(werr.Code, 10)
		extra = append(extra, attribute.String(semErrorType, code), attribute.String(semStatusCode, code))
	case errors.Is(err, context.Canceled):
		extra = append(extra, attribute.Bool("toolgrain.request.cancelled", true))
	case err != nil:
		extra = append(extra, attribute.String(semErrorType, "_OTHER"))
	}
	if h.t.duration != nil {
		attrs := append(append([]attribute.KeyValue(nil), h.attrs...), extra...)
		h.t.duration.Record(context.Background(), time.Since(h.start).Seconds(), metric.WithAttributes(attrs...))
	}
	if h.span != nil {
		h.span.SetAttributes(extra...)
		if err != nil && !errors.Is(err, context.Canceled) {
			h.span.SetStatus(codes.Error, "")
		}
		h.span.End()
	}
}

// networkAttrs are the network attributes of a mount's requests.
func networkAttrs(src Source) []attribute.KeyValue {
	switch s := src.(type) {
	case Stdio:
		return []attribute.KeyValue{attribute.String(semTransport, "pipe")}
	case HTTP:
		attrs := []attribute.KeyValue{attribute.String(semTransport, "tcp")}
		if u, err := url.Parse(s.URL); err == nil {
			host, port, err := net.SplitHostPort(u.Host)
			if err != nil {
				host, port = u.Host, map[string]string{"http": "80", "https": "443"}[u.Scheme]
			}
			attrs = append(attrs, attribute.String(semServerAddress, host))
			if p, err := strconv.Atoi(port); err == nil {
				attrs = append(attrs, attribute.Int(semServerPort, p))
			}
		}
		return attrs
	}
	return nil
}
