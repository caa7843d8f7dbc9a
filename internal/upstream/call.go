package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/toolgrain/toolgrain/protocol"
)

// Errors a call can end with, besides the upstream's own JSON-RPC error (a *protocol.WireError).
var (
	// ErrConnectionLost: the connection to the upstream ended while the call was in flight.
	ErrConnectionLost = errors.New("upstream: connection lost while the call was in flight")
	// ErrDown: the upstream could not be reached; its components are withdrawn until it is.
	ErrDown = errors.New("upstream: not reachable")
	// ErrClosed: the gateway closed the upstream.
	ErrClosed = errors.New("upstream: closed")
)

// Call is one request of a caller (a mounted tool's handler, a resource reader, a prompt) to
// the upstream. The caller fills the exported fields and gives it to [Upstream.Start]; it must
// not change it afterwards.
type Call struct {
	// Method and Params are the request. Params is a JSON object without _meta, or nil.
	Method string
	Params json.RawMessage
	// Args, when given, is params.arguments (of tools/call), sent after the members of Params:
	// a tool's call need not copy the arguments into params of its own.
	Args json.RawMessage
	// Meta is the caller's _meta to pass on (a JSON object), or nil. Its progressToken and
	// the members of the modern envelope are replaced.
	Meta json.RawMessage
	// Name is params.name (tools/call, prompts/get) or params.uri (resources/read), for the
	// Mcp-Name header of a modern HTTP request.
	Name string
	// HeaderParams are the values of the Mcp-Param-{Name} headers of a modern HTTP tools/call,
	// by Name, encoded; nil for none.
	HeaderParams map[string]string
	// Progress asks the upstream for progress notifications, which go to Caller.OnProgress.
	Progress bool
	// Caps are the capabilities of the caller's client, declared to a modern upstream for
	// this request (sampling, elicitation, roots); nil declares none.
	Caps *protocol.ClientCapabilities
	// LogLevel is the level of log messages to ask a modern upstream for; "" asks for none.
	LogLevel string

	caller Caller
	ended  atomic.Bool // given up, or its outcome is known: what comes for it later is late
	asked  atomic.Bool // the upstream made requests to the client of the call
	id     protocol.ID // actor: the id on the wire, once sent
	gen    uint64      // actor: the connection it was sent on
	out    Outgoing    // the request, as sent
	up     *Upstream   // the upstream it was sent to, and in which era: what encodes it
	modern bool

	mu       sync.Mutex
	serving  int   // Serve goroutines running
	finished bool  // the outcome is known; it is delivered once serving is 0
	cause    error // why the caller gave it up (Abandon)
	result   json.RawMessage
	err      error
}

// Caller is the side of a call that waits for it: it receives the call's progress and log
// messages, serves the upstream's requests to the client of the call, and gets the outcome.
type Caller interface {
	// OnProgress receives the call's progress notifications (when Call.Progress asked for
	// them) and OnLog its log messages (notifications/message params). They run on the
	// connection's reader and must not block.
	OnProgress(p *protocol.ProgressParams)
	OnLog(params json.RawMessage)
	// Serve answers a request of the upstream to the client of the call, with
	// [Request.Answer]. It runs on a goroutine of its own, and the call's outcome waits for it
	// to return, which the request's context bounds.
	Serve(r *Request)
	// Done receives the outcome, once: the result; the upstream's JSON-RPC error as a
	// *protocol.WireError, or ErrDown, ErrConnectionLost, ErrClosed, each wrapped in an
	// *Error; or the cause given to [Upstream.Abandon], as it is. It runs on the connection's
	// reader, the actor, or the goroutine of Abandon or of the last Serve, and must not block.
	// The result is valid only until Done returns (it may be in the reader's buffer): what
	// Done keeps of it, it copies.
	Done(result json.RawMessage, err error)
}

// maxServing bounds the upstream's requests to the client of one call at once; more are
// refused.
const maxServing = 7

// Request is a request of the upstream to the client of a call (sampling, elicitation,
// roots), to be answered with [Request.Answer].
type Request struct {
	Method string
	Params json.RawMessage

	up   *Upstream
	call *Call
	id   protocol.ID
	ctx  context.Context // ends when the upstream cancels it, or the call is over
	stop context.CancelFunc
	once sync.Once
}

// Context ends when the upstream withdraws the request (notifications/cancelled) or the call
// is over.
func (r *Request) Context() context.Context { return r.ctx }

// Answer sends the client's answer to the upstream: result, or err (a *protocol.WireError
// travels as it is; any other error as an internal error, without its text). Only the first
// answer counts, and none is sent once the call is over.
func (r *Request) Answer(result json.RawMessage, err error) {
	r.once.Do(func() {
		r.up.send(&answerRequest{call: r.call, id: r.id, result: result, err: err})
	})
}

// GiveUp gives up the call the request belongs to, as [Upstream.Abandon] does: the client
// answers it otherwise (a modern client, in an input round of its own).
func (r *Request) GiveUp(cause error) { r.up.Abandon(r.call, cause) }

// Start sends c to the upstream, or queues it until the connection is up or has a free slot,
// and returns at once; to receives what the call brings, and its outcome, once. Start never
// blocks: over stdio the request is encoded into the connection's buffer on the caller's
// goroutine, and the connection's writer writes it.
func (u *Upstream) Start(c *Call, to Caller) {
	c.caller = to
	if !u.trySend(c) {
		u.send(c) // the actor sends it, or queues it
	}
}

// Abandon gives up c: the upstream is told (notifications/cancelled, or its stream closed),
// nothing it sends for the call afterwards is delivered, and the outcome is cause (once the
// upstream's requests to the client of the call have ended). It does nothing once the outcome
// is known.
func (u *Upstream) Abandon(c *Call, cause error) {
	c.mu.Lock()
	if c.ended.Load() {
		c.mu.Unlock()
		return
	}
	c.cause = cause
	c.ended.Store(true)
	c.mu.Unlock()
	// Out of the table of calls in flight at once, not when the actor gets to it: a call made
	// next (a modern client's retry after an input round) must not find it there, where over
	// stdio the upstream's requests to the client go to the only call in flight.
	u.t.mu.Lock()
	inFlight := !c.id.IsZero() && u.t.active[c.id.Key()] == c
	if inFlight {
		delete(u.t.active, c.id.Key())
		u.stats.InFlight.Store(int64(len(u.t.active)))
	}
	u.t.mu.Unlock()
	u.send(&abandonCall{call: c, cause: cause, inFlight: inFlight})
	c.deliver(nil, cause)
}

// abandonCall: caller → actor. The caller stopped waiting for the call.
type abandonCall struct {
	call     *Call
	cause    error
	inFlight bool // Abandon took it out of the table of calls in flight
}

// answerRequest: caller → actor. The client's answer to a request of the upstream.
type answerRequest struct {
	call   *Call
	id     protocol.ID
	result json.RawMessage
	err    error
}

// finish delivers the call's outcome unless it is known already: it is called by whoever takes
// the call out of the table of calls in flight, or out of the queue. It never blocks.
func (c *Call) finish(result json.RawMessage, err error) {
	if c.ended.Swap(true) {
		return
	}
	c.deliver(result, err)
}

// deliver hands the outcome to the caller, now or, while Serve goroutines run, when the last
// one returns. ended is set.
func (c *Call) deliver(result json.RawMessage, err error) {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return
	}
	c.finished = true
	if c.serving > 0 {
		c.result, c.err = bytes.Clone(result), err // the reader's buffer moves on
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.caller.Done(result, err)
}

// serve runs the caller's Serve for r on a goroutine of its own, counted in wg, unless the call
// is over or serves too many requests already; it reports whether it did.
func (c *Call) serve(r *Request, wg *sync.WaitGroup) bool {
	c.mu.Lock()
	if c.finished || c.ended.Load() || c.serving >= maxServing {
		c.mu.Unlock()
		return false
	}
	c.serving++
	c.mu.Unlock()
	wg.Add(1)
	// Owned by the call: its outcome waits for it; it ends when Serve returns, which the
	// request's context bounds (it ends with the call).
	go func() {
		defer wg.Done()
		defer c.served()
		defer r.stop()
		c.caller.Serve(r)
	}()
	return true
}

// served counts a Serve goroutine's end, and delivers the outcome held for it.
func (c *Call) served() {
	c.mu.Lock()
	c.serving--
	if c.serving > 0 || !c.finished {
		c.mu.Unlock()
		return
	}
	result, err := c.result, c.err
	c.result, c.err = nil, nil
	c.mu.Unlock()
	c.caller.Done(result, err)
}

// over reports whether the call was given up or its outcome is known.
func (c *Call) over() bool { return c.ended.Load() }

// why says why the call, which is over, ended, for the upstream.
func (c *Call) why() string {
	c.mu.Lock()
	cause := c.cause
	c.mu.Unlock()
	if cause == nil {
		return "the upstream answered it"
	}
	return ended(cause)
}

// Error wraps the failure of a call with the upstream's name, for the operator.
type Error struct {
	// Upstream is the mounted server's name.
	Upstream string
	// Method and Name say what was asked: tools/call and the upstream's tool name, for example.
	Method, Name string
	// Err is the cause: a *protocol.WireError from the upstream, ErrConnectionLost, ...
	Err error
}

func (e *Error) Error() string {
	if e.Name != "" {
		return fmt.Sprintf("upstream %q: %s %q: %v", e.Upstream, e.Method, e.Name, e.Err)
	}
	return fmt.Sprintf("upstream %q: %s: %v", e.Upstream, e.Method, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
