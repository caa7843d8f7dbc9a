package httpserve

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// The HTTP+SSE transport of MCP 2024-11-05, served beside Streamable HTTP for the clients that
// still speak it (see [Handler]). A GET without Mcp-Session-Id opens a session and its one SSE
// stream, whose first event, "endpoint", names the URL the client POSTs its messages to, with the
// session in its sessionId query parameter. Each POST is answered 202 Accepted with no body;
// every answer, and every message of the server, goes on the stream. The session is a legacy
// session as Streamable HTTP's are (one connection actor, passivated when quiet, the same limits,
// bound to its caller's subject, its id minted by Options.NewSessionID so that a cluster forwards
// its POSTs to its home); it ends when its stream closes, which cancels its calls in flight.

func (h *Handler) ssePath() string {
	if h.cfg.SSEPath != "" {
		return h.cfg.SSEPath
	}
	return streamable.DefaultSSEPath
}

func (h *Handler) messagesPath() string {
	if h.cfg.MessagesPath != "" {
		return h.cfg.MessagesPath
	}
	return streamable.DefaultMessagesPath
}

// opensSSE reports whether a GET opens an HTTP+SSE stream: the transport is on, and the request
// names no session, resumes no stream and is not a modern client's.
func (h *Handler) opensSSE(r *http.Request) bool {
	return !h.cfg.DisableSSE && r.Header.Get(protocol.HeaderSessionID) == "" &&
		r.Header.Get(protocol.HeaderLastEventID) == "" &&
		!protocol.IsModernVersion(r.Header.Get(protocol.HeaderProtocolVersion))
}

// sseSessionParam returns the session a POST names in its query, "" for none.
func sseSessionParam(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return r.URL.Query().Get(protocol.SSESessionParam)
}

// endpointURL is the data of the endpoint event of a stream opened by r: MessagesPath for a
// stream opened on SSEPath, else the path r came on (as the client sent it), with the session.
func (h *Handler) endpointURL(r *http.Request, sid string) string {
	path := h.messagesPath()
	if r.URL.Path != h.ssePath() {
		path = r.URL.EscapedPath()
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil && u.Path != "" {
			path = u.EscapedPath()
		}
	}
	return path + "?" + protocol.SSESessionParam + "=" + url.QueryEscape(sid)
}

// sseOpen serves a GET that opens an HTTP+SSE session: it claims the session's place under the
// limits (503 or 429 with Retry-After past them), opens its connection without an actor,
// writes the endpoint event and then relays everything the session sends, until the stream
// closes, which ends the session.
func (h *Handler) sseOpen(w http.ResponseWriter, r *http.Request, id *tools.Identity) {
	if !protocol.Accepts(r.Header.Values("Accept"), protocol.MediaTypeEventStream) {
		writeError(w, http.StatusNotAcceptable, protocol.ErrTransport("Not Acceptable", "Accept must list text/event-stream"))
		return
	}
	if h.isClosed() {
		writeError(w, http.StatusServiceUnavailable, protocol.ErrTransport("Service Unavailable", "server shutting down"))
		return
	}
	subject := subjectOf(id)
	if !h.claimPlace(w, protocol.ID{}, subject) {
		return
	}
	// The session's one request in progress is this stream.
	s := newLegacySession(h, h.newSessionID(), subject)
	s.sse = true
	s.notify.strict = true
	if err := h.eng.OpenIdle(s.conn, "http-sse", s.notify); err != nil {
		h.releasePlace(subject)
		if errors.Is(err, engine.ErrClosed) {
			writeError(w, http.StatusServiceUnavailable, protocol.ErrTransport("Service Unavailable", "server shutting down"))
			return
		}
		h.eng.Report(fmt.Errorf("http: open session: %w", err))
		writeError(w, http.StatusInternalServerError, protocol.ErrInternal())
		return
	}
	s.conn.NameSession(s.id)
	if !h.register(s) { // shutting down; the place is given back
		if s.finish() {
			s.conn.Close()
		}
		writeError(w, http.StatusServiceUnavailable, protocol.ErrTransport("Service Unavailable", "server shutting down"))
		return
	}
	s.openGet()
	// Messages are taken from now on: the client may POST as soon as it has the endpoint.
	s.notify.attach()
	closed := false
	end := func() {
		if closed {
			return
		}
		closed = true
		h.closeSSE(s)
	}
	startSSE(w)
	event := append([]byte("event: endpoint\ndata: "), h.endpointURL(r, s.id)...)
	event = append(event, "\n\n"...)
	if _, err := w.Write(event); err != nil {
		end()
		return
	}
	if err := http.NewResponseController(w).Flush(); err != nil {
		end()
		return
	}
	h.log.Debug("HTTP+SSE session opened", zap.Int("sessions", h.Sessions()))
	// Over HTTP/1.x the stream leaves net/http and its goroutine (detach.go); otherwise this
	// goroutine relays it.
	if ws, ok := h.streamHub().detach(w, r, s.conn.Ended, func(endReason) { h.closeSSE(s) }); ok {
		s.notify.setSink(ws)
		if s.isDone() {
			ws.end() // the session ended while the stream was taken over
		}
		return
	}
	defer end()
	relayStandalone(w, r, s, h.keepAlive())
}

// closeSSE ends an HTTP+SSE session whose stream closed: its calls in flight are cancelled,
// and its id answers 404 from then on.
func (h *Handler) closeSSE(s *legacySession) {
	s.notify.detach()
	s.closeGet()
	h.endSession(s)
	s.release()
	h.log.Debug("HTTP+SSE session ended", zap.Int("sessions", h.Sessions()))
}

// ssePost serves a POST of an HTTP+SSE session, named by its sessionId query parameter: 202
// Accepted once the message is handed to the session, whose answers go on its stream; the
// statuses of a Streamable HTTP POST otherwise (400 for a body that is not a JSON-RPC message,
// 404 for an unknown or ended session, 413, 415, 403 for a tool's missing scope).
func (h *Handler) ssePost(w http.ResponseWriter, r *http.Request, id *tools.Identity, sid string) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != protocol.MediaTypeJSON {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != protocol.MediaTypeJSON {
			writeError(w, http.StatusUnsupportedMediaType, protocol.ErrTransport("Unsupported Media Type", "Content-Type must be application/json"))
			return
		}
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	msg, batch, ok := decodeBody(w, body)
	if !ok {
		return
	}
	if batch != nil {
		h.ssePostBatch(w, r, batch, id, sid)
		return
	}
	if !checkVersion(w, r) {
		return
	}
	s := h.acquire(w, sid, id, true)
	if s == nil {
		return
	}
	if h.denyToolScopes(w, r, msg, id, false) {
		s.release()
		return
	}
	if msg.IsRequest() {
		// The request holds the session, as a Streamable HTTP POST does, until it is answered
		// (or silenced): a session with a call in flight is not quiet.
		s.conn.DeliverWith(r.Context(), msg, &sseCall{s: s}, id)
	} else {
		s.conn.DeliverWith(r.Context(), msg, discardStream{}, id)
		s.release()
	}
	w.WriteHeader(http.StatusAccepted)
}

// ssePostBatch serves a POST of an HTTP+SSE session whose body is a JSON-RPC batch, as
// [Handler.postBatch] does one of Streamable HTTP: in a session that negotiated 2025-03-26 it
// gets 202 Accepted and the array of its responses goes on the stream once every request of it
// has answered (what its calls send first, at once); anywhere else it is refused whole with 400
// and -32600, and so is an empty one or one of more than protocol.MaxBatchLength elements.
func (h *Handler) ssePostBatch(w http.ResponseWriter, r *http.Request, items []protocol.BatchItem, id *tools.Identity, sid string) {
	if protocol.IsModernVersion(r.Header.Get(protocol.HeaderProtocolVersion)) || !h.servesBatches(sid, id, true) {
		writeFrame(w, http.StatusBadRequest, protocol.EncodeError(protocol.ID{}, protocol.ErrBatchUnsupported()))
		return
	}
	switch {
	case len(items) == 0:
		writeFrame(w, http.StatusBadRequest, protocol.EncodeError(protocol.ID{}, protocol.ErrEmptyBatch()))
		return
	case len(items) > protocol.MaxBatchLength:
		writeFrame(w, http.StatusBadRequest, protocol.EncodeError(protocol.ID{}, protocol.ErrBatchTooLong()))
		return
	}
	if !checkVersion(w, r) {
		return
	}
	s := h.acquire(w, sid, id, true)
	if s == nil {
		return
	}
	answered := false
	for _, it := range items {
		answered = answered || it.Err != nil || it.Msg.IsRequest()
	}
	if answered {
		// The batch holds the session until its array is out, as a request does.
		s.conn.DeliverBatch(r.Context(), items, &sseCall{s: s}, id)
	} else {
		s.conn.DeliverBatch(r.Context(), items, discardStream{}, id)
		s.release()
	}
	w.WriteHeader(http.StatusAccepted)
}

// sseCall is the stream of one request of an HTTP+SSE session: its messages go on the session's
// stream, and its end gives back the hold on the session its POST took.
type sseCall struct {
	s    *legacySession
	done atomic.Bool
}

var _ engine.Stream = (*sseCall)(nil)

func (c *sseCall) Send(frame []byte) { c.s.notify.Send(frame) }

func (c *sseCall) Close() {
	if c.done.CompareAndSwap(false, true) {
		c.s.release()
	}
}
