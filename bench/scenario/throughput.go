package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Throughput runs cfg.Concurrency workers that each call echo in a loop for
// cfg.Warmup+cfg.Duration, and measures the calls answered in the last
// cfg.Duration: calls/s, latency percentiles, errors; when the server's pid
// is known, its CPU per call and its memory idle (after one echo, before the
// load) and under load; when its pprof URL is known, its allocation per
// call.
func Throughput(ctx context.Context, t Target, cfg Config) (*Result, error) {
	params := map[string]any{
		"concurrency": cfg.Concurrency, "duration_sec": cfg.Duration.Seconds(),
		"warmup_sec": cfg.Warmup.Seconds(), "payload_bytes": cfg.Payload,
	}
	toolParamsOf(params, "", cfg.Fast)
	r := newResult("throughput", t, params)
	c, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r.connected(c)
	pid := t.pid(c)

	fast := fastCall(cfg, strings.Repeat("x", cfg.Payload))
	if err := firstCall(ctx, c, cfg, "throughput", fast); err != nil {
		return nil, err
	}
	if s, ok := sample(pid); ok {
		r.set("rss_idle_kb", float64(s.RSSKB))
		setAnon(r, "rss_idle_anon_kb", s)
	}

	cpu := newWindow(t, pid)
	start, end := cpu.hooks()
	sum, lost := runLoad(ctx, cfg, cfg.Concurrency, func(ctx context.Context, w *worker) error {
		begin := time.Now()
		msg, err := callOnce(ctx, c, cfg.Timeout, "tools/call", fast.params)
		done := time.Now()
		if !fast.ok(msg, err) {
			w.fail(begin, done, msg, err)
			return c.Lost()
		}
		w.record(outOK, begin, done)
		return nil
	}, loadHooks{windowStart: start, windowEnd: end, progress: loadLine("throughput", cfg)})
	if lost != nil {
		r.note("connection lost during the run: %v", lost)
	}
	r.set("calls_per_sec", float64(sum.ok)/cfg.Duration.Seconds())
	r.set("calls_total", float64(sum.all))
	r.set("errors", float64(sum.errors))
	noteErrors(r, sum)
	errorKinds(r, sum)
	latencyMetrics(r, "", sum.lat)
	cpu.perCall(r, sum.ok)
	r.clientNotes(c)
	endSample(r, pid)
	return r.finish(), nil
}

// loadLine makes the progress line of a load loop.
func loadLine(name string, cfg Config) func(*load, time.Time) string {
	var lastTotal int64
	lastAt := time.Now()
	return func(l *load, now time.Time) string {
		total := l.total.Load()
		rate := float64(total-lastTotal) / now.Sub(lastAt).Seconds()
		lastTotal, lastAt = total, now
		phase := fmt.Sprintf("%.0fs/%.0fs", now.Sub(l.to.Add(-cfg.Duration)).Seconds(), cfg.Duration.Seconds())
		if now.Before(l.from) {
			phase = "warm-up"
		}
		return fmt.Sprintf("%s %s: %d calls, %.0f/s, %d errors", name, phase, total, rate, l.failed.Load())
	}
}
