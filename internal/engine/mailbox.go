package engine

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// requestMailbox is a request actor's mailbox: protoactor's own, which it schedules on the
// engine's dispatcher, and one more way to post to it, postHere, for the goroutine that brings
// the call's outcome. That goroutine (a handler's worker, a mounted upstream's reader) would
// otherwise wake a worker to take the actor's next step and then park; on a process that is
// mostly idle each such hand-over costs a wake-up of another thread and its sleep again
// (BENCHMARKS.md, "The gateway"). The actor's messages are still processed one at a time, by
// whichever goroutine runs the mailbox.
type requestMailbox struct {
	actor.Mailbox
	next actor.Dispatcher
	// here is heldHere while postHere posts: a schedule of the mailbox then leaves its run to
	// postHere, which runs it once it has posted.
	here atomic.Pointer[func()]
}

// heldHere marks a mailbox whose next run is left to postHere.
var heldHere = new(func())

func newRequestMailbox(next actor.Dispatcher) *requestMailbox {
	return &requestMailbox{Mailbox: actor.UnboundedLockfree()(), next: next}
}

// RegisterHandlers takes the mailbox itself as its dispatcher.
func (m *requestMailbox) RegisterHandlers(invoker actor.MessageInvoker, _ actor.Dispatcher) {
	m.Mailbox.RegisterHandlers(invoker, m)
}

// Schedule runs the mailbox on the engine's dispatcher, unless postHere is posting: then its
// caller runs it.
func (m *requestMailbox) Schedule(fn func()) {
	if m.here.CompareAndSwap(heldHere, &fn) {
		return
	}
	m.next.Schedule(fn)
}

// Throughput is the engine dispatcher's.
func (m *requestMailbox) Throughput() int { return m.next.Throughput() }

// postHere posts msg and, when that schedules the mailbox (it was idle), runs it on this
// goroutine until it is idle again. Only one postHere runs at a time on a mailbox: the one
// outcome of a call. A message posted meanwhile by another goroutine that schedules the
// mailbox is run here too.
func (m *requestMailbox) postHere(msg any) {
	m.here.Store(heldHere)
	m.PostUserMessage(msg)
	if fn := m.here.Swap(nil); fn != heldHere && fn != nil {
		(*fn)()
	}
}

var _ actor.Dispatcher = (*requestMailbox)(nil)
