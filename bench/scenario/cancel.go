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
	r := newResult("cancel", t, map[string]any{
		"n": cfg.N, "sleep_ms": cfg.SleepMs, "window_sec": cfg.Window.Seconds(),
		"settle_sec": cfg.Settle.Seconds(), "load_wait_sec": cfg.LoadWait.Seconds(),
		"timeout_sec": cfg.Timeout.Seconds(), "stall_sec": cfg.Stall.Seconds(),
	})
	c, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r.connected(c)
	pid := t.pid(c)

	echoParams := toolParams("echo", map[string]any{"text": "after"})
	if err := firstEcho(ctx, c, cfg, "cancel", echoParams, "after"); err != nil {
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
	phase.Store("sending sleep calls")
	var started atomic.Int64
	prog := startProgress(cfg.Progress, func() string {
		st := c.Stats()
		return fmt.Sprintf("cancel: %s (%d/%d started, %d late so far)", phase.Load(), started.Load(), cfg.N, st.Late)
	})
	defer prog.Stop()
	sleepParams := toolParams("sleep", map[string]any{"ms": cfg.SleepMs})
	var calls []*client.Call
	for range cfg.N {
		call, err := c.Start("tools/call", sleepParams)
		if err != nil {
			r.note("could start only %d of %d sleep calls: %v", len(calls), cfg.N, err)
			break
		}
		calls = append(calls, call)
		started.Add(1)
	}
	r.set("sent", float64(len(calls)))
	phase.Store("waiting for the server to take the calls")
	flushErr := untilStalled(ctx, c, cfg.Stall, c.Flush)
	if flushErr != nil {
		// Anything sent now would queue behind the unread calls: the ping is
		// skipped, and the cancellations wait cfg.Stall at most.
		r.note("not all %d sleep calls reached the server: %v", len(calls), flushErr)
	} else {
		r.set("written", float64(len(calls)))
		pingStart := time.Now()
		if err := ping(ctx, c, cfg.Timeout); err != nil {
			r.note("no answer to a %s with the sleep calls in flight: %v", c.PingMethod(), err)
		} else {
			r.set("loaded_ping_ms", ms(time.Since(pingStart)))
		}
	}
	phase.Store("calls in flight")
	if err := sleepCtx(ctx, cfg.LoadWait); err != nil {
		return nil, err
	}
	mem("loaded")
	early := 0
	for _, cr := range calls {
		select {
		case <-cr.Done():
			early++
		default:
		}
	}
	r.set("answered_before_cancel", float64(early))
	if early > 0 {
		msg, err := calls[firstDone(calls)].Result()
		r.note("%d sleep calls were answered before any cancellation, e.g. %s", early, describe(msg, err))
	}

	// Cancel them all, then see how soon the server answers again.
	phase.Store("cancelling")
	firstCancel := time.Now()
	var sent int
	cancelErr := untilStalled(ctx, c, cfg.Stall, func(ctx context.Context) error {
		var err error
		sent, err = c.CancelMany(ctx, calls, "mcpbench cancel scenario", max(cfg.Concurrency, 1))
		return err
	})
	lastCancel := time.Now()
	r.set("cancels_sent", float64(sent))
	if cancelErr != nil {
		r.note("sending the cancellations failed: %v", cancelErr)
	} else {
		r.set("cancel_send_ms", ms(lastCancel.Sub(firstCancel)))
	}
	phase.Store("follow-up echo")
	if cancelErr != nil {
		r.note("no follow-up echo: the cancellations themselves did not get through")
	} else if msg, err := callOnce(ctx, c, cfg.Timeout, "tools/call", echoParams); err != nil || !echoOK(msg, "after") {
		r.note("the follow-up echo was not answered correctly within %s: %s", cfg.Timeout, describe(msg, err))
	} else {
		now := time.Now()
		r.set("echo_after_first_cancel_ms", ms(now.Sub(firstCancel)))
		r.set("echo_after_last_cancel_ms", ms(now.Sub(lastCancel)))
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
