package scenario

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/toolgrain/toolgrain/bench/internal/procstat"
)

// Thresholds of the cancel-cpu verdict.
const (
	// minLoadedPoints is how many percentage points of CPU the calls in
	// flight must add to the idle server for the measurement to say
	// anything: below it the tool did not load the server.
	minLoadedPoints = 10
	// maxWorkLeftPct is the share of the loaded CPU (above idle) a server
	// may still use after the cancellation and count as having stopped.
	maxWorkLeftPct = 25
)

// CancelCPU asks whether a server stops cancelled work, which the wire does
// not show: it measures the server's idle CPU for cfg.Idle, puts
// cfg.CPUCalls CPU-bound calls in flight (cfg.CPU, spin by default),
// measures the server's CPU with them running over the second half of
// cfg.LoadWait, cancels them all, and measures the server's CPU over
// cfg.Window from the last cancellation. A server that stops cancelled work
// drops to idle at once. It reports the three CPU figures in percent of one
// core, the share of the work left after the cancellation, the verdict
// (work_stopped), and late responses to the cancelled calls. It needs the
// server's pid.
func CancelCPU(ctx context.Context, t Target, cfg Config) (*Result, error) {
	params := map[string]any{
		"n": cfg.CPUCalls, "idle_sec": cfg.Idle.Seconds(), "load_wait_sec": cfg.LoadWait.Seconds(),
		"window_sec": cfg.Window.Seconds(), "timeout_sec": cfg.Timeout.Seconds(), "stall_sec": cfg.Stall.Seconds(),
	}
	toolParamsOf(params, "", cfg.Fast)
	toolParamsOf(params, "cpu_", cfg.CPU)
	r := newResult("cancel-cpu", t, params)
	c, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r.connected(c)
	pid := t.pid(c)
	if pid <= 0 {
		return nil, fmt.Errorf("cancel-cpu: no server pid (stdio gives it; over HTTP pass --pid): the measurement is the server's CPU")
	}
	if _, ok := sample(pid); !ok {
		return nil, fmt.Errorf("cancel-cpu: cannot read /proc/%d: the measurement needs a local Linux process", pid)
	}
	fast := fastCall(cfg, "after")
	if err := firstCall(ctx, c, cfg, "cancel-cpu", fast); err != nil {
		return nil, err
	}
	cpuPct := func(a, b procstat.Sample, at, bt time.Time) float64 {
		return 100 * (b.CPU - a.CPU).Seconds() / bt.Sub(at).Seconds()
	}

	// Idle.
	var phase atomic.Value
	phase.Store("measuring the idle server")
	var started atomic.Int64
	prog := startProgress(cfg.Progress, func() string {
		return fmt.Sprintf("cancel-cpu: %s (%d/%d started)", phase.Load(), started.Load(), cfg.CPUCalls)
	})
	defer prog.Stop()
	i0, i0t := mustSample(pid)
	if err := sleepCtx(ctx, cfg.Idle); err != nil {
		return nil, err
	}
	i1, i1t := mustSample(pid)
	idle := cpuPct(i0, i1, i0t, i1t)
	r.set("cpu_idle_pct", idle)

	// Loaded.
	phase.Store("starting the CPU-bound calls")
	cc := cpuCall(cfg)
	calls, err := startMany(c, cc, cfg.CPUCalls, 0, &started)
	if err != nil {
		r.note("could start only %d of %d %s calls: %v", len(calls), cfg.CPUCalls, cc.name, err)
	}
	r.set("sent", float64(len(calls)))
	if err := untilStalled(ctx, c, cfg.Stall, c.Flush); err != nil {
		return nil, fmt.Errorf("cancel-cpu: the %s calls did not reach the server: %w", cc.name, err)
	}
	phase.Store("calls in flight")
	if err := sleepCtx(ctx, cfg.LoadWait/2); err != nil {
		return nil, err
	}
	l0, l0t := mustSample(pid)
	if err := sleepCtx(ctx, cfg.LoadWait-cfg.LoadWait/2); err != nil {
		return nil, err
	}
	l1, l1t := mustSample(pid)
	loaded := cpuPct(l0, l1, l0t, l1t)
	r.set("cpu_loaded_pct", loaded)
	if err := answeredEarly(r, calls, "cancel-cpu", cc.name); err != nil {
		return nil, err
	}

	// Cancelled.
	phase.Store("cancelling")
	firstCancel := time.Now()
	sent, cancelErr := cancelAll(ctx, c, cfg, calls, "cancel-cpu")
	a0, a0t := mustSample(pid)
	r.set("cancels_sent", float64(sent))
	r.set("cancel_send_ms", ms(a0t.Sub(firstCancel)))
	if cancelErr != nil {
		return nil, fmt.Errorf("cancel-cpu: sending the cancellations failed: %w", cancelErr)
	}
	phase.Store("measuring the CPU after the cancellation")
	if err := sleepCtx(ctx, cfg.Window); err != nil {
		return nil, err
	}
	a1, a1t := mustSample(pid)
	after := cpuPct(a0, a1, a0t, a1t)
	r.set("cpu_after_cancel_pct", after)
	st := c.Stats()
	r.set("late_responses", float64(st.Late))
	r.set("late_ok", float64(st.LateOK))
	if loaded-idle < minLoadedPoints {
		r.note("the %d %s calls in flight raised the server's CPU by %.0f points only (from %.0f %% to %.0f %%): the tool did not load the server, so whether the work stopped is not judged", len(calls), cc.name, loaded-idle, idle, loaded)
	} else {
		left := 100 * (after - idle) / (loaded - idle)
		r.set("cpu_work_left_pct", max(left, 0))
		stopped := 0.0
		if left <= maxWorkLeftPct {
			stopped = 1
		}
		r.set("work_stopped", stopped)
	}
	// The server answers again once it has taken the cancellations.
	if msg, err := callOnce(ctx, c, cfg.Timeout, "tools/call", fast.params); !fast.ok(msg, err) {
		r.note("the follow-up %s was not answered correctly within %s: %s", fast.name, cfg.Timeout, describe(msg, err))
	}
	httpStreams(r, t, c.Stats())
	r.clientNotes(c)
	endSample(r, pid)
	if err := c.Alive(); err != nil {
		r.note("server gone at the end: %v", err)
	}
	return r.finish(), nil
}

// mustSample reads the server and the time of the reading; a process that
// is gone reads as zero, which the figures then show.
func mustSample(pid int) (procstat.Sample, time.Time) {
	s, _ := sample(pid)
	return s, time.Now()
}
