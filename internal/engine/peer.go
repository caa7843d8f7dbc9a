package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/time/rate"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// Limits on what one call may send about itself.
const (
	// DefaultProgressInterval is the time one progress notification of a call costs in its
	// token bucket: after a burst, reports come through one per interval, the others are
	// dropped, except one that reaches its total.
	DefaultProgressInterval = 10 * time.Millisecond
	// logBurst and logRate bound the log messages of one call: a burst of logBurst, then
	// logRate per second; messages over the limit are dropped with client.ErrRateLimited.
	logBurst = 100
	logRate  = 100
)

// Streamer is implemented by a [Stream] that knows whether it can carry messages before the
// response: an HTTP POST whose client accepts an SSE answer can, one that accepts JSON only
// cannot (its transport sends the response alone). A Stream that does not implement it is taken
// to carry everything, as stdio does. A handler's request to the client on a stream that cannot
// carry it fails at once with client.ErrNoStream rather than wait for an answer that cannot come.
type Streamer interface {
	Streaming() bool
}

// connState is the part of a connection's state that handler goroutines read: who the client
// is and what it declared, the connection's log level, and where to send requests for the
// client. The connection actor writes it; everything is atomic.
type connState struct {
	root  *actor.RootContext
	pid   atomic.Pointer[actor.PID]
	caps  atomic.Pointer[protocol.ClientCapabilities]
	info  atomic.Pointer[protocol.Implementation]
	level atomic.Int32 // the lowest severity sent (index in protocol.LogLevels)
}

func newConnState(root *actor.RootContext, level int) *connState {
	s := &connState{root: root}
	s.caps.Store(&protocol.ClientCapabilities{})
	s.info.Store(&protocol.Implementation{})
	s.level.Store(int32(level))
	return s
}

// callPeer is the client.Peer of one call: it sends the call's log messages on the call's
// stream, and its requests to the client through the connection actor, which owns their ids.
//
// In the modern era the client is the request's envelope (env): its capabilities and log level
// are the request's own, and its requests for input become input_required rounds (in, for the
// methods that may have them).
type callPeer struct {
	conn   *connState
	call   *cancel.Call
	stream Stream
	env    *protocol.Envelope // the request's envelope; nil in a legacy session
	in     *callInput         // the multi-round-trip state of a modern call; nil otherwise
	// owner is the call's request or operation actor, which answers input_required; set before
	// the handler starts.
	owner *actor.PID
	// taskable: the call may become a task when its handler asks (client.StartTask).
	taskable bool
	// rev is the revision of the legacy session the call belongs to; 0 in the modern era.
	rev protocol.Revision

	mu       sync.Mutex
	logLimit *rate.Limiter // made at the call's first log message
	state    []byte        // the handler's state (client.SetState)
}

var (
	_ client.Peer      = (*callPeer)(nil)
	_ client.InputPeer = (*callPeer)(nil)
)

func newCallPeer(conn *connState, call *cancel.Call, s Stream) *callPeer {
	return &callPeer{conn: conn, call: call, stream: s}
}

// newPeer returns the peer of a call the connection actor is starting, in the era of the
// request it is handling; in is the call's multi-round-trip state (modern only).
func (c *connectionActor) newPeer(call *cancel.Call, s Stream, in *callInput) *callPeer {
	p := newCallPeer(c.state, call, s)
	if c.modern == nil {
		p.rev = protocol.RevisionOf(c.version)
	} else {
		p.env, p.in = c.modern.env, in
		if in != nil {
			p.state = in.state
		}
	}
	return p
}

// noProgressMessage reports whether the call's progress notifications go without their message:
// a session of a revision that has none (2024-11-05).
func (p *callPeer) noProgressMessage() bool {
	return p.rev != 0 && !p.rev.Has(protocol.FeatureProgressMessage)
}

func (p *callPeer) ClientCapabilities() *protocol.ClientCapabilities {
	if p.env != nil {
		return p.env.Capabilities
	}
	return p.conn.caps.Load()
}

func (p *callPeer) ClientInfo() protocol.Implementation {
	if p.env != nil {
		if p.env.ClientInfo != nil {
			return *p.env.ClientInfo
		}
		return protocol.Implementation{}
	}
	return *p.conn.info.Load()
}

// State returns the handler's state ([client.State]).
func (p *callPeer) State() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// SetState sets the handler's state ([client.SetState]).
func (p *callPeer) SetState(state []byte) {
	p.mu.Lock()
	p.state = state
	p.mu.Unlock()
}

// level returns the lowest severity of the log messages the call sends, and false when it
// sends none: a modern request gets log messages only when it asked for a level.
func (p *callPeer) level() (int32, bool) {
	if p.env == nil {
		return p.conn.level.Load(), true
	}
	if p.env.LogLevel == "" {
		return 0, false
	}
	sev, _ := protocol.LogSeverity(p.env.LogLevel)
	return int32(sev), true
}

func (p *callPeer) Log(level, logger string, data json.RawMessage) error {
	sev, ok := protocol.LogSeverity(level)
	if !ok {
		return fmt.Errorf("%w %q", client.ErrInvalidLevel, level)
	}
	if least, on := p.level(); !on || int32(sev) < least {
		return nil
	}
	if p.call.State() != cancel.Running {
		return client.ErrCallFinished
	}
	if !p.takeLogToken() {
		return client.ErrRateLimited
	}
	frame, err := protocol.EncodeNotification(protocol.MethodLogMessage, &protocol.LogMessageParams{
		Level: level, Logger: logger, Data: data,
	})
	if err != nil {
		return fmt.Errorf("client: log data: %w", err)
	}
	if !p.call.Notify(func() { p.stream.Send(frame) }) {
		return client.ErrCallFinished
	}
	return nil
}

// CloseStream asks the call's transport to close the connection of the call's stream without
// ending the call ([client.CloseStream]).
func (p *callPeer) CloseStream() error {
	if p.call.State() != cancel.Running {
		return client.ErrCallFinished
	}
	d, ok := p.stream.(Disconnecter)
	if !ok || !d.Disconnect() {
		return client.ErrNoStream
	}
	return nil
}

var _ client.StreamCloser = (*callPeer)(nil)

// takeLogToken takes a token from the call's log limiter: logBurst at once, then logRate per
// second. The limiter is made at the first message, so a call that logs nothing pays nothing.
func (p *callPeer) takeLogToken() bool {
	p.mu.Lock()
	if p.logLimit == nil {
		p.logLimit = rate.NewLimiter(logRate, logBurst)
	}
	lim := p.logLimit
	p.mu.Unlock()
	return lim.Allow()
}

// Request asks the client for one input. In a legacy session it sends the client a request and
// waits, on the handler's goroutine, for the connection actor to hand back the answer, or for
// ctx to end; in the modern era it is [callPeer.Input] with a key of its own.
func (p *callPeer) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if p.env != nil {
		if p.in == nil {
			return nil, client.ErrNoStream // a modern request that cannot be answered input_required
		}
		key := p.in.autoKey(method)
		res, err := p.in.ask(ctx, p, map[string]client.InputRequest{key: {Method: method, Params: params}})
		if err != nil {
			return nil, err
		}
		return res[key], nil
	}
	res, err := p.send(ctx, []string{""}, map[string]client.InputRequest{"": {Method: method, Params: params}})
	if err != nil {
		return nil, err
	}
	return res[""], nil
}

// Input asks the client for every request of reqs ([client.Input]): in a legacy session as
// requests sent at once, in the modern era as an input_required round unless the client has
// answered them all already.
func (p *callPeer) Input(ctx context.Context, reqs map[string]client.InputRequest) (map[string]json.RawMessage, error) {
	if p.env != nil {
		if p.in == nil {
			return nil, client.ErrNoStream
		}
		return p.in.ask(ctx, p, reqs)
	}
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return p.send(ctx, keys, reqs)
}

// send sends the requests of a legacy session's call to the client, all at once in key order,
// and waits, on the handler's goroutine, for every answer (or the first error), or for ctx to
// end. Requests still unanswered when it gives up are withdrawn (notifications/cancelled).
func (p *callPeer) send(ctx context.Context, keys []string, reqs map[string]client.InputRequest) (map[string]json.RawMessage, error) {
	caps := p.conn.caps.Load()
	params := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		r := reqs[k]
		if err := client.CheckCapability(caps, r.Method, r.Params); err != nil {
			return nil, err
		}
		if r.Params != nil {
			b, err := json.Marshal(r.Params)
			if err != nil {
				return nil, fmt.Errorf("client: %s params: %w", r.Method, err)
			}
			if b, err = p.rev.ShapeRequest(r.Method, b); err != nil {
				return nil, &unsupportedError{err: err}
			}
			params[i] = b
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if st, ok := p.stream.(Streamer); ok && !st.Streaming() {
		return nil, client.ErrNoStream
	}
	pid := p.conn.pid.Load()
	outs := make([]*outgoing, len(keys))
	for i, k := range keys {
		outs[i] = &outgoing{method: reqs[k].Method, params: params[i], call: p.call, stream: p.stream, reply: make(chan outgoingReply, 1)}
		p.conn.root.Send(pid, &sendRequest{o: outs[i]})
	}
	withdraw := func(from int, reason string) {
		for _, o := range outs[from:] {
			p.conn.root.Send(pid, &requestAbandoned{o: o, reason: reason})
		}
	}
	res := make(map[string]json.RawMessage, len(keys))
	for i, o := range outs {
		select {
		case r := <-o.reply:
			if r.err != nil {
				withdraw(i+1, "another request of the call failed")
				return nil, r.err
			}
			res[keys[i]] = r.result
		case <-ctx.Done():
			cause := context.Cause(ctx)
			withdraw(i, cause.Error())
			return nil, cause
		}
	}
	return res, nil
}

// unsupportedError refuses a request to the client that the session's revision cannot carry
// (protocol.Revision.ShapeRequest): like an undeclared capability, it wraps
// client.ErrUnsupported, and nothing is sent.
type unsupportedError struct{ err error }

func (e *unsupportedError) Error() string { return "client: " + e.err.Error() }

func (e *unsupportedError) Unwrap() error { return client.ErrUnsupported }

// progressBurst is how many progress notifications of one call may go out back to back before
// the interval applies.
const progressBurst = 10

// progressSender returns the tools.ProgressFunc of a call: it sends on the call's stream while
// the call runs, a burst of progressBurst notifications and then one per interval (a
// rate.Limiter); a report over the limit is dropped, except one that reaches its total.
// tools.ReportProgress serialises its calls and checks monotonicity.
//
// A session of a revision without the message of a progress notification (2024-11-05) gets
// none (noMessage).
func progressSender(s Stream, call *cancel.Call, token json.RawMessage, interval time.Duration, noMessage bool) tools.ProgressFunc {
	var lim *rate.Limiter
	if interval > 0 {
		lim = rate.NewLimiter(rate.Every(interval), progressBurst)
	}
	return func(progress float64, total *float64, message string) error {
		if lim != nil && !lim.Allow() && (total == nil || progress < *total) {
			return nil // rate-limited: a later report carries the news
		}
		if noMessage {
			message = ""
		}
		frame, err := protocol.EncodeNotification(protocol.MethodProgress, &protocol.ProgressParams{
			ProgressToken: token, Progress: progress, Total: total, Message: message,
		})
		if err != nil {
			return err
		}
		if !call.Notify(func() { s.Send(frame) }) {
			return tools.ErrCallFinished
		}
		return nil
	}
}

// handlerContext decorates a handler's context with the call's client and, when the request
// carried a progress token, its progress sink.
func (e *Engine) handlerContext(ctx context.Context, peer *callPeer, meta json.RawMessage) context.Context {
	if peer == nil {
		return ctx
	}
	ctx = client.WithPeer(ctx, peer)
	if token := progressToken(meta); token != nil {
		ctx = tools.WithProgress(ctx, progressSender(peer.stream, peer.call, token, e.cfg.ProgressInterval, peer.noProgressMessage()))
	}
	return ctx
}
