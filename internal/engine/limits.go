package engine

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/protocol"
)

// Defaults for the limits of [Config].
const (
	// DefaultMaxCallsPerConnection bounds the calls in flight on one connection.
	DefaultMaxCallsPerConnection = 20000
	// DefaultMaxCalls bounds the calls in flight on the whole engine.
	DefaultMaxCalls = 100000
	// InboxBytes bounds what a transport may have delivered to a connection actor that the actor
	// has not handled yet; see [Connection.WaitForRoom].
	InboxBytes = 8 << 20
	// inboundOverhead is what one queued message costs besides its params, result and id.
	inboundOverhead = 512
)

// callSlot is one call's place under the limits on calls in flight. The connection actor takes
// it when it accepts the call; it is given back exactly once, at the first of: the call is
// answered (before the answer is queued, so a client that sends its next call on reading the
// answer finds the place free), the call is cancelled, or its request actor ends.
type callSlot struct {
	conn     *atomic.Int64 // calls counted on the connection
	server   *atomic.Int64 // calls counted on the engine
	released atomic.Bool
	// handlerRuns is set by a tools/call's request actor once the handler goroutine of the
	// ordinary call runs: from then on a cancellation needs no cancelCall, since the cancelled
	// context ends the handler and its handlerDone ends the actor (settling the call as
	// cancelled), so the connection does not wake the actor for it. It lives here, in a record
	// both share, because the slot's size class has room for it.
	handlerRuns atomic.Bool
}

func (s *callSlot) release() {
	if s != nil && s.released.CompareAndSwap(false, true) {
		s.conn.Add(-1)
		s.server.Add(-1)
	}
}

// admit takes a slot for the tools/call (or custom method) m, or answers it with the
// server-busy error and returns nil. It runs on the connection actor, the only writer of c.calls' increments.
func (c *connectionActor) admit(m *protocol.Message, s Stream) *callSlot {
	cfg := &c.eng.cfg
	if max := cfg.MaxCallsPerConnection; max > 0 && !c.stateless && c.calls.Load() >= int64(max) {
		c.refuse(m, s, protocol.BusyConnection, max)
		return nil
	}
	if max := int64(cfg.MaxCalls); max > 0 {
		for {
			n := c.eng.calls.Load()
			if n >= max {
				c.refuse(m, s, protocol.BusyServer, cfg.MaxCalls)
				return nil
			}
			if c.eng.calls.CompareAndSwap(n, n+1) {
				break
			}
		}
	} else {
		c.eng.calls.Add(1)
	}
	c.calls.Add(1)
	return &callSlot{conn: &c.calls, server: &c.eng.calls}
}

func (c *connectionActor) refuse(m *protocol.Message, s Stream, scope string, limit int) {
	n := c.eng.stats.RefusedCalls.Add(1)
	c.eng.tel.callRefused(scope)
	if n&(n-1) == 0 { // log the 1st, 2nd, 4th, 8th... refusal
		c.log.Warn("call refused: too many calls in flight",
			zap.String("scope", scope), zap.Int("limit", limit), zap.Uint64("refused_total", n))
	}
	reply(s, protocol.EncodeError(m.ID, protocol.ErrServerBusy(scope, limit)))
}

// inbox counts the bytes of the messages delivered to a connection actor and not yet handled,
// so that the transport's reader can wait for the actor instead of piling messages into its
// unbounded mailbox. The actor never blocks, so such a wait is short: it only paces a reader
// that is faster than the actor.
type inbox struct {
	mu       sync.Mutex
	bytes    int
	wake     chan struct{} // size 1: "bytes went down", for the one waiting reader; made by it
	messages atomic.Int64  // messages delivered and not yet handled, for telemetry
}

func (b *inbox) add(n int) {
	b.mu.Lock()
	b.bytes += n
	b.mu.Unlock()
	b.messages.Add(1)
}

func (b *inbox) done(n int) {
	b.messages.Add(-1)
	b.mu.Lock()
	b.bytes -= n
	wake := b.wake
	b.mu.Unlock()
	if wake == nil {
		return // no reader has ever waited
	}
	select {
	case wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// waiter returns the channel a waiting reader is woken on.
func (b *inbox) waiter() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
	return b.wake
}

func (b *inbox) over(limit int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytes > limit
}

// inboundCost is what one message costs in the inbox.
func inboundCost(m *protocol.Message) int {
	return inboundOverhead + len(m.Params) + len(m.Result) + len(m.Method) + len(m.ID.String())
}

// WaitForRoom blocks while the messages delivered to the connection and not yet handled by its
// actor hold more than [InboxBytes], and reports whether there is room. It returns false when
// stop is closed or the connection has stopped. A transport's reader calls it before reading
// the next message: the connection actor never waits on handlers, so this paces the reader
// without ever holding back a cancellation behind busy calls.
func (c *Connection) WaitForRoom(stop <-chan struct{}) bool {
	for c.inbox.over(InboxBytes) {
		select {
		case <-c.inbox.waiter():
		case <-stop:
			return false
		case <-c.Done():
			return false
		}
	}
	return true
}
