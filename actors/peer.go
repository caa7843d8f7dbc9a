package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

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
type callPeer struct {
	conn   *connState
	call   *cancel.Call
	stream Stream

	mu     sync.Mutex
	tokens float64
	refill time.Time
}

var _ client.Peer = (*callPeer)(nil)

func newCallPeer(conn *connState, call *cancel.Call, s Stream) *callPeer {
	return &callPeer{conn: conn, call: call, stream: s, tokens: logBurst}
}

func (p *callPeer) ClientCapabilities() *protocol.ClientCapabilities { return p.conn.caps.Load() }

func (p *callPeer) ClientInfo() protocol.Implementation { return *p.conn.info.Load() }

func (p *callPeer) Log(level, logger string, data json.RawMessage) error {
	sev, ok := protocol.LogSeverity(level)
	if !ok {
		return fmt.Errorf("%w %q", client.ErrInvalidLevel, level)
	}
	if int32(sev) < p.conn.level.Load() {
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

// takeLogToken is a token bucket: logBurst tokens, refilled at logRate per second.
func (p *callPeer) takeLogToken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if !p.refill.IsZero() {
		p.tokens = min(logBurst, p.tokens+now.Sub(p.refill).Seconds()*logRate)
	}
	p.refill = now
	if p.tokens < 1 {
		return false
	}
	p.tokens--
	return true
}

// Request sends a request to the client and waits, on the handler's goroutine, for the
// connection actor to hand back the client's answer, or for ctx to end.
func (p *callPeer) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := client.CheckCapability(p.conn.caps.Load(), method, params); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("client: %s params: %w", method, err)
		}
		raw = b
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if st, ok := p.stream.(Streamer); ok && !st.Streaming() {
		return nil, client.ErrNoStream
	}
	pid := p.conn.pid.Load()
	o := &outgoing{method: method, params: raw, call: p.call, stream: p.stream, reply: make(chan outgoingReply, 1)}
	p.conn.root.Send(pid, &sendRequest{o: o})
	select {
	case r := <-o.reply:
		return r.result, r.err
	case <-ctx.Done():
		cause := context.Cause(ctx)
		p.conn.root.Send(pid, &requestAbandoned{o: o, reason: cause.Error()})
		return nil, cause
	}
}

// progressBurst is how many progress notifications of one call may go out back to back before
// the interval applies.
const progressBurst = 10

// progressSender returns the tools.ProgressFunc of a call: it sends on the call's stream while
// the call runs, a burst of progressBurst notifications and then one per interval (a token
// bucket); a report over the limit is dropped, except one that reaches its total.
// tools.ReportProgress serialises its calls and checks monotonicity.
func progressSender(s Stream, call *cancel.Call, token json.RawMessage, interval time.Duration) tools.ProgressFunc {
	tokens, last := float64(progressBurst), time.Time{}
	return func(progress float64, total *float64, message string) error {
		now := time.Now()
		if interval > 0 {
			if !last.IsZero() {
				tokens = min(progressBurst, tokens+float64(now.Sub(last))/float64(interval))
			}
			last = now
			final := total != nil && progress >= *total
			if tokens < 1 && !final {
				return nil // rate-limited: a later report carries the news
			}
			tokens = max(tokens-1, 0)
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
		ctx = tools.WithProgress(ctx, progressSender(peer.stream, peer.call, token, e.cfg.ProgressInterval))
	}
	return ctx
}
