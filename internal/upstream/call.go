package upstream

import (
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
// the upstream. The caller fills the exported fields and gives it to [Upstream.Do]; it must
// not change it afterwards.
type Call struct {
	// Method and Params are the request. Params is a JSON object without _meta, or nil.
	Method string
	Params json.RawMessage
	// Meta is the caller's _meta to pass on (a JSON object), or nil. Its progressToken and
	// the members of the modern envelope are replaced.
	Meta json.RawMessage
	// Name is params.name (tools/call, prompts/get) or params.uri (resources/read), for the
	// Mcp-Name header of a modern HTTP request.
	Name string
	// HeaderParams are the values of the Mcp-Param-{Name} headers of a modern HTTP tools/call,
	// by Name, encoded; nil for none.
	HeaderParams map[string]string
	// Progress asks the upstream for progress notifications, which go to OnProgress.
	Progress bool
	// Caps are the capabilities of the caller's client, declared to a modern upstream for
	// this request (sampling, elicitation, roots); nil declares none.
	Caps *protocol.ClientCapabilities
	// LogLevel is the level of log messages to ask a modern upstream for; "" asks for none.
	LogLevel string
	// OnProgress and OnLog receive the call's progress notifications and log messages
	// (notifications/message params). They run on the upstream's actor and must not block.
	// Nil drops them.
	OnProgress func(p *protocol.ProgressParams)
	OnLog      func(params json.RawMessage)

	events chan callEvent // the answer (once), and the upstream's requests to the client
	asked  atomic.Bool    // the upstream made requests to the client of the call
	serves bool           // the caller serves the upstream's requests to the client
	done   atomic.Bool    // set by Do when it stops waiting
	id     protocol.ID    // actor: the id on the wire, once sent
	gen    uint64         // actor: the connection it was sent on
}

// callEvent is what a caller's Do receives: the answer (req nil), or a request of the upstream
// to the client.
type callEvent struct {
	result json.RawMessage
	err    error
	req    *Request
}

// callEvents is the room of a call's channel: its answer and a few requests to the client at
// once; more are refused.
const callEvents = 8

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

// Do sends c to the upstream and waits for its answer, serving the upstream's requests to the
// client of the call with serve (each on a goroutine of its own) until then. It returns the
// result, the upstream's JSON-RPC error as a *protocol.WireError, or another error: ErrDown,
// ErrConnectionLost, ErrClosed, or ctx's cause. When ctx ends first, the call is given up: the
// upstream is told (notifications/cancelled, or its stream closed) and nothing it sends for
// the call afterwards is delivered. serve may be nil: the upstream's requests are then refused.
func (u *Upstream) Do(ctx context.Context, c *Call, serve func(r *Request)) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	c.events = make(chan callEvent, callEvents)
	c.serves = serve != nil
	if !u.trySend(c) {
		u.send(c) // the actor sends it, or queues it
	}
	var served sync.WaitGroup
	defer served.Wait()
	for {
		select {
		case e := <-c.events:
			if e.req == nil {
				c.done.Store(true)
				return e.result, e.err
			}
			req := e.req
			served.Add(1)
			// Owned by Do: it ends when serve returns, which the request's context bounds;
			// Do waits for it before returning.
			go func() {
				defer served.Done()
				defer req.stop()
				serve(req)
			}()
		case <-ctx.Done():
			c.done.Store(true)
			u.send(&abandonCall{call: c, cause: context.Cause(ctx)})
			return nil, context.Cause(ctx)
		}
	}
}

// abandonCall: caller → actor. The caller stopped waiting for the call.
type abandonCall struct {
	call  *Call
	cause error
}

// answerRequest: caller → actor. The client's answer to a request of the upstream.
type answerRequest struct {
	call   *Call
	id     protocol.ID
	result json.RawMessage
	err    error
}

// finish delivers the call's outcome. It is called once: by whoever takes the call out of the
// table of calls in flight, or out of the queue. It never blocks: the channel keeps a place for
// the answer (requests beyond callEvents-1 are refused, see offer).
func (c *Call) finish(result json.RawMessage, err error) {
	select {
	case c.events <- callEvent{result: result, err: err}:
	default:
	}
}

// offer hands the caller a request of the upstream, unless the channel is nearly full (the
// answer's place is kept); it reports whether it did.
func (c *Call) offer(r *Request) bool {
	if len(c.events) >= callEvents-1 {
		return false
	}
	select {
	case c.events <- callEvent{req: r}:
		return true
	default:
		return false
	}
}

// over reports whether the caller stopped waiting.
func (c *Call) over() bool { return c.done.Load() }

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
