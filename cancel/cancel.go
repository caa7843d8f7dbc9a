// Package cancel holds the cancellation state of one in-flight request: the single place that
// decides whether the engine may still send anything for it.
//
// A [Call] starts running. Exactly one of two things then ends it:
//
//   - [Call.Respond] claims the one response the call may have; it succeeds only while the call
//     is running.
//   - [Call.Cancel] silences the call (the client cancelled it, its connection closed, or the
//     server is shutting down); from that moment nothing at all is sent for it: no result, no
//     error, no progress, and no failure report.
//
// Both take the same lock, and the send itself runs under it, so a frame is either queued before a
// cancellation or never. Queuing a frame must not block (transports queue frames in memory), which
// keeps the lock short.
//
// A per-call timeout is not a cancellation: the call still answers, with a failure. Its deadline
// lives on the handler's context, not here.
package cancel

import (
	"context"
	"errors"
	"sync"
)

// Cause says why a call was silenced. It is also the [context.Cause] of the call's context.
type Cause struct{ err error }

// Error returns the text of the cause.
func (c Cause) Error() string { return c.err.Error() }

// Unwrap returns [context.Canceled], so errors.Is(ctx.Err(), context.Canceled) style checks work
// on the cause too.
func (c Cause) Unwrap() error { return context.Canceled }

// The causes of silence.
var (
	// ErrCancelledByClient: the client sent notifications/cancelled for the call.
	ErrCancelledByClient = Cause{errors.New("request cancelled by the client")}
	// ErrConnectionClosed: the call's connection or session ended.
	ErrConnectionClosed = Cause{errors.New("connection closed")}
	// ErrShutdown: the server is shutting down.
	ErrShutdown = Cause{errors.New("server shutting down")}
	// ErrTaskCancelled: the client cancelled the task the call runs in (tasks/cancel).
	ErrTaskCancelled = Cause{errors.New("task cancelled by the client")}
	// ErrTaskExpired: the TTL of the task the call runs in passed before it finished.
	ErrTaskExpired = Cause{errors.New("task expired: its TTL passed")}
	// ErrResponded is the cause of the context of a call that has been answered: the handler's
	// work is no longer wanted (for example after a timeout answered it).
	ErrResponded = Cause{errors.New("request already answered")}
)

// State is where a call stands.
type State uint8

// The states of a call. Running is the only one that can change.
const (
	Running   State = iota // neither answered nor silenced
	Responded              // its one response was sent
	Silenced               // cancelled: nothing more is ever sent for it
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Responded:
		return "responded"
	case Silenced:
		return "silenced"
	}
	return "unknown"
}

// Call is the cancellation state of one request. Its methods are safe for concurrent use.
type Call struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	state State
	cause error
}

// New returns a running call whose context derives from parent. Cancelling parent cancels the
// call's context but does not silence the call: only [Call.Cancel] does.
func New(parent context.Context) *Call {
	ctx, cancel := context.WithCancelCause(parent)
	return &Call{ctx: ctx, cancel: cancel}
}

// Context returns the call's context. It is cancelled, with the cause passed to [Call.Cancel],
// when the call is silenced, and with [ErrResponded] once it has been answered.
func (c *Call) Context() context.Context { return c.ctx }

// Cancel silences a running call and cancels its context with cause. It reports whether it took
// effect: cancelling a call that already answered or was already silenced changes nothing and
// returns false, which is how late and duplicate cancellations are ignored.
func (c *Call) Cancel(cause Cause) bool {
	c.mu.Lock()
	if c.state != Running {
		c.mu.Unlock()
		return false
	}
	c.state = Silenced
	c.cause = cause
	c.mu.Unlock()
	c.cancel(cause)
	return true
}

// Respond claims the call's one response. When the call is running it calls send while holding
// the call's lock (send must queue its frame without blocking), marks the call answered, cancels
// its context with [ErrResponded] and returns true. Otherwise it returns false without calling
// send.
func (c *Call) Respond(send func()) bool {
	c.mu.Lock()
	if c.state != Running {
		c.mu.Unlock()
		return false
	}
	send()
	c.state = Responded
	c.mu.Unlock()
	c.cancel(ErrResponded)
	return true
}

// Notify calls send under the call's lock if the call is still running, and reports whether it
// did. Notifications about a call (progress, logs) go through it, so none follows the response
// or a cancellation.
func (c *Call) Notify(send func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != Running {
		return false
	}
	send()
	return true
}

// State returns where the call stands now.
func (c *Call) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Silenced reports whether the call was cancelled; if so, nothing may be sent or reported for it.
func (c *Call) Silenced() bool { return c.State() == Silenced }

// Cause returns why the call was silenced, or nil.
func (c *Call) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Release frees the context's resources without changing the state. Call it when the request is
// finished in any way.
func (c *Call) Release() { c.cancel(ErrResponded) }
