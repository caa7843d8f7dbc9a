package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/internal/wire"
)

// The home side of a forwarded request. Every member runs one tunnelActor (named tunnelName);
// each forwarded request gets a homeActor, its child, which runs the member's own HTTP handler
// on a goroutine with a writer that sends the response to the edge's streamActor as HEAD, BODY
// and END envelopes. The homeActor watches the edge's stream actor: when it terminates (the
// client left, or the edge member died), the request's context is cancelled, as net/http does
// for a client that disconnects.

// tunnelActor receives forwarded requests and spawns their homeActors.
type tunnelActor struct{ node *Node }

func (t *tunnelActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *wire.Envelope:
		if m.Kind != wire.Kind_KIND_REQUEST || m.ReplyAddress == "" || m.ReplyId == "" {
			t.node.log.Debug("tunnel: unexpected envelope", zap.Stringer("kind", m.Kind))
			return
		}
		c.Spawn(actor.PropsFromProducer(func() actor.Actor { return &homeActor{node: t.node, req: m} }))
	}
}

// handlerDone: serving goroutine -> its homeActor, when the handler returned and END was sent.
type handlerDone struct{}

// homeActor owns one forwarded request on its home: the goroutine that serves it and the
// request's context.
type homeActor struct {
	node       *Node
	req        *wire.Envelope
	stream     *actor.PID
	cancel     context.CancelFunc
	done       bool // the handler returned
	streamGone bool // the edge's stream actor terminated
}

func (h *homeActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		h.node.stats.homes.Add(1)
		h.stream = actor.NewPID(h.req.ReplyAddress, h.req.ReplyId)
		c.Watch(h.stream)
		// The receipt: a BODY without bytes before the HEAD. The edge waits for it at most
		// ackWait, since a request lost on the way (protoactor-go drops what an endpoint
		// writer holds when its connection is replaced) brings no Terminated either.
		c.Send(h.stream, &wire.Envelope{Kind: wire.Kind_KIND_BODY})
		h.start(c)
	case *actor.Stopping:
		if h.cancel != nil {
			h.cancel()
		}
		if !h.streamGone {
			c.Unwatch(h.stream)
		}
	case *actor.Stopped:
		h.node.stats.homes.Add(-1)
	case *actor.Terminated:
		h.streamGone = true
		h.cancel()
		if !h.done && m.Why == actor.TerminatedReason_AddressTerminated {
			h.node.log.Warn("forwarded request: connection to the edge member broke before the response ended",
				zap.String("edge", h.stream.Address))
		}
		if h.done {
			c.Stop(c.Self())
		}
	case *handlerDone:
		h.done = true
		if h.streamGone {
			c.Stop(c.Self())
		}
		// Else the stream actor stops once it has END, and its Terminated stops this actor.
	}
}

// start begins serving the request on a goroutine.
func (h *homeActor) start(c actor.Context) {
	n, req := h.node, h.req
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if a, err := net.ResolveTCPAddr("tcp", req.LocalAddr); err == nil && req.LocalAddr != "" {
		ctx = context.WithValue(ctx, http.LocalAddrContextKey, a)
	}
	w := &tunnelWriter{sys: c.ActorSystem(), to: h.stream, self: c.Self(), ctx: ctx, header: make(http.Header)}
	r, err := http.NewRequestWithContext(ctx, req.Method, req.Target, bytes.NewReader(req.Body))
	self, root := c.Self(), c.ActorSystem().Root
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		w.finish()
		root.Send(self, &handlerDone{})
		return
	}
	for _, hd := range req.Headers {
		r.Header[hd.Name] = append([]string(nil), hd.Values...)
	}
	r.Header.Del("Content-Length")
	r.ContentLength = int64(len(req.Body))
	r.Host = req.Host
	r.RemoteAddr = req.RemoteAddr
	if req.Scheme == "https" {
		// The client's connection was TLS, to the edge: the handler sees an https request, as
		// it would have on the edge (an empty state: the edge's connection is not here).
		r.TLS = &tls.ConnectionState{}
	}
	if tel := n.tel.Load(); tel != nil {
		// The edge's forward span, for the engine's SERVER span to link to.
		r = r.WithContext(tel.homeContext(r.Context(), r.Header))
	}
	n.stats.served.Add(1)
	n.homes.Add(1)
	// Owned by this actor: it ends when the handler returns, which the cancelled context
	// (the edge's stream gone, or this actor stopping) hastens; Node.Close waits for it.
	go func() {
		defer n.homes.Done()
		defer func() { root.Send(self, &handlerDone{}) }()
		handler := n.local.Load()
		if handler == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
		} else {
			serveRecovered(*handler, w, r, n.log)
		}
		w.finish()
	}()
}

// serveRecovered runs the handler, turning a panic into the end of the response as net/http
// would (the stream is cut).
func serveRecovered(h http.Handler, w http.ResponseWriter, r *http.Request, log *zap.Logger) {
	defer func() {
		if p := recover(); p != nil && p != http.ErrAbortHandler { //nolint:errorlint // net/http compares it so
			log.Error("forwarded request: handler panic", zap.Any("panic", p))
		}
	}()
	h.ServeHTTP(w, r)
}

// flushSize is how many written bytes the tunnelWriter keeps before sending them without a
// Flush.
const flushSize = 32 << 10

// tunnelWriter is the http.ResponseWriter (and http.Flusher) of a forwarded request. It is used
// by the serving goroutine only; everything it sends goes from that goroutine to one PID, so it
// arrives in order.
type tunnelWriter struct {
	sys    *actor.ActorSystem
	to     *actor.PID
	self   *actor.PID
	ctx    context.Context
	header http.Header
	wrote  bool
	buf    []byte
}

func (w *tunnelWriter) Header() http.Header { return w.header }

func (w *tunnelWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	env := &wire.Envelope{Kind: wire.Kind_KIND_HEAD, Status: int32(status), ReplyAddress: w.self.Address, ReplyId: w.self.Id}
	for k, vs := range w.header {
		env.Headers = append(env.Headers, &wire.Header{Name: k, Values: append([]string(nil), vs...)})
	}
	w.sys.Root.Send(w.to, env)
}

func (w *tunnelWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= flushSize {
		w.send()
	}
	return len(p), nil
}

// FlushError sends what was written; its error is the client's absence.
func (w *tunnelWriter) FlushError() error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	// Sent even when empty: the edge flushes on every BODY, so that a stream's header reaches
	// its client before the first event, as with a local response.
	w.sys.Root.Send(w.to, &wire.Envelope{Kind: wire.Kind_KIND_BODY, Body: w.buf})
	w.buf = nil
	return nil
}

func (w *tunnelWriter) Flush() { _ = w.FlushError() }

func (w *tunnelWriter) send() {
	if len(w.buf) == 0 {
		return
	}
	w.sys.Root.Send(w.to, &wire.Envelope{Kind: wire.Kind_KIND_BODY, Body: w.buf})
	w.buf = nil // the envelope keeps the old buffer until it is serialized
}

// finish sends the rest of the response and END.
func (w *tunnelWriter) finish() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	w.send()
	w.sys.Root.Send(w.to, &wire.Envelope{Kind: wire.Kind_KIND_END})
}

var _ http.Flusher = (*tunnelWriter)(nil)
