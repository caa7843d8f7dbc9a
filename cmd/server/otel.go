package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OpenTelemetry SDK, configured from the standard environment variables of the
// OpenTelemetry specification, with no flag of its own:
//
//	OTEL_SDK_DISABLED              true turns everything off
//	OTEL_TRACES_EXPORTER           otlp, console, none (a comma-separated list)
//	OTEL_METRICS_EXPORTER          otlp, console, prometheus (served on --admin-addr /metrics), none
//	OTEL_EXPORTER_OTLP_PROTOCOL    http/protobuf (the default) or grpc; also _TRACES_ and _METRICS_
//	OTEL_EXPORTER_OTLP_ENDPOINT    and every other OTEL_EXPORTER_OTLP_* variable, read by the exporters
//	OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
//	OTEL_PROPAGATORS               tracecontext, baggage, none (default tracecontext,baggage)
//	OTEL_TRACES_SAMPLER[_ARG], OTEL_BSP_*, OTEL_METRIC_EXPORT_INTERVAL, read by the SDK
//
// One departure from the specification: an unset OTEL_TRACES_EXPORTER or OTEL_METRICS_EXPORTER
// means otlp only when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, or the signal's
// own), and none otherwise, so that a server started without any OTEL_* variable does not
// try to reach a collector that is not there.
//
// The console exporters write to the console writer run gives them: stderr over stdio, where
// stdout is the protocol's channel.

// telemetry is the SDK cmd/server runs: nil providers when a signal is off.
type telemetry struct {
	tp   *sdktrace.TracerProvider
	mp   *sdkmetric.MeterProvider
	prop propagation.TextMapPropagator
}

// defaultServiceName is service.name when OTEL_SERVICE_NAME does not say.
const defaultServiceName = "toolgrain-demo"

// setupTelemetry builds the SDK from the environment. Console exporters write to
// console; the Prometheus exporter registers on reg, and is an error when reg is nil (no
// --admin-addr to serve it on).
func setupTelemetry(ctx context.Context, console io.Writer, reg prometheus.Registerer) (*telemetry, error) {
	t := &telemetry{}
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return t, nil
	}
	traces, err := exporterList("TRACES", "otlp", "console", "none")
	if err != nil {
		return nil, err
	}
	metricsExp, err := exporterList("METRICS", "otlp", "console", "prometheus", "none")
	if err != nil {
		return nil, err
	}
	if t.prop, err = propagators(os.Getenv("OTEL_PROPAGATORS")); err != nil {
		return nil, err
	}
	if len(traces) == 0 && len(metricsExp) == 0 {
		return t, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", defaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	if len(traces) > 0 {
		opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
		for _, name := range traces {
			exp, err := spanExporter(ctx, name, console)
			if err != nil {
				return nil, t.fail(ctx, err)
			}
			opts = append(opts, sdktrace.WithBatcher(exp))
		}
		t.tp = sdktrace.NewTracerProvider(opts...)
	}
	if len(metricsExp) > 0 {
		opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, name := range metricsExp {
			r, err := metricReader(ctx, name, console, reg)
			if err != nil {
				return nil, t.fail(ctx, err)
			}
			opts = append(opts, sdkmetric.WithReader(r))
		}
		t.mp = sdkmetric.NewMeterProvider(opts...)
	}
	return t, nil
}

// fail shuts down what was built before err, and returns err.
func (t *telemetry) fail(ctx context.Context, err error) error {
	_ = t.shutdown(ctx)
	return err
}

// shutdown flushes and stops the providers.
func (t *telemetry) shutdown(ctx context.Context) error {
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// exporterList reads OTEL_<signal>_EXPORTER: the exporters to run, none for "none". Unset, it is
// otlp when an OTLP endpoint is set, and none otherwise.
func exporterList(signal string, known ...string) ([]string, error) {
	v := strings.TrimSpace(os.Getenv("OTEL_" + signal + "_EXPORTER"))
	if v == "" {
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != "" {
			return []string{"otlp"}, nil
		}
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(v, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		switch {
		case name == "none":
			return nil, nil
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("OTEL_%s_EXPORTER: unsupported exporter %q (want %s)", signal, name, strings.Join(known, ", "))
		case !slices.Contains(out, name):
			out = append(out, name)
		}
	}
	return out, nil
}

// otlpProtocol is the OTLP protocol of a signal: http/protobuf unless the environment says grpc.
func otlpProtocol(signal string) (string, error) {
	p := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if p == "" {
		p = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p = strings.TrimSpace(p); p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return p, nil
	}
	return "", fmt.Errorf("OTLP protocol %q is not supported (want http/protobuf or grpc)", p)
}

func spanExporter(ctx context.Context, name string, console io.Writer) (sdktrace.SpanExporter, error) {
	if name == "console" {
		return stdouttrace.New(stdouttrace.WithWriter(console))
	}
	proto, err := otlpProtocol("TRACES")
	if err != nil {
		return nil, err
	}
	if proto == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

func metricReader(ctx context.Context, name string, console io.Writer, reg prometheus.Registerer) (sdkmetric.Reader, error) {
	switch name {
	case "console":
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(console))
		if err != nil {
			return nil, err
		}
		return sdkmetric.NewPeriodicReader(exp), nil
	case "prometheus":
		if reg == nil {
			return nil, errors.New("OTEL_METRICS_EXPORTER=prometheus needs --admin-addr, whose /metrics serves it")
		}
		return otelprom.New(otelprom.WithRegisterer(reg))
	}
	proto, err := otlpProtocol("METRICS")
	if err != nil {
		return nil, err
	}
	var exp sdkmetric.Exporter
	if proto == "grpc" {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, err
	}
	return sdkmetric.NewPeriodicReader(exp), nil
}

// propagators reads OTEL_PROPAGATORS: W3C Trace Context and Baggage by default.
func propagators(v string) (propagation.TextMapPropagator, error) {
	if strings.TrimSpace(v) == "" {
		v = "tracecontext,baggage"
	}
	var list []propagation.TextMapPropagator
	for _, name := range strings.Split(v, ",") {
		switch name = strings.ToLower(strings.TrimSpace(name)); name {
		case "tracecontext":
			list = append(list, propagation.TraceContext{})
		case "baggage":
			list = append(list, propagation.Baggage{})
		case "none":
			return propagation.NewCompositeTextMapPropagator(), nil
		default:
			return nil, fmt.Errorf("OTEL_PROPAGATORS: unsupported propagator %q (want tracecontext, baggage or none)", name)
		}
	}
	return propagation.NewCompositeTextMapPropagator(list...), nil
}
