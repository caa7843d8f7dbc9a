package scenario

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
)

// Mixed runs a throughput load in which a fraction cfg.CancelFrac of the
// calls are sleep calls of cfg.MixedSleepMs that the client cancels after a
// random delay below cfg.CancelWithin (default: half their duration), and
// the rest are echo calls. Each
// of cfg.Concurrency workers picks one or the other per call: it waits for
// an echo's answer, but not for a sleep, whose cancellation is sent by a
// timer of its own, so the client's delays do not cap the rate; at most
// cfg.MaxSleeps sleep calls are in flight at once. It reports calls finished
// per second (echo answered or sleep cancelled), late responses for the
// cancelled calls, counted until cfg.Window after the load, and errors.
//
// A sleep call is cancelled at most half-way through its duration as the
// client measures it, so a server that starts it when it arrives cannot have
// finished it; still, a server whose input is backed up may read the
// cancellation after the sleep ended, and answer in good faith. Those show
// up in late_ok; late_responses minus late_ok are cancellations the server
// answered itself.
func Mixed(ctx context.Context, t Target, cfg Config) (*Result, error) {
	params := map[string]any{
		"concurrency": cfg.Concurrency, "duration_sec": cfg.Duration.Seconds(),
		"warmup_sec": cfg.Warmup.Seconds(), "cancel_frac": cfg.CancelFrac,
		"sleep_ms": cfg.MixedSleepMs, "max_sleeps": cfg.MaxSleeps, "cancel_within_sec": maxDelaySec(cfg),
		"window_sec": cfg.Window.Seconds(), "payload_bytes": cfg.Payload,
	}
	toolParamsOf(params, "", cfg.Fast)
	toolParamsOf(params, "slow_", cfg.Slow)
	r := newResult("mixed", t, params)
	c, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r.connected(c)
	pid := t.pid(c)

	fast := fastCall(cfg, strings.Repeat("x", cfg.Payload))
	slow := slowCall(cfg, cfg.MixedSleepMs)
	if err := firstCall(ctx, c, cfg, "mixed", fast); err != nil {
		return nil, err
	}
	maxDelay := cfg.CancelWithin
	if maxDelay <= 0 {
		maxDelay = time.Duration(cfg.MixedSleepMs) * time.Millisecond / 2
	}

	var (
		sleepers            sync.WaitGroup
		slots               = make(chan struct{}, max(cfg.MaxSleeps, 1)) // sleep calls in flight
		cancelled, sleepErr atomic.Int64                                 // in the window
		sleepTool, sleepRPC atomic.Int64                                 // of sleepErr: isError results, JSON-RPC errors
		cancelsSent         atomic.Int64                                 // in the whole run
		firstSleepErr       atomic.Pointer[string]
	)
	// cancelLater cancels call after delay and counts the outcome.
	cancelLater := func(l *load, call *client.Call, delay time.Duration) {
		defer func() { <-slots }()
		// The delay runs from when the request left the client: over HTTP
		// a cancellation sent earlier could overtake its request.
		select {
		case <-call.Written():
		case <-ctx.Done():
			return
		}
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-call.Done():
			// Answered before its cancellation: only a rejection is this
			// fast.
			msg, err := call.Result()
			if l.inWindow(time.Now()) {
				sleepErr.Add(1)
				switch errorKind(msg, err) {
				case "tool":
					sleepTool.Add(1)
				case "rpc":
					sleepRPC.Add(1)
				}
			}
			l.failed.Add(1)
			firstSleepErr.CompareAndSwap(nil, ptr(slow.name+" answered before its cancellation: "+describe(msg, err)))
			return
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		sent, err := c.Cancel(cctx, call, "mcpbench mixed scenario")
		cancel()
		now := time.Now()
		l.total.Add(1)
		inWindow := l.inWindow(now)
		switch {
		case err == nil && sent:
			cancelsSent.Add(1)
			if inWindow {
				cancelled.Add(1)
			}
		default: // the send failed, or the call was answered meanwhile
			l.failed.Add(1)
			if inWindow {
				sleepErr.Add(1)
			}
			what := slow.name + " answered while its cancellation was being sent"
			if err != nil {
				what = "cancellation failed: " + err.Error()
			}
			firstSleepErr.CompareAndSwap(nil, &what)
		}
	}

	cpu := newWindow(t, pid)
	start, end := cpu.hooks()
	sum, lost := runLoad(ctx, cfg, cfg.Concurrency, func(opCtx context.Context, w *worker) error {
		begin := time.Now()
		if w.rng.Float64() >= cfg.CancelFrac {
			msg, err := callOnce(opCtx, c, cfg.Timeout, "tools/call", fast.params)
			done := time.Now()
			if !fast.ok(msg, err) {
				w.fail(begin, done, msg, err)
				return c.Lost()
			}
			w.record(outOK, begin, done)
			return nil
		}
		select {
		case slots <- struct{}{}:
		case <-opCtx.Done():
			return nil
		}
		call, err := c.Start("tools/call", slow.params)
		if err != nil {
			<-slots
			w.fail(begin, time.Now(), nil, err)
			return c.Lost()
		}
		delay := time.Duration(0)
		if maxDelay > 0 {
			delay = time.Duration(w.rng.Int64N(int64(maxDelay)))
		}
		sleepers.Add(1)
		// Owned by Mixed, which waits on sleepers after the load; it ends
		// once the call is cancelled, answered, or ctx is done.
		go func() {
			defer sleepers.Done()
			cancelLater(w.l, call, delay)
		}()
		return nil
	}, loadHooks{windowStart: start, windowEnd: end, progress: loadLine("mixed", cfg)})
	sleepers.Wait()
	if lost != nil {
		r.note("connection lost during the run: %v", lost)
	}
	secs := cfg.Duration.Seconds()
	nCancelled := cancelled.Load()
	r.set("completed_per_sec", float64(sum.ok+nCancelled)/secs)
	r.set("calls_total", float64(sum.all+cancelsSent.Load()))
	r.set("echo_per_sec", float64(sum.ok)/secs)
	r.set("cancelled_per_sec", float64(nCancelled)/secs)
	r.set("errors", float64(sum.errors+sleepErr.Load()))
	if sum.firstErr == "" && firstSleepErr.Load() != nil {
		sum.firstErr = *firstSleepErr.Load()
	}
	sum.errors += sleepErr.Load()
	sum.errTool += sleepTool.Load()
	sum.errRPC += sleepRPC.Load()
	noteErrors(r, sum)
	errorKinds(r, sum)
	latencyMetrics(r, "", sum.lat)
	cpu.perCall(r, sum.ok+nCancelled)

	if err := sleepCtx(ctx, cfg.Window); err != nil {
		return nil, err
	}
	// A ping (modern: a discover) shows the session is still usable; over
	// stdio, where a server answers in the order it reads, it also lets every
	// late response to an earlier cancellation arrive first.
	if err := ping(ctx, c, cfg.Timeout); err != nil {
		r.note("no answer to a %s after the load: %v", c.PingMethod(), err)
	}
	st := c.Stats()
	r.set("cancels_sent", float64(cancelsSent.Load()))
	r.set("late_responses", float64(st.Late))
	r.set("late_ok", float64(st.LateOK))
	httpStreams(r, t, st)
	r.clientNotes(c)
	endSample(r, pid)
	if err := c.Alive(); err != nil {
		r.note("server gone at the end: %v", err)
	}
	return r.finish(), nil
}

func maxDelaySec(cfg Config) float64 {
	if cfg.CancelWithin > 0 {
		return cfg.CancelWithin.Seconds()
	}
	return (time.Duration(cfg.MixedSleepMs) * time.Millisecond / 2).Seconds()
}

func ptr[T any](v T) *T { return &v }
