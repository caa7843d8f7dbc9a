package toolgrain_test

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
)

// The host hands the server its OpenTelemetry providers: a SERVER span per request, named and
// attributed by the MCP semantic conventions, with child spans, and the mcp.server.* and
// toolgrain.* metrics. The library touches no global provider.
func Example_telemetry() {
	spans := tracetest.NewSpanRecorder() // the host's exporter, in a real service
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	myTools := []tools.Tool{echoTool}

	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: myTools,
		Telemetry: toolgrain.TelemetryConfig{
			TracerProvider: tp,   // a SERVER span per request; nil: none
			MeterProvider:  mp,   // mcp.server.* histograms and toolgrain.* metrics; nil: none
			Propagator:     prop, // reads params._meta; nil: W3C traceparent, tracestate and baggage
			// Opt-ins, per tool; off by default because traces leave the host:
			TraceArguments: []string{"echo"}, // gen_ai.tool.call.arguments
			TraceResults:   []string{"echo"}, // gen_ai.tool.call.result (successful results only)
			TraceFailures:  false,            // the original error of an unexpected failure, as an exception event
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	// A call whose client put its trace context in _meta: the server span's parent.
	_, err = client.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "hi"},
		"_meta": map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	client.Close()
	srv.Close()

	for _, s := range spans.Ended() {
		if s.Name() == "tools/call echo" {
			var attrs []string
			for _, a := range s.Attributes() {
				switch a.Key {
				case "mcp.method.name", "gen_ai.tool.name", "toolgrain.tool.outcome", "gen_ai.tool.call.arguments":
					attrs = append(attrs, string(a.Key)+"="+a.Value.String())
				}
			}
			sort.Strings(attrs)
			fmt.Println(s.SpanKind(), s.Name(), s.Parent().TraceID(), strings.Join(attrs, " "))
			var children []string
			for _, c := range spans.Ended() {
				if c.Parent().SpanID() == s.SpanContext().SpanID() {
					children = append(children, c.Name())
				}
			}
			sort.Strings(children)
			fmt.Println("children:", strings.Join(children, " "))
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if strings.HasPrefix(m.Name, "mcp.") {
				names = append(names, m.Name)
			}
		}
	}
	sort.Strings(names)
	fmt.Println("metrics:", strings.Join(names, " "))
	// Output:
	// server tools/call echo 4bf92f3577b34da6a3ce929d0e0e4736 gen_ai.tool.call.arguments={"text":"hi"} gen_ai.tool.name=echo mcp.method.name=tools/call toolgrain.tool.outcome=ok
	// children: toolgrain.handler toolgrain.validate
	// metrics: mcp.server.operation.duration mcp.server.session.duration
}
