package gateway_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/internal/demo"
)

// The upstream hop is a CLIENT span of its own, under the call's server span, named and
// attributed by the MCP conventions; its trace context goes upstream, whose own SERVER span is
// its child; the client duration and the upstream's gauges are recorded by upstream.
func TestTelemetry(t *testing.T) {
	t.Parallel()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	up, err := toolgrain.NewServer(toolgrain.Config{Name: "inner", Tools: demo.Tools(), Telemetry: toolgrain.TelemetryConfig{TracerProvider: tp}})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	f := newFront(t, toolgrain.Config{Telemetry: toolgrain.TelemetryConfig{TracerProvider: tp, MeterProvider: mp}}, gateway.Mount{Name: "in", Source: gateway.InProcess{Server: up}})
	if got := text(f.call(t, "in_echo", `{"text":"traced"}`)); got != "traced" {
		t.Fatalf("echo: %q", got)
	}
	if r := f.call(t, "in_fail", `{"mode":"result"}`); !r.IsError {
		t.Fatalf("fail: %+v", r)
	}

	spans := sr.Ended()
	find := func(name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
		for _, s := range spans {
			if s.Name() == name && s.SpanKind() == kind {
				return s
			}
		}
		t.Fatalf("no %v span %q among %d", kind, name, len(spans))
		return nil
	}
	front := find("tools/call in_echo", trace.SpanKindServer)
	hop := find("tools/call echo", trace.SpanKindClient)
	upstream := find("tools/call echo", trace.SpanKindServer)
	if hop.SpanContext().TraceID() != front.SpanContext().TraceID() || upstream.Parent().SpanID() != hop.SpanContext().SpanID() {
		t.Errorf("trace: front %v, hop %v (parent %v), upstream parent %v", front.SpanContext(), hop.SpanContext(), hop.Parent(), upstream.Parent())
	}
	if !descends(spans, hop, front) {
		t.Errorf("the hop is not under the front's server span")
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, a := range hop.Attributes() {
		attrs[a.Key] = a.Value
	}
	for k, v := range map[attribute.Key]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"toolgrain.upstream": "in", "mcp.protocol.version": "2026-07-28"} {
		if attrs[k].AsString() != v {
			t.Errorf("hop %s = %q, want %q", k, attrs[k].AsString(), v)
		}
	}
	failHop := find("tools/call fail", trace.SpanKindClient)
	var errType string
	for _, a := range failHop.Attributes() {
		if a.Key == "error.type" {
			errType = a.Value.AsString()
		}
	}
	if errType != "tool_error" {
		t.Errorf("fail hop error.type %q", errType)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
			if m.Name == "toolgrain.upstream.up" {
				g := m.Data.(metricdata.Gauge[int64])
				if len(g.DataPoints) != 1 || g.DataPoints[0].Value != 1 {
					t.Errorf("up: %+v", g.DataPoints)
				}
			}
			if m.Name == "mcp.client.operation.duration" {
				h := m.Data.(metricdata.Histogram[float64])
				var n uint64
				for _, dp := range h.DataPoints {
					if v, _ := dp.Attributes.Value("toolgrain.upstream"); v.AsString() == "in" {
						n += dp.Count
					}
				}
				if n < 2 {
					t.Errorf("client durations recorded for in: %d", n)
				}
			}
		}
	}
	for _, name := range []string{"mcp.client.operation.duration", "toolgrain.upstream.up", "toolgrain.upstream.calls_in_flight", "toolgrain.upstream.late_dropped"} {
		if !seen[name] {
			t.Errorf("no metric %s", name)
		}
	}
}

// descends reports whether s is a descendant of root among spans.
func descends(spans []sdktrace.ReadOnlySpan, s, root sdktrace.ReadOnlySpan) bool {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, x := range spans {
		byID[x.SpanContext().SpanID()] = x
	}
	for cur := s; cur != nil; {
		if cur.Parent().SpanID() == root.SpanContext().SpanID() {
			return true
		}
		cur = byID[cur.Parent().SpanID()]
	}
	return false
}
