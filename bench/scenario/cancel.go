package scenario

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/internal/procstat"
)

// Cancel puts cfg.N sleep calls of cfg.SleepMs in flight, cancels every one
// (with notifications/cancelled; over modern HTTP by closing its response
// stream), then sends an echo and measures how long it took to be answered,
// counted from the first and from the last cancellation. For cfg.Window after the last cancellation it counts late
// responses (responses for cancelled calls, which the spec says a server
// should not send). It samples the server's memory and threads before the
// load, with the calls in flight, after the window and after cfg.Settle.
func Cancel(ctx context.Context, t Target, cfg Config) (*Result, error) {
	params := map[string]any{
		"n": cfg.N, "sleep_ms": cfg.SleepMs, "window_sec": cfg.Window.Seconds(),
		"settle_sec": cfg.Settle.Seconds(), "load_wait_sec": cfg.LoadWait.Seconds(),
		"timeout_sec": cfg.Timeout.Seconds(), "stall_sec": cfg.Stall.Seconds(),
	}
	if cfg.ProgressEvery > 0 {
		params["progress_every"] = cfg.ProgressEvery
	}
	toolParamsOf(params, "", cfg.Fast)
	toolParamsOf(params, "slow_", cfg.Slow)
	r := newResult("cancel", t, params)
	c, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r.connected(c)
	pid := t.pid(c)

	fast := fastCall(cfg, "after")
	if err := firstCall(ctx, c, cfg, "cancel", fast); err != nil {
		return nil, err
	}
	if pid <= 0 {
		r.note("no server pid (stdio gives it; over HTTP pass --pid): memory and threads not sampled")
	}
	mem := func(prefix string) procstat.Sample {
		s, ok := sample(pid)
		if ok {
			r.set("rss_"+prefix+"_kb", float64(s.RSSKB))
			r.set("threads_"+prefix, float64(s.Threads))
		}
		return s
	}
	before := mem("before")

	// Load: every sleep call in flight.
	var phase atomic.Value
	phase.Store("sending the slow calls")
	var started atomic.Int64
	prog := startProgress(cfg.Progress, func() string {
		st := c.Stats()
		return fmt.Sprintf("cancel: %s (%d/%d started, %d late so far)", phase.Load(), started.Load(), cfg.N, st.Late)
	})
	defer prog.Stop()
	slow := slowCall(cfg, cfg.SleepMs)
	calls, err := startMany(c, slow, cfg.N, cfg.ProgressEvery, &started)
	if err != nil {
		r.note("could start only %d of %d %s calls: %v", len(calls), cfg.N, slow.name, err)
	}
	r.set("sent", float64(len(calls)))
	phase.Store("waiting for the server to take the calls")
	flushErr := untilStalled(ctx, c, cfg.Stall, c.Flush)
	if flushErr != nil {
		// Anything sent now would queue behind the unread calls: the ping is
		// skipped, and the cancellations wait cfg.Stall at most.
		r.note("not all %d %s calls reached the server: %v", len(calls), slow.name, flushErr)
	} else {
		r.set("written", float64(len(calls)))
		pingStart := time.Now()
		if err := ping(ctx, c, cfg.Timeout); err != nil {
			r.note("no answer to a %s with the %s calls in flight: %v", c.PingMethod(), slow.name, err)
		} else {
			r.set("loaded_ping_ms", ms(time.Since(pingStart)))
		}
	}
	phase.Store("calls in flight")
	if err := sleepCtx(ctx, cfg.LoadWait); err != nil {
		return nil, err
	}
	mem("loaded")
	if err := answeredEarly(r, calls, "cancel", slow.name); err != nil {
		return nil, err
	}

	// Cancel them all, then see how soon the server answers again.
	phase.Store("cancelling")
	firstCancel := time.Now()
	sent, cancelErr := cancelAll(ctx, c, cfg, calls, "cancel")
	lastCancel := time.Now()
	r.set("cancels_sent", float64(sent))
	if cancelErr != nil {
		r.note("sending the cancellations failed: %v", cancelErr)
	} else {
		r.set("cancel_send_ms", ms(lastCancel.Sub(firstCancel)))
	}
	phase.Store("follow-up echo")
	echoed, progressAtEcho := false, int64(0)
	if cancelErr != nil {
		r.note("no follow-up echo: the cancellations themselves did not get through")
	} else if msg, err := callOnce(ctx, c, cfg.Timeout, "tools/call", fast.params); !fast.ok(msg, err) {
		r.note("the follow-up %s was not answered correctly within %s: %s", fast.name, cfg.Timeout, describe(msg, err))
	} else {
		now := time.Now()
		r.set("echo_after_first_cancel_ms", ms(now.Sub(firstCancel)))
		r.set("echo_after_last_cancel_ms", ms(now.Sub(lastCancel)))
		echoed = true
		progressAtEcho = c.Stats().LateProgress
	}

	// Window: late responses.
	phase.Store("counting late responses")
	if err := sleepCtx(ctx, time.Until(lastCancel.Add(cfg.Window))); err != nil {
		return nil, err
	}
	st := c.Stats()
	if cancelErr == nil {
		r.set("late_responses", float64(st.Late))
		r.set("late_ok", float64(st.LateOK))
		lateProgress(r, cfg, st, echoed, progressAtEcho)
	} else {
		// Cancellations the server never read say nothing about late
		// responses; a zero here would flatter it.
		r.note("late responses not counted: the cancellations did not all reach the server (%d seen anyway)", st.Late)
	}
	mem("after")
	if httpStreams(r, t, st) {
		c.AbortCancelled()
	}
	phase.Store("settling")
	if err := sleepCtx(ctx, cfg.Settle); err != nil {
		return nil, err
	}
	if settled := mem("settled"); settled.RSSKB > 0 && before.RSSKB > 0 {
		r.set("rss_settled_pct_of_before", 100*float64(settled.RSSKB)/float64(before.RSSKB))
	}
	r.clientNotes(c)
	if err := c.Alive(); err != nil {
		r.note("server gone at the end: %v", err)
	}
	return r.finish(), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// httpStreams records, over HTTP, what became of the response streams of the
// cancelled calls, and reports whether the transport is HTTP. In the legacy
// era the server ends them (quiet_closes) or keeps them open; in the modern
// era the client closes them itself.
func httpStreams(r *Result, t Target, st client.Stats) bool {
	if t.Transport != "http" {
		return false
	}
	r.set("streams_open_after_window", float64(st.Open))
	if t.era() == client.Modern {
		r.set("streams_closed_by_client", float64(st.ClosedByClient))
	} else {
		r.set("quiet_closes", float64(st.QuietCloses))
	}
	return true
}

// startMany starts n calls of sc; every k-th (k = progressEvery > 0) asks
// for progress. started counts them as they go.
func startMany(c *client.Client, sc call, n, progressEvery int, started *atomic.Int64) ([]*client.Call, error) {
	calls := make([]*client.Call, 0, n)
	for i := range n {
		start := c.Start
		if progressEvery > 0 && i%progressEvery == 0 {
			start = c.StartWithProgress
		}
		call, err := start("tools/call", sc.params)
		if err != nil {
			return calls, err
		}
		calls = append(calls, call)
		started.Add(1)
	}
	return calls, nil
}

// lateProgress records, when the calls asked for progress, the progress
// notifications received for the cancelled calls: progress_after_cancel,
// all that came after their cancellation was sent, including those already
// on their way; late_progress, those that came after the follow-up call was
// answered, when the server had read every cancellation (over stdio it
// reads in order; over HTTP every cancellation was accepted before).
func lateProgress(r *Result, cfg Config, st client.Stats, echoed bool, atEcho int64) {
	if cfg.ProgressEvery <= 0 {
		return
	}
	r.set("progress_received", float64(st.Progress))
	r.set("progress_after_cancel", float64(st.LateProgress))
	if echoed {
		r.set("late_progress", float64(st.LateProgress-atEcho))
	}
	if st.Progress == 0 {
		r.note("no progress notification arrived at all: the server sends none for this tool, so late_progress says nothing")
	}
}

func firstDone(calls []*client.Call) int {
	for i, cr := range calls {
		select {
		case <-cr.Done():
			return i
		default:
		}
	}
	return 0
}

// answeredEarly records how many of calls were answered before any cancellation was sent: a note
// when some were, and an error when all were (nothing was in flight to cancel).
func answeredEarly(r *Result, calls []*client.Call, scenario, tool string) error {
	early := 0
	for _, cr := range calls {
		select {
		case <-cr.Done():
			early++
		default:
		}
	}
	r.set("answered_before_cancel", float64(early))
	if early == 0 {
		return nil
	}
	msg, err := calls[firstDone(calls)].Result()
	if early == len(calls) {
		return fmt.Errorf("%s: every %s call was answered before its cancellation, e.g. %s: none was in flight (its arguments must make it run longer than -load-wait)", scenario, tool, describe(msg, err))
	}
	r.note("%d %s calls were answered before any cancellation, e.g. %s", early, tool, describe(msg, err))
	return nil
}

// cancelAll sends a cancellation for each of calls, cfg.Concurrency at once, and gives up when
// sending makes no progress for cfg.Stall. It returns how many were sent.
func cancelAll(ctx context.Context, c *client.Client, cfg Config, calls []*client.Call, scenario string) (int, error) {
	var sent int
	err := untilStalled(ctx, c, cfg.Stall, func(ctx context.Context) error {
		var err error
		sent, err = c.CancelMany(ctx, calls, "mcpbench "+scenario+" scenario", max(cfg.Concurrency, 1))
		return err
	})
	return sent, err
}
