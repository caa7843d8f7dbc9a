package gateway_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/protocol"
)

// The gateway's goals, measured (BENCHMARKS.md): CPU per proxied echo at most 1.5 times a
// direct echo's, a median added latency under 0.2 ms, both over stdio to a stdio upstream; and
// under 64 KiB per mounted stdio upstream (its connection, not its process).
//
//	go test -run '^$' -bench 'Echo|Upstream' -benchtime 3s ./gateway
//
// The echo benchmarks drive a server over a pair of OS pipes, as a stdio client does, with
// calls made one at a time (the latency) or sixteen at once (the CPU per call). "direct" is
// the demonstration echo served by the server itself; "proxied" is the same server mounting
// the server binary over stdio (noPrefix) with no tool of its own. cpu-µs/op is this process's
// CPU (getrusage), which holds the benchmark's client and the server under test but not the
// upstream's process; p50-µs is the median time of one call.

// stdioClient speaks to a server over OS pipes.
type stdioClient struct {
	w  *os.File
	r  *protocol.LineReader
	mu sync.Mutex
}

func serveOverPipes(b *testing.B, srv *toolgrain.Server) *stdioClient {
	b.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ServeStdio(context.Background(), inR, outW)
		_ = outW.Close()
	}()
	b.Cleanup(func() {
		_ = inW.Close()
		<-done
		_ = inR.Close()
		_ = outR.Close()
	})
	c := &stdioClient{w: inW, r: protocol.NewLineReader(outR, 0)}
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	c.read(b, `"id":"init"`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *stdioClient) send(line string) {
	c.mu.Lock()
	_, _ = io.WriteString(c.w, line+"\n")
	c.mu.Unlock()
}

// read reads until a line containing sub.
func (c *stdioClient) read(b *testing.B, sub string) string {
	b.Helper()
	for {
		line, err := c.r.Next()
		if err != nil {
			b.Fatalf("read: %v", err)
		}
		if strings.Contains(string(line), sub) {
			return string(line)
		}
	}
}

// echoServer returns a server for the echo benchmarks: the demonstration tools ("direct"), or
// none of its own and the server binary mounted, spoken to in the era the probe finds (the
// 2026-07-28 one: "proxied") or in the initialize era ("proxied-legacy").
func echoServer(b *testing.B, variant string) *toolgrain.Server {
	b.Helper()
	if variant == "direct" {
		srv, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = srv.Close() })
		return srv
	}
	bin := build(&testing.T{}, "..", "./cmd/server")
	srv, err := toolgrain.NewServer(toolgrain.Config{})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := gateway.New(srv, gateway.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = gw.Close()
		_ = srv.Close()
	})
	proto := ""
	if variant == "proxied-legacy" {
		proto = "legacy"
	}
	if err := gw.Mount(gateway.Mount{Name: "up", NoPrefix: true, Protocol: proto, Source: gateway.Stdio{Command: bin, Args: []string{"--log-level", "error"}}}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the upstream starts in well under a second
	defer cancel()
	if err := gw.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	return srv
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const echoCall = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}}`

// BenchmarkEchoLatency: one call at a time; p50-µs is the median call.
func BenchmarkEchoLatency(b *testing.B) {
	for _, name := range []string{"direct", "proxied", "proxied-legacy"} {
		b.Run(name, func(b *testing.B) {
			c := serveOverPipes(b, echoServer(b, name))
			for i := range 200 { // warm up
				c.send(fmt.Sprintf(echoCall, i))
				c.read(b, fmt.Sprintf(`"id":%d,`, i))
			}
			lat := make([]time.Duration, 0, b.N)
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				c.send(fmt.Sprintf(echoCall, 1000+i))
				c.read(b, fmt.Sprintf(`"id":%d,`, 1000+i))
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkEchoCPU: sixteen calls in flight; cpu-µs/op is the CPU per call.
func BenchmarkEchoCPU(b *testing.B) {
	const inFlight = 16
	for _, name := range []string{"direct", "proxied", "proxied-legacy"} {
		b.Run(name, func(b *testing.B) {
			c := serveOverPipes(b, echoServer(b, name))
			run := func(n, base int) {
				// A window of inFlight calls: each answer lets the next call go.
				sent := 0
				for ; sent < min(inFlight, n); sent++ {
					c.send(fmt.Sprintf(echoCall, base+sent))
				}
				for got := 0; got < n; got++ {
					c.read(b, `"result"`)
					if sent < n {
						c.send(fmt.Sprintf(echoCall, base+sent))
						sent++
					}
				}
			}
			run(500, 0)
			cpu0 := cpuTime()
			b.ResetTimer()
			run(b.N, 1_000_000)
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkUpstreamMemory: the memory of a mounted stdio upstream's connection in this
// process (live heap and goroutine stacks, after a GC), with 16 upstreams mounted after 16 others: the fake
// upstream (this test binary) serving one tool, so that the figure is the connection's and the
// mount's, not the compiled schemas of many tools. b.N is ignored: the figure is per upstream.
func BenchmarkUpstreamMemory(b *testing.B) {
	const n = 16
	srv, err := toolgrain.NewServer(toolgrain.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	gw, err := gateway.New(srv, gateway.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer gw.Close()
	// n upstreams first, then n more, measured: what every upstream shares (the code's first
	// use, the runtime's caches, the server's own growth under n listings at once) is not
	// counted.
	mountFakesOn(b, gw, 0, n)
	heap0, stack0, g0 := inUse()
	mountFakesOn(b, gw, n, 2*n)
	heap1, stack1, g1 := inUse()
	b.ReportMetric(float64(heap1+stack1-heap0-stack0)/n/1024, "KiB/upstream")
	b.ReportMetric(float64(heap1-heap0)/n/1024, "heap-KiB/upstream")
	b.ReportMetric(float64(stack1-stack0)/n/1024, "stack-KiB/upstream")
	b.ReportMetric(float64(g1-g0)/n, "goroutines/upstream")
	b.ReportMetric(0, "ns/op")
}

// mountFakesOn mounts the one-tool fake upstreams u<from> to u<to-1> and waits until they are
// listed.
func mountFakesOn(b *testing.B, gw *gateway.Gateway, from, to int) {
	b.Helper()
	for i := from; i < to; i++ {
		if err := gw.Mount(fake(fmt.Sprintf("u%d", i), map[string]string{"FAKE_ONE_TOOL": "1"})); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // 16 processes start in a few seconds on a loaded machine
	defer cancel()
	if err := gw.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
}

// inUse is the live heap and the goroutine stacks after a collection.
func inUse() (heap, stack uint64, goroutines int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine()
}
