package engine

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// gate is the admission state of one tool with a concurrency limit. It lives outside the tool
// actor instance so that a restart keeps it.
type gate struct {
	limit   int
	running map[string]struct{} // PID ids of the request actors holding a slot
	waiting []*actor.PID        // FIFO of request actors waiting for one
	waiters *atomic.Int64       // the engine's count of waiting requests, for telemetry
}

func newGate(limit int, waiters *atomic.Int64) *gate {
	return &gate{limit: limit, running: make(map[string]struct{}), waiters: waiters}
}

// toolActor admits at most limit concurrent runs of one tool. Requests over the limit wait in
// FIFO order; a request actor that ends while waiting withdraws with releaseSlot.
//
// Calls to a tool with no limit do not pass through a tool actor at all: the hop costs two
// messages and two mailbox wake-ups per call and buys nothing without a limit.
type toolActor struct{ gate *gate }

func (t *toolActor) Receive(ctx actor.Context) {
	g := t.gate
	switch msg := ctx.Message().(type) {
	case *acquireSlot:
		if len(g.running) < g.limit {
			g.running[msg.who.Id] = struct{}{}
			ctx.Send(msg.who, &slotGranted{})
			return
		}
		g.waiting = append(g.waiting, msg.who)
		g.waiters.Add(1)
	case *releaseSlot:
		if _, ok := g.running[msg.who.Id]; ok {
			delete(g.running, msg.who.Id)
			for len(g.waiting) > 0 && len(g.running) < g.limit {
				next := g.waiting[0]
				g.waiting[0] = nil
				g.waiting = g.waiting[1:]
				g.waiters.Add(-1)
				g.running[next.Id] = struct{}{}
				ctx.Send(next, &slotGranted{})
			}
			return
		}
		for i, w := range g.waiting {
			if w.Equal(msg.who) {
				g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
				g.waiters.Add(-1)
				return
			}
		}
	}
}
