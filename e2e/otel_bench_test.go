package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
)

// benchWindow is the number of echo calls BenchmarkEchoTelemetry keeps in flight.
const benchWindow = 16

// BenchmarkEchoTelemetry measures what telemetry costs an echo call: throughput (calls/s) and
// the process's CPU per call (cpu-µs/call: user and system time of the whole test process, the
// in-process client included, divided by the calls) over stdio pipes with 16 calls in flight,
// for each setting:
//
//   - off: nil providers, the default;
//   - noop: the OpenTelemetry API's no-op tracer and meter providers;
//   - sdk: the SDK sampling every trace, spans batched and exported over OTLP/HTTP to a receiver
//     in the process that reads and discards them, and the metrics SDK recording (read by a
//     manual reader, never collected here);
//   - sdk_10pct: the same sampling one trace in ten.
func BenchmarkEchoTelemetry(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	sdk := func(b *testing.B, sampler sdktrace.Sampler) toolgrain.Config {
		exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
		if err != nil {
			b.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithBatcher(exp))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() {
			_ = tp.Shutdown(context.Background())
			_ = mp.Shutdown(context.Background())
		})
		return toolgrain.Config{Telemetry: toolgrain.TelemetryConfig{TracerProvider: tp, MeterProvider: mp}}
	}
	settings := []struct {
		name string
		cfg  func(*testing.B) toolgrain.Config
	}{
		{"off", func(*testing.B) toolgrain.Config { return toolgrain.Config{} }},
		{"noop", func(*testing.B) toolgrain.Config {
			return toolgrain.Config{Telemetry: toolgrain.TelemetryConfig{
				TracerProvider: tracenoop.NewTracerProvider(),
				MeterProvider:  metricnoop.NewMeterProvider(),
			}}
		}},
		{"sdk", func(b *testing.B) toolgrain.Config { return sdk(b, sdktrace.AlwaysSample()) }},
		{"sdk_10pct", func(b *testing.B) toolgrain.Config {
			return sdk(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))
		}},
	}
	for _, s := range settings {
		b.Run(s.name, func(b *testing.B) {
			cfg := s.cfg(b)
			cfg.Tools = demo.Tools()
			benchEchoWindow(b, cfg)
		})
	}
}

// benchEchoWindow runs b.N echo calls over stdio, benchWindow at a time, and reports calls/s
// and cpu-µs/call.
func benchEchoWindow(b *testing.B, cfg toolgrain.Config) {
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	conn := startBenchStdio(b, srv)
	defer conn.stop(b)
	// The writer sends a call whenever fewer than benchWindow are unanswered. Owned by this
	// function: it ends after b.N calls, at the first failed write, or when stop closes (the
	// reader failed).
	slots := make(chan struct{}, benchWindow)
	stop := make(chan struct{})
	defer close(stop)
	wrote := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, t0 := cpuTime(), time.Now()
	go func() {
		var line []byte
		for i := range b.N {
			select {
			case slots <- struct{}{}:
			case <-stop:
				wrote <- nil
				return
			}
			line = append(appendEchoCall(line[:0], i+1), '\n')
			if _, err := conn.in.Write(line); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	for range b.N {
		if _, err := conn.out.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
		<-slots
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	b.StopTimer()
	if err := <-wrote; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
