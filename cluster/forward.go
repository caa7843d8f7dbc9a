package cluster

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/internal/wire"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
)

// wrap returns the MCP endpoint handler of a member: requests of legacy sessions homed on
// another member (named by Mcp-Session-Id, or by the sessionId query parameter of an HTTP+SSE
// session's POST) are forwarded there (see the package doc); every other request (initialize,
// modern requests, this member's sessions, ids this cluster did not mint) is served by local,
// which is also what serves the requests other members forward here. maxBody bounds a forwarded
// body as the local handler bounds its own (0: protocol.DefaultMaxMessageSize); the home
// answers 413 past it. toolgrain.NewServer calls wrap when Config.Cluster is set.
func (n *Node) wrap(local http.Handler, maxBody int) http.Handler {
	n.local.Store(&local)
	if maxBody <= 0 {
		maxBody = protocol.DefaultMaxMessageSize
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get(protocol.HeaderSessionID)
		if protocol.IsModernVersion(r.Header.Get(protocol.HeaderProtocolVersion)) {
			// A task lives on its home: tasks/get, tasks/update and tasks/cancel go there. A
			// home that has left the member list is answered locally, where the engine reports
			// the task failed (taskGone). A home still in the list whose connection is down may
			// be back in a moment, and its task may still be running: the request is refused as
			// one to send again, rather than answered with a terminal status. So is one whose
			// home reference names no member seen yet, for as long as this member may still
			// learn of it (learning); after that the id names no member, and is served locally,
			// where it is unknown.
			if r.Method == http.MethodPost && isTaskMethod(r.Header.Get(protocol.HeaderMethod)) {
				id := requestTaskID(r, maxBody)
				home, ok := n.taskHomeOf(id)
				if !ok && n.learning(taskstore.HomeOf(id)) {
					unavailable(w)
					return
				}
				if ok && home != n.addr && n.listed(home) {
					if n.alive(home) {
						switch n.forward(w, r, home, maxBody) {
						case forwarded:
							return
						case homeGone:
							n.markDead(home) // it went away before its answer came whole
						}
					}
					unavailable(w)
					return
				}
			}
			local.ServeHTTP(w, r)
			return
		}
		if sid == "" && r.Method == http.MethodPost && r.URL.RawQuery != "" {
			// A POST of an HTTP+SSE (MCP 2024-11-05) session names it in its query; its
			// stream is on the home, which the GET that opened the session reached.
			sid = r.URL.Query().Get(protocol.SSESessionParam)
		}
		if sid == "" {
			local.ServeHTTP(w, r)
			return
		}
		home, ok := n.sessionHome(sid)
		if !ok || home == n.addr {
			local.ServeHTTP(w, r)
			return
		}
		// A home this member has not seen in the topology yet is forwarded to as well: the id
		// names its address, and only a member could have minted it. One that is not there
		// after all (it left before this member joined) breaks the connection: 404 then.
		if n.gone(home) {
			notFound(w)
			return
		}
		switch n.forward(w, r, home, maxBody) {
		case homeGone:
			notFound(w)
		case homeSilent:
			silent(w)
		}
	})
}

// ackWait bounds the wait for a home's receipt of a forwarded request (a variable for tests).
var ackWait = 5 * time.Second

// retryAfter is the Retry-After, in seconds, of a request refused as one to send again (its
// home cannot be reached, or did not acknowledge it): about the time the member list takes to
// settle (a poll).
const retryAfter = "1"

// unavailable refuses a tasks/* request whose task's home is a member that cannot be reached:
// 503 Service Unavailable, Retry-After and the JSON-RPC error
// [protocol.ErrTaskHomeUnreachable].
func unavailable(w http.ResponseWriter) {
	refuse(w, http.StatusServiceUnavailable, retryAfter, protocol.ErrTaskHomeUnreachable())
}

// silent refuses a request of a session whose home did not acknowledge it (see ackWait): 503
// with Retry-After, as one to send again; the session is not known to be gone.
func silent(w http.ResponseWriter) {
	refuse(w, http.StatusServiceUnavailable, retryAfter,
		protocol.ErrTransport("Service Unavailable", "the session's member did not acknowledge the request"))
}

// notFound answers as the transport does for an unknown session.
func notFound(w http.ResponseWriter) {
	refuse(w, http.StatusNotFound, "", protocol.ErrTransport("Not Found", "session not found"))
}

// refuse writes status and the JSON-RPC error e with a null id, as the transport's own refusals
// have, and Retry-After when retry is not empty.
func refuse(w http.ResponseWriter, status int, retry string, e *protocol.WireError) {
	frame := protocol.EncodeError(protocol.ID{}, e)
	h := w.Header()
	h.Set("Content-Type", protocol.MediaTypeJSON)
	h.Set("Content-Length", strconv.Itoa(len(frame)))
	if retry != "" {
		h.Set("Retry-After", retry)
	}
	w.WriteHeader(status)
	_, _ = w.Write(frame)
}

// forwardOutcome is how a forwarded request ended.
type forwardOutcome int

const (
	forwarded  forwardOutcome = iota // answered, or the client left
	homeGone                         // the home terminated before its answer began
	homeSilent                       // the home did not acknowledge the request within ackWait
)

// forward sends the request to its home and writes the home's answer: an event stream as it
// comes, any other answer (a JSON body, a 202) whole once its end has come, so that a
// connection that breaks before then leaves the client nothing cut to read but a refusal to act
// on. When it returns homeGone or homeSilent it has written nothing, and r.Body is what was
// read of it.
func (n *Node) forward(w http.ResponseWriter, r *http.Request, home string, maxBody int) forwardOutcome {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBody)+1))
	if err != nil {
		return forwarded // the client went away mid-body
	}
	env := &wire.Envelope{
		Kind:       wire.Kind_KIND_REQUEST,
		Method:     r.Method,
		Target:     r.URL.RequestURI(),
		Host:       r.Host,
		Scheme:     "http",
		RemoteAddr: r.RemoteAddr,
		Body:       body,
	}
	if r.TLS != nil {
		env.Scheme = "https"
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(interface{ String() string }); ok {
		env.LocalAddr = a.String()
	}
	headers := r.Header
	tel := n.tel.Load()
	span, ctx := tel.startForward(r, home)
	if span != nil {
		headers = r.Header.Clone()
		tel.inject(ctx, headers)
		defer span.End()
	}
	for k, vs := range headers {
		env.Headers = append(env.Headers, &wire.Header{Name: k, Values: vs})
	}
	q := newFrameQueue()
	root := n.system.Root
	pid := root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &streamActor{node: n, home: actor.NewPID(home, tunnelName), req: env, q: q}
	}))
	defer root.Stop(pid)
	n.stats.forwarded.Add(1)

	rc := http.NewResponseController(w)
	headed, acked, start := false, false, time.Now()
	// held is the head of an answer that is not an event stream, written with its body (kept
	// in whole) at its end. It is nil for an event stream, and before the head.
	var held *wire.Envelope
	var whole []byte
	ack := time.NewTimer(ackWait)
	defer ack.Stop()
	for {
		select {
		case <-r.Context().Done():
			spanError(span, "client gone")
			return forwarded
		case <-ack.C:
			// Neither the home's receipt nor its end came: the request was lost on the way.
			spanError(span, "home silent")
			n.log.Warn("forwarded request: the home did not acknowledge it", zap.String("home", home), zap.Duration("waited", ackWait))
			r.Body = io.NopCloser(bytes.NewReader(body))
			return homeSilent
		case <-q.wake:
		}
		for _, f := range q.take() {
			if f != nil && !acked {
				acked = true // whatever the home sent first, it has the request
				ack.Stop()
			}
			switch {
			case f == nil: // the home or its request actor terminated
				spanError(span, "home gone")
				if !headed || held != nil {
					r.Body = io.NopCloser(bytes.NewReader(body))
					return homeGone
				}
				n.log.Debug("forwarded stream cut: home gone", zap.String("home", home))
				return forwarded
			case f.Kind == wire.Kind_KIND_HEAD:
				headed = true
				n.stats.headed.Add(1)
				d := time.Since(start)
				n.stats.headNanos.Add(int64(d))
				tel.headed(d)
				setStatus(span, int(f.Status))
				if !eventStream(f) {
					held = f
					continue
				}
				writeHead(w, f)
			case f.Kind == wire.Kind_KIND_BODY && !headed:
				// The home's receipt (a BODY before the HEAD): it has the request.
			case f.Kind == wire.Kind_KIND_BODY && held != nil:
				whole = append(whole, f.Body...)
			case f.Kind == wire.Kind_KIND_BODY:
				if len(f.Body) > 0 {
					if _, err := w.Write(f.Body); err != nil {
						return forwarded
					}
				}
				if err := rc.Flush(); err != nil {
					return forwarded
				}
			case f.Kind == wire.Kind_KIND_END:
				if held != nil {
					writeHead(w, held)
					_, _ = w.Write(whole)
				}
				return forwarded
			}
		}
	}
}

// eventStream reports whether the home's answer whose HEAD is head is an event stream.
func eventStream(head *wire.Envelope) bool {
	for _, h := range head.Headers {
		if http.CanonicalHeaderKey(h.Name) == "Content-Type" && len(h.Values) > 0 {
			mt, _, _ := mime.ParseMediaType(h.Values[0])
			return mt == protocol.MediaTypeEventStream
		}
	}
	return false
}

// writeHead writes the status and headers of the home's answer.
func writeHead(w http.ResponseWriter, head *wire.Envelope) {
	hd := w.Header()
	for _, h := range head.Headers {
		hd[h.Name] = h.Values
	}
	w.WriteHeader(int(head.Status))
}

// streamActor is the edge side of a forwarded request: it sends the request to the home's
// tunnel, watches the tunnel and then the home's request actor, and queues what the home sends
// for the HTTP goroutine (a nil frame when a watched actor terminated). The HTTP goroutine stops
// it when the response is complete or the client left; the home's request actor, which watches
// it, then ends the request there.
type streamActor struct {
	node    *Node
	home    *actor.PID
	req     *wire.Envelope
	q       *frameQueue
	handler *actor.PID
	ended   bool
}

func (s *streamActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		s.node.stats.streams.Add(1)
		c.Watch(s.home)
		s.req.ReplyAddress, s.req.ReplyId = c.Self().Address, c.Self().Id
		c.Send(s.home, s.req)
		s.req = nil
	case *actor.Stopping:
		c.Unwatch(s.home)
		if s.handler != nil {
			c.Unwatch(s.handler)
		}
	case *actor.Stopped:
		s.node.stats.streams.Add(-1)
	case *actor.Terminated:
		if !s.ended {
			s.ended = true
			s.q.push(nil)
			// A cut in mid-response is worth an operator's eye: the reason says whether the
			// home's request ended (Stopped) or the connection to the home broke (AddressTerminated).
			s.node.log.Warn("forwarded request: home side ended before the response did",
				zap.String("home", s.home.Address), zap.String("actor", m.Who.Id), zap.Stringer("why", m.Why))
		}
	case *wire.Envelope:
		if s.ended {
			return
		}
		switch m.Kind {
		case wire.Kind_KIND_HEAD:
			if s.handler == nil && m.ReplyAddress != "" {
				s.handler = actor.NewPID(m.ReplyAddress, m.ReplyId)
				c.Watch(s.handler)
			}
		case wire.Kind_KIND_END:
			s.ended = true
		}
		s.q.push(m)
	}
}

// frameQueue hands frames from a streamActor to its HTTP goroutine without blocking the actor.
type frameQueue struct {
	mu     sync.Mutex
	frames []*wire.Envelope
	wake   chan struct{} // size 1: a pending wake-up
}

func newFrameQueue() *frameQueue { return &frameQueue{wake: make(chan struct{}, 1)} }

func (q *frameQueue) push(f *wire.Envelope) {
	q.mu.Lock()
	q.frames = append(q.frames, f)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *frameQueue) take() []*wire.Envelope {
	q.mu.Lock()
	defer q.mu.Unlock()
	f := q.frames
	q.frames = nil
	return f
}
