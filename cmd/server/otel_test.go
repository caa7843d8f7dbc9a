package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// otelVars are the variables setupTelemetry reads; each test starts with them unset.
var otelVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_PROPAGATORS",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
}

// setenv sets the OpenTelemetry variables of a test: kv as name/value pairs, every other one
// unset.
func setenv(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, "")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

func TestExporterList(t *testing.T) {
	tests := []struct {
		give    []string // environment
		want    string   // the exporters, comma-separated, or the error
		wantErr bool
	}{
		{give: nil, want: ""},
		{give: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"}, want: "otlp"},
		{give: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces"}, want: "otlp"},
		{give: []string{"OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"}, want: ""},
		{give: []string{"OTEL_TRACES_EXPORTER", " Console , otlp,console"}, want: "console,otlp"},
		{give: []string{"OTEL_TRACES_EXPORTER", "zipkin"}, want: `OTEL_TRACES_EXPORTER: unsupported exporter "zipkin" (want otlp, console, none)`, wantErr: true},
	}
	for _, tt := range tests {
		setenv(t, tt.give...)
		got, err := exporterList("TRACES", "otlp", "console", "none")
		if tt.wantErr {
			if err == nil || err.Error() != tt.want {
				t.Errorf("%v: error %v, want %s", tt.give, err, tt.want)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tt.want {
			t.Errorf("%v: %v, %v; want %q", tt.give, got, err, tt.want)
		}
	}
}

func TestPropagators(t *testing.T) {
	tests := []struct {
		give string
		want []string // the fields the propagator reads
	}{
		{"", []string{"baggage", "traceparent", "tracestate"}},
		{"baggage", []string{"baggage"}},
		{"tracecontext, baggage", []string{"baggage", "traceparent", "tracestate"}},
		{"none", nil},
	}
	for _, tt := range tests {
		p, err := propagators(tt.give)
		if err != nil {
			t.Errorf("%q: %v", tt.give, err)
			continue
		}
		if got := slices.Sorted(slices.Values(p.Fields())); !slices.Equal(got, tt.want) {
			t.Errorf("%q reads %v, want %v", tt.give, got, tt.want)
		}
	}
	if _, err := propagators("b3"); err == nil {
		t.Error("b3 was accepted")
	}
}

func TestSetupTelemetry(t *testing.T) {
	ctx := context.Background()

	t.Run("nothing_set", func(t *testing.T) {
		setenv(t)
		tel, err := setupTelemetry(ctx, nil, nil)
		if err != nil || tel.tp != nil || tel.mp != nil {
			t.Errorf("with no OTEL_* variable: %+v %v, want neither traces nor metrics", tel, err)
		}
	})

	t.Run("disabled", func(t *testing.T) {
		setenv(t, "OTEL_SDK_DISABLED", "true", "OTEL_TRACES_EXPORTER", "console")
		if tel, err := setupTelemetry(ctx, nil, nil); err != nil || tel.tp != nil {
			t.Errorf("OTEL_SDK_DISABLED: %+v %v", tel, err)
		}
	})

	t.Run("console", func(t *testing.T) {
		setenv(t, "OTEL_TRACES_EXPORTER", "console", "OTEL_SERVICE_NAME", "svc-from-env")
		var out bytes.Buffer
		tel, err := setupTelemetry(ctx, &out, nil)
		if err != nil || tel.tp == nil || tel.mp != nil {
			t.Fatalf("%+v %v", tel, err)
		}
		_, sp := tel.tp.Tracer("test").Start(ctx, "console-span")
		sp.End()
		if err := tel.shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if s := out.String(); !strings.Contains(s, `"Name":"console-span"`) || !strings.Contains(s, "svc-from-env") {
			t.Errorf("console output: %s", s)
		}
	})

	t.Run("default_service_name", func(t *testing.T) {
		setenv(t, "OTEL_TRACES_EXPORTER", "console")
		var out bytes.Buffer
		tel, err := setupTelemetry(ctx, &out, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, sp := tel.tp.Tracer("test").Start(ctx, "s")
		sp.End()
		_ = tel.shutdown(ctx)
		if !strings.Contains(out.String(), defaultServiceName) {
			t.Errorf("console output without %s: %s", defaultServiceName, out.String())
		}
	})

	t.Run("prometheus", func(t *testing.T) {
		setenv(t, "OTEL_METRICS_EXPORTER", "prometheus")
		if _, err := setupTelemetry(ctx, nil, nil); err == nil || !strings.Contains(err.Error(), "--admin-addr") {
			t.Errorf("prometheus without a registry: %v", err)
		}
		reg := prometheus.NewRegistry()
		tel, err := setupTelemetry(ctx, nil, reg)
		if err != nil || tel.mp == nil {
			t.Fatalf("%+v %v", tel, err)
		}
		_ = tel.shutdown(ctx)
	})

	t.Run("bad_protocol", func(t *testing.T) {
		setenv(t, "OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
		if _, err := setupTelemetry(ctx, nil, nil); err == nil || !strings.Contains(err.Error(), "http/json") {
			t.Errorf("http/json: %v", err)
		}
	})

	t.Run("grpc", func(t *testing.T) {
		setenv(t, "OTEL_TRACES_EXPORTER", "otlp", "OTEL_METRICS_EXPORTER", "none", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		tel, err := setupTelemetry(ctx, nil, nil)
		if err != nil || tel.tp == nil {
			t.Fatalf("grpc: %+v %v", tel, err)
		}
		// No span was made, so nothing is sent to the address where nothing listens.
		if err := tel.shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
}
