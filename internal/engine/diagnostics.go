package engine

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"
)

// diagState is the diagnostics actor's state. It lives outside the actor instance, so a restart
// after a panic in the actor itself loses no queued report.
type diagState struct {
	eng   *Engine
	queue []*report
	head  int // queue[head:] are waiting

	seq       uint64      // seq of the callback running now, when running
	running   bool        // a callback is running and not abandoned
	timer     *time.Timer // the running callback's timeout
	abandoned int         // abandoned callbacks still running
	flushers  []*actor.PID

	depth atomic.Int64 // waiting(), for telemetry
}

func newDiagState(e *Engine) *diagState { return &diagState{eng: e} }

func (st *diagState) waiting() int { return len(st.queue) - st.head }

// diagnosticsActor runs onError one report at a time, each on a goroutine it owns with a
// recover and a timeout, so the callback can neither crash nor stall it:
//
//   - a callback that panics is counted and logged with its stack; the next report goes on;
//   - a callback that runs past CallbackTimeout is abandoned (counted, logged) and the next
//     report starts; at most MaxAbandonedCallbacks abandoned ones may still run, after which
//     reports wait in the queue;
//   - reports beyond DiagnosticsQueue are dropped, counted and logged.
//
// Responses never wait for any of this: request actors send their response first and their
// report afterwards, with a plain Send.
type diagnosticsActor struct{ st *diagState }

func (d *diagnosticsActor) Receive(ctx actor.Context) {
	st := d.st
	defer func() { st.depth.Store(int64(st.waiting())) }()
	switch msg := ctx.Message().(type) {
	case *report:
		if st.waiting() >= st.eng.cfg.DiagnosticsQueue {
			n := st.eng.stats.DroppedReports.Add(1)
			st.eng.metrics.ReportDropped()
			if n&(n-1) == 0 { // log the 1st, 2nd, 4th, 8th... drop
				st.eng.log.Warn("diagnostics queue full; report dropped",
					zap.Uint64("dropped_total", n), zap.Int("queue_limit", st.eng.cfg.DiagnosticsQueue))
			}
			return
		}
		st.queue = append(st.queue, msg)
		d.pump(ctx)
	case *callbackDone:
		if st.running && msg.seq == st.seq {
			st.running = false
			st.timer.Stop()
		} else {
			st.abandoned-- // an abandoned callback finally returned
		}
		d.pump(ctx)
	case *callbackTimedOut:
		if st.running && msg.seq == st.seq {
			st.running = false
			st.abandoned++
			st.eng.stats.AbandonedCallbacks.Add(1)
			st.eng.log.Warn("onError callback exceeded its timeout; abandoned",
				zap.Duration("timeout", st.eng.cfg.CallbackTimeout))
			d.pump(ctx)
		}
	case *flush:
		st.flushers = append(st.flushers, ctx.Sender())
		d.pump(ctx)
	}
}

func (d *diagnosticsActor) pump(ctx actor.Context) {
	st := d.st
	if !st.running && st.waiting() > 0 && st.abandoned < st.eng.cfg.MaxAbandonedCallbacks {
		r := st.queue[st.head]
		st.queue[st.head] = nil
		st.head++
		if st.head == len(st.queue) {
			st.queue, st.head = st.queue[:0], 0
		}
		st.seq++
		st.running = true
		d.start(ctx, r, st.seq)
	}
	if !st.running && (st.waiting() == 0 || st.abandoned >= st.eng.cfg.MaxAbandonedCallbacks) {
		for _, f := range st.flushers {
			if f != nil {
				ctx.Send(f, &flushed{})
			}
		}
		st.flushers = st.flushers[:0]
	}
}

func (d *diagnosticsActor) start(ctx actor.Context, r *report, seq uint64) {
	eng := d.st.eng
	self := ctx.Self()
	root := ctx.ActorSystem().Root
	d.st.timer = time.AfterFunc(eng.cfg.CallbackTimeout, func() { root.Send(self, &callbackTimedOut{seq: seq}) })
	// Owned by the diagnostics actor: it ends when the callback returns, and tells the actor so.
	// A callback that never returns keeps it forever; the actor stops waiting for it after
	// CallbackTimeout and caps how many such goroutines may exist.
	go func() {
		defer func() {
			if v := recover(); v != nil {
				eng.stats.CallbackPanics.Add(1)
				eng.log.Error("onError callback panicked", zap.String("panic", fmt.Sprint(v)),
					zap.ByteString("stack", debug.Stack()))
			}
			root.Send(self, &callbackDone{seq: seq})
		}()
		eng.cfg.OnError(r.err, r.details)
	}()
}
