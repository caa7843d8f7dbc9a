// Package httpserve is the Streamable HTTP transport of MCP, the http.Handler behind
// toolgrain's Server.Handler; package streamable holds its configuration and documents its
// contract, the answer each request gets.
//
// A [Handler] serves the connections of one engine, in both protocol eras. A legacy session is
// the stateful kind of the revisions up to MCP 2025-11-25, opened by initialize, named by the
// Mcp-Session-Id header and served by one connection actor (legacy_session.go, resume.go,
// standalone.go; the HTTP+SSE transport of 2024-11-05 in sse.go); the modern requests of MCP
// 2026-07-28 (modern.go, params.go) carry everything in each POST and share one stateless
// connection actor. The handler decodes each message, hands it to that actor with the stream
// its answers go to, and writes out what the actors queue there. Transport work runs on
// net/http's handler goroutines, which may block waiting for a stream; the actors only ever
// queue frames, without blocking. On Linux, quiet SSE streams leave net/http for one goroutine
// that writes for them all (detach.go).
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/principal"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// Options are what a [Handler] takes from the server it belongs to rather than from its
// streamable.Config. The zero value is usable.
type Options struct {
	// Logger receives the transport's debug lines (a session opened or deleted), under the name
	// "http". Nil means no logging.
	Logger *zap.Logger
	// MaxMessageSize bounds one POST body in bytes; a larger body gets 413. 0 means
	// protocol.DefaultMaxMessageSize (4 MiB).
	MaxMessageSize int
	// NewSessionID mints the Mcp-Session-Id of each new legacy session. It must return a value
	// protocol.ValidSessionID accepts, unique and unguessable. Nil means protocol.NewSessionID
	// (128 random bits); a cluster's member gives ids that name it as their home (package
	// cluster).
	NewSessionID func() string
}

// Handler is the Streamable HTTP transport of one engine, in both protocol eras: the
// http.Handler that toolgrain's Server.Handler returns. Its contract (what each request gets) is
// the doc of package streamable; its sessions live until they are deleted, expire or
// [Handler.Shutdown] ends them. Its methods are safe for concurrent use.
type Handler struct {
	eng     *engine.Engine
	log     *zap.Logger
	cfg     streamable.Config
	auth    *authenticator
	cors    *corsPolicy // nil without AllowedOrigins
	maxBody int
	newID   func() string // Options.NewSessionID

	mu       sync.Mutex
	sessions map[string]*legacySession
	places   places             // the sessions' places under the limits, opening ones included
	modern   *engine.Connection // the stateless connection of modern requests, made on first use
	hub      *hub               // the detached streams (detach.go), made on first use
	clock    clock              // the sessions' timers
	closed   bool
	drained  bool
}

var _ http.Handler = (*Handler)(nil)

// New returns the transport of eng configured by cfg. Its errors are a [streamable.Config].Auth without a
// Verifier, and one whose Resource is neither an absolute URL nor, with a [streamable.Config].AllowedHosts
// that lists a name, a path (see [streamable.AuthConfig].Resource). Unexpected failures (a verifier that fails, a session that cannot be opened) are
// reported to eng ([engine.Engine.Report]), never to the client.
func New(eng *engine.Engine, cfg streamable.Config, opts Options) (*Handler, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	h := &Handler{
		eng:      eng,
		log:      log.Named("http"),
		cfg:      cfg,
		maxBody:  opts.MaxMessageSize,
		newID:    opts.NewSessionID,
		sessions: make(map[string]*legacySession),
	}
	h.places = newPlaces(cfg.MaxSessions, cfg.MaxSessionsPerSubject, cfg.Auth != nil)
	h.cors = newCORS(cfg.AllowedOrigins)
	if h.maxBody <= 0 {
		h.maxBody = protocol.DefaultMaxMessageSize
	}
	if h.cfg.SessionIdleTimeout <= 0 {
		h.cfg.SessionIdleTimeout = streamable.DefaultSessionIdleTimeout
	}
	if h.cfg.StreamRetry <= 0 {
		h.cfg.StreamRetry = streamable.DefaultStreamRetry
	}
	var err error
	if h.auth, err = newAuthenticator(cfg.Auth, eng.Report); err != nil {
		return nil, err
	}
	if h.auth != nil {
		h.auth.hosts = cfg.AllowedHosts
		if !cfg.DisableSSE && cfg.Auth.ResourceMetadataURL == "" {
			h.auth.ssePath, h.auth.messagesPath = h.ssePath(), h.messagesPath()
		}
		if err := h.auth.checkResource(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// ResourceMetadataHandler serves the OAuth 2.0 protected-resource metadata (RFC 9728) of the
// endpoint when [streamable.Config].Auth is set, and 404 otherwise, with CORS for the origins
// [streamable.Config].AllowedOrigins accepts. Mount it at
// /.well-known/oauth-protected-resource and at that path followed by the endpoint's path (for
// /mcp: /.well-known/oauth-protected-resource/mcp), the locations MCP clients try.
func (h *Handler) ResourceMetadataHandler() http.Handler {
	return h.cors.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.auth == nil {
			http.NotFound(w, r)
			return
		}
		h.auth.serveMetadata(w, r)
	}))
}

// Sessions returns the number of live sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// ServeHTTP serves one request to the MCP endpoint; see [Handler] for the contract.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.hostAllowed(r) {
		writeError(w, http.StatusForbidden, protocol.ErrTransport("Forbidden", "host not allowed"))
		return
	}
	if !h.originAllowed(r) {
		writeError(w, http.StatusForbidden, protocol.ErrTransport("Forbidden", "origin not allowed"))
		return
	}
	if h.cors != nil && h.cors.apply(w, r) {
		return // a preflight, answered before authentication: it carries no credentials
	}
	id, ok := h.auth.authenticate(w, r)
	if !ok {
		return
	}
	if r = withToolsets(w, r); r == nil {
		return
	}
	switch r.Method {
	case http.MethodPost:
		if !h.cfg.DisableSSE && r.Header.Get(protocol.HeaderSessionID) == "" {
			if sid := sseSessionParam(r); sid != "" {
				h.ssePost(w, r, id, sid)
				return
			}
			if r.URL.Path == h.messagesPath() {
				writeError(w, http.StatusBadRequest, protocol.ErrTransport("Bad Request", "the "+protocol.SSESessionParam+" query parameter is required"))
				return
			}
		}
		h.post(w, r, id)
	case http.MethodGet:
		if h.opensSSE(r) {
			h.sseOpen(w, r, id)
			return
		}
		h.get(w, r, id)
	case http.MethodDelete:
		h.delete(w, r, id)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, protocol.ErrTransport("Method Not Allowed", r.Method))
	}
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request, id *tools.Identity) {
	// The common spelling skips mime.ParseMediaType, which allocates a map for the parameters.
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != protocol.MediaTypeJSON {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != protocol.MediaTypeJSON {
			writeError(w, http.StatusUnsupportedMediaType, protocol.ErrTransport("Unsupported Media Type", "Content-Type must be application/json"))
			return
		}
	}
	accept := r.Header.Values("Accept")
	if !protocol.Accepts(accept, protocol.MediaTypeJSON) && !protocol.Accepts(accept, protocol.MediaTypeEventStream) {
		writeError(w, http.StatusNotAcceptable, protocol.ErrTransport("Not Acceptable", "Accept must list application/json and text/event-stream"))
		return
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
		h.postBatch(w, r, batch, id)
		return
	}
	if isModern(r, msg) {
		h.modernPost(w, r, msg, id)
		return
	}
	sid := r.Header.Get(protocol.HeaderSessionID)
	if sid == "" {
		if msg.IsRequest() && msg.Method == protocol.MethodInitialize {
			h.initialize(w, r, msg, id)
			return
		}
		writeError(w, http.StatusBadRequest, protocol.ErrTransport("Bad Request", "Mcp-Session-Id header is required"))
		return
	}
	if !checkVersion(w, r) {
		return
	}
	s := h.acquire(w, sid, id, false)
	if s == nil {
		return
	}
	defer s.release()
	if h.denyToolScopes(w, r, msg, id, false) {
		return
	}
	if !msg.IsRequest() {
		s.conn.DeliverWith(r.Context(), msg, discardStream{}, id)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st := newPostStream()
	st.jsonOnly = !protocol.Accepts(r.Header.Values("Accept"), protocol.MediaTypeEventStream)
	s.conn.DeliverWith(r.Context(), msg, st, id)
	h.relay(w, r, st, s, nil)
}

// modernPost serves a modern POST. The checks run in the order the revision's clients (and its
// conformance suite) expect: the body's envelope (-32602), the MCP-Protocol-Version header
// against it, the Mcp-Method and Mcp-Name headers, for tools/call the Mcp-Param-* headers of the
// tool's x-mcp-header arguments ([checkParamHeaders]) (-32020), the version (-32022); then the
// engine answers, -32601 for a method the revision does not have. Each of those errors comes
// with 400 (404 for -32601), and echoes the request's id.
func (h *Handler) modernPost(w http.ResponseWriter, r *http.Request, msg *protocol.Message, id *tools.Identity) {
	switch {
	case msg.IsResponse():
		writeFrame(w, http.StatusBadRequest, protocol.EncodeError(msg.ID,
			protocol.ErrInvalidRequest("a %s client sends no responses: the server sends it no requests", protocol.LatestModernVersion)))
		return
	case msg.IsNotification():
		// Nothing a modern client notifies is meaningful over HTTP: a request is cancelled by
		// closing its stream.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	env, werr := msg.Envelope()
	if werr == nil {
		werr = checkHeaders(r, msg, env)
	}
	if werr == nil && msg.Method == protocol.MethodToolsCall {
		werr = h.checkToolParams(r, msg, id)
	}
	if werr == nil {
		werr = env.CheckVersion()
	}
	if werr != nil {
		writeFrame(w, modernStatus(werr.Code), protocol.EncodeError(msg.ID, werr))
		return
	}
	if h.denyToolScopes(w, r, msg, id, true) {
		return
	}
	sseOK := protocol.Accepts(r.Header.Values("Accept"), protocol.MediaTypeEventStream)
	if msg.Method == protocol.MethodSubscriptionsListen && !sseOK {
		writeFrame(w, http.StatusNotAcceptable, protocol.EncodeError(msg.ID,
			protocol.ErrTransport("Not Acceptable", "subscriptions/listen answers with an event stream: Accept must list text/event-stream")))
		return
	}
	conn := h.stateless()
	if conn == nil {
		writeError(w, http.StatusServiceUnavailable, protocol.ErrTransport("Service Unavailable", "server shutting down"))
		return
	}
	st := newPostStream()
	st.jsonOnly, st.ephemeral = !sseOK, true
	conn.DeliverModern(r.Context(), msg, env, st, id)
	var gone func(endReason)
	if msg.Method == protocol.MethodSubscriptionsListen {
		// A listen stream waits for changes for as long as its client stays: once it has sent
		// its acknowledgement it may leave net/http (detach.go).
		gone = func(endReason) {
			if !st.isClosed() {
				conn.StreamGone(st) // the client left, or was cut off: the listen is cancelled
			}
			st.drop()
		}
	}
	if h.relayModern(w, r, st, conn, gone) {
		return
	}
	if !st.isClosed() {
		// The client left before the answer: its request is cancelled, nothing more is sent.
		conn.StreamGone(st)
	}
}

// postBatch serves a POST whose body is a JSON-RPC batch. In a session that negotiated
// 2025-03-26 it is answered as a request is, with the array of its responses as the final
// message (one JSON body, or the last event of an SSE stream), or 202 when it holds no request;
// anywhere else it is refused with 400 and -32600, as a batch always was, and so is an empty one
// or one of more than protocol.MaxBatchLength elements. The scopes of a tool
// called in a batch are checked by the engine, which answers that element with the JSON-RPC
// error rather than the whole POST with 403.
func (h *Handler) postBatch(w http.ResponseWriter, r *http.Request, items []protocol.BatchItem, id *tools.Identity) {
	sid := r.Header.Get(protocol.HeaderSessionID)
	if sid == "" || protocol.IsModernVersion(r.Header.Get(protocol.HeaderProtocolVersion)) || !h.servesBatches(sid, id, false) {
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
	s := h.acquire(w, sid, id, false)
	if s == nil {
		return
	}
	defer s.release()
	answered := false
	for _, it := range items {
		answered = answered || it.Err != nil || it.Msg.IsRequest()
	}
	if !answered {
		s.conn.DeliverBatch(r.Context(), items, discardStream{}, id)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st := newPostStream()
	st.jsonOnly = !protocol.Accepts(r.Header.Values("Accept"), protocol.MediaTypeEventStream)
	s.conn.DeliverBatch(r.Context(), items, st, id)
	h.relay(w, r, st, s, nil)
}

// servesBatches reports whether sid names a live session of the identity's subject and of the
// transport (sse: HTTP+SSE) whose revision has JSON-RPC batches.
func (h *Handler) servesBatches(sid string, id *tools.Identity, sse bool) bool {
	h.mu.Lock()
	s := h.sessions[sid]
	h.mu.Unlock()
	return s != nil && s.subject == subjectOf(id) && s.sse == sse && s.conn.Revision().Has(protocol.FeatureBatches)
}

// initialize opens a session for an initialize request. The session is entered in the table,
// and its id sent, only when initialize succeeded; otherwise it is closed at once.
func (h *Handler) initialize(w http.ResponseWriter, r *http.Request, msg *protocol.Message, id *tools.Identity) {
	if h.isClosed() {
		writeError(w, http.StatusServiceUnavailable, protocol.ErrTransport("Service Unavailable", "server shutting down"))
		return
	}
	subject := subjectOf(id)
	if !h.claimPlace(w, msg.ID, subject) {
		return
	}
	// The session starts without an actor: its initialize is answered from its record, and
	// the first request that needs one brings one (engine.Engine.OpenIdle). The session, its
	// connection and its notification path are one allocation.
	s := newLegacySession(h, h.newSessionID(), subject)
	conn := s.conn
	err := h.eng.OpenIdle(conn, "http", s.notify)
	if err != nil {
		h.releasePlace(subject)
	}
	if errors.Is(err, engine.ErrClosed) {
		writeError(w, http.StatusServiceUnavailable, protocol.ErrTransport("Service Unavailable", "server shutting down"))
		return
	}
	if err != nil {
		h.eng.Report(fmt.Errorf("http: open session: %w", err))
		writeError(w, http.StatusInternalServerError, protocol.ErrInternal())
		return
	}
	conn.NameSession(s.id)
	st := newPostStream()
	conn.DeliverWith(r.Context(), msg, st, id)
	registered, claimed := false, false
	h.relay(w, r, st, s, func(first protocol.FrameKind) {
		if first == protocol.FrameResult {
			claimed = true // register takes over the place, or gives it back
			if h.register(s) {
				w.Header().Set(protocol.HeaderSessionID, s.id)
				registered = true
			}
		}
	})
	if !claimed {
		h.releasePlace(subject)
	}
	if !registered {
		if s.finish() {
			conn.Close()
		}
		return
	}
	h.log.Debug("session opened", zap.Int("sessions", h.Sessions()))
	s.release()
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, id *tools.Identity) {
	if !protocol.Accepts(r.Header.Values("Accept"), protocol.MediaTypeEventStream) {
		writeError(w, http.StatusNotAcceptable, protocol.ErrTransport("Not Acceptable", "Accept must list text/event-stream"))
		return
	}
	s := h.findSession(w, r, id)
	if s == nil {
		return
	}
	if last := r.Header.Get(protocol.HeaderLastEventID); last != "" {
		// A resumption of a POST stream, which leaves the standalone stream alone.
		defer s.release()
		h.resume(w, r, s, last)
		return
	}
	if !s.openGet() {
		s.release()
		writeError(w, http.StatusConflict, protocol.ErrTransport("Conflict", "the session's standalone SSE stream is already open"))
		return
	}
	// The stream holds the session (it is not idle while it is open) until it ends.
	closeGet := func() {
		s.notify.detach()
		s.closeGet()
		s.release()
	}
	// Notifications are taken from now on, before the client can see the stream open.
	s.notify.attach()
	startSSE(w)
	if err := http.NewResponseController(w).Flush(); err != nil {
		closeGet()
		return
	}
	// The standalone stream carries messages unrelated to any request (list_changed,
	// resources/updated, withdrawn requests to the client). It stays open until the client
	// leaves, the session ends or the server shuts down. Over HTTP/1.x it leaves net/http and
	// its goroutine (detach.go); otherwise this goroutine relays it.
	if ws, ok := h.streamHub().detach(w, r, s.conn.Ended, func(endReason) { closeGet() }); ok {
		s.notify.setSink(ws)
		if s.isDone() {
			ws.end() // the session ended while the stream was taken over
		}
		return
	}
	defer closeGet()
	relayStandalone(w, r, s, h.keepAlive())
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, id *tools.Identity) {
	s := h.findSession(w, r, id)
	if s == nil {
		return
	}
	h.endSession(s)
	s.release()
	h.log.Debug("session deleted", zap.Int("sessions", h.Sessions()))
	w.WriteHeader(http.StatusNoContent)
}

// findSession checks the session and version headers of a GET or DELETE and acquires the
// session.
func (h *Handler) findSession(w http.ResponseWriter, r *http.Request, id *tools.Identity) *legacySession {
	sid := r.Header.Get(protocol.HeaderSessionID)
	if sid == "" && protocol.IsModernVersion(r.Header.Get(protocol.HeaderProtocolVersion)) {
		// A modern client: the revision has POST only.
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, protocol.ErrTransport("Method Not Allowed",
			r.Method+" is not part of MCP "+protocol.LatestModernVersion+": every request is a POST"))
		return nil
	}
	if sid == "" {
		writeError(w, http.StatusBadRequest, protocol.ErrTransport("Bad Request", "Mcp-Session-Id header is required"))
		return nil
	}
	if !checkVersion(w, r) {
		return nil
	}
	return h.acquire(w, sid, id, false)
}

// acquire finds a live session by id for the identity's subject and marks a request on it, or
// answers 404 (503 during shutdown) and returns nil. A session opened by one subject is not
// found by another, nor one of the HTTP+SSE transport by a Streamable HTTP request (sse false),
// or the other way round.
func (h *Handler) acquire(w http.ResponseWriter, sid string, id *tools.Identity, sse bool) *legacySession {
	if !protocol.ValidSessionID(sid) {
		writeError(w, http.StatusNotFound, protocol.ErrTransport("Not Found", "session not found"))
		return nil
	}
	h.mu.Lock()
	s, closed := h.sessions[sid], h.closed
	h.mu.Unlock()
	switch {
	case closed:
		writeError(w, http.StatusServiceUnavailable, protocol.ErrTransport("Service Unavailable", "server shutting down"))
		return nil
	case s == nil || s.subject != subjectOf(id) || s.sse != sse:
		writeError(w, http.StatusNotFound, protocol.ErrTransport("Not Found", "session not found"))
		return nil
	case !s.acquire():
		h.endSession(s) // its connection actor stopped on its own
		writeError(w, http.StatusNotFound, protocol.ErrTransport("Not Found", "session not found"))
		return nil
	}
	return s
}

// newSessionID mints the id of a new legacy session.
func (h *Handler) newSessionID() string {
	if h.newID != nil {
		return h.newID()
	}
	return protocol.NewSessionID()
}

// register enters an initialized session in the table, where it keeps the place its initialize
// claimed; during shutdown it gives the place back and reports false.
func (h *Handler) register(s *legacySession) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		h.places.release(s.subject)
		return false
	}
	h.sessions[s.id] = s
	return true
}

// endSession removes a session from the table and closes its connection: its calls in flight
// are cancelled (their streams end with no response) and its GET stream ends.
func (h *Handler) endSession(s *legacySession) {
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
		h.places.release(s.subject)
	}
	h.mu.Unlock()
	if s.finish() {
		s.conn.Close()
	}
}

// Shutdown ends every session and refuses new ones: the sessions' calls in flight are cancelled
// (their streams end with no response) and their GET streams end; open subscriptions/listen
// streams get the result that ends them, and other modern requests in flight are cancelled;
// from then on an initialize, and any request that names a session, gets 503. It does not
// wait: the engine's shutdown waits for the connection actors, and [Handler.Drain] for the
// streams taken from net/http. Calling it again does nothing more.
func (h *Handler) Shutdown() {
	h.mu.Lock()
	h.closed = true
	all := make([]*legacySession, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
		h.places.release(s.subject)
	}
	clear(h.sessions)
	modern := h.modern
	h.mu.Unlock()
	h.clock.stop()
	if modern != nil {
		// Open listen streams are answered with the result that ends them, as at the end of a
		// stdio client's input; then the modern requests still in flight are cancelled.
		modern.Finish()
		modern.Close()
	}
	for _, s := range all {
		if s.finish() {
			s.conn.Close()
		}
	}
}

// passivateAfter is [streamable.Config].PassivateAfter with its default; 0 means never.
func (h *Handler) passivateAfter() time.Duration {
	switch d := h.cfg.PassivateAfter; {
	case d < 0:
		return 0
	case d == 0:
		return streamable.DefaultPassivateAfter
	default:
		return d
	}
}

// streamHub returns the hub of the detached streams, started on first use; nil during
// shutdown, or where streams are not detached.
func (h *Handler) streamHub() *hub {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	if h.hub == nil {
		h.hub = newHub(h.log, h.keepAlive())
		if h.hub == nil {
			h.hub = &hub{} // none: never tried again
		}
	}
	if h.hub.poller == nil {
		return nil
	}
	return h.hub
}

// Drain waits until every SSE stream the handler took from net/http (see [Handler]) has written
// its end, and closes those still open when ctx ends; then the goroutines that serve them stop.
// Call it after [Handler.Shutdown] and the engine's shutdown, which end the streams: net/http's
// Server.Shutdown does not see these connections. Calling it again does nothing more.
func (h *Handler) Drain(ctx context.Context) {
	h.mu.Lock()
	h.closed = true
	hb, drained := h.hub, h.drained
	h.drained = true
	h.mu.Unlock()
	if drained || hb == nil || hb.poller == nil {
		return
	}
	hb.shutdown(ctx.Done())
}

// StreamStats counts the SSE streams a [Handler] took from net/http to serve them without a
// goroutine each (see [Handler]).
type StreamStats struct {
	Detached int64 // streams taken so far
	Open     int64 // open now
	Gone     int64 // ended because the client closed the connection or was found dead
	CutOff   int64 // cut off because the client read too slowly
}

// StreamStats returns the counters of the detached streams.
func (h *Handler) StreamStats() StreamStats {
	h.mu.Lock()
	hb := h.hub
	h.mu.Unlock()
	if hb == nil {
		return StreamStats{}
	}
	return StreamStats{Detached: hb.stats.detached.Load(), Open: hb.stats.open.Load(),
		Gone: hb.stats.gone.Load(), CutOff: hb.stats.cut.Load()}
}

func (h *Handler) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// subjectOf is the key a caller's sessions are bound to (and counted under, for
// MaxSessionsPerSubject): a user's and a client's subjects apart (internal/principal).
func subjectOf(id *tools.Identity) string { return principal.Key(id) }

// readBody reads the request body up to the message size limit, answering 413 beyond it.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := int64(h.maxBody)
	tooLarge := func() ([]byte, bool) {
		we := protocol.ErrInvalidRequest("%s", (&protocol.MessageTooLargeError{Limit: h.maxBody}).Error())
		writeFrame(w, http.StatusRequestEntityTooLarge, protocol.EncodeError(protocol.ID{}, we))
		return nil, false
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	// With a Content-Length the body is read into one buffer of that size plus the byte that
	// meets EOF (bytes.Buffer.ReadFrom would grow it by 512 bytes first); without, it grows.
	size := 512
	if r.ContentLength > 0 {
		size = int(r.ContentLength) + 1
	}
	buf := make([]byte, 0, size)
	body := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, true
		}
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return tooLarge()
		case err != nil:
			writeError(w, http.StatusBadRequest, protocol.ErrTransport("Bad Request", "the body could not be read"))
			return nil, false
		}
	}
}

// hostAllowed guards against DNS rebinding: on a loopback address only loopback names and the
// configured hosts are accepted.
func (h *Handler) hostAllowed(r *http.Request) bool {
	host := strings.ToLower(r.Host)
	for _, a := range h.cfg.AllowedHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, hostname(host)) {
			return true
		}
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if tcp, ok := local.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return isLoopbackName(hostname(host))
	}
	return len(h.cfg.AllowedHosts) == 0
}

func (h *Handler) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, a := range h.cfg.AllowedOrigins {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// hostname strips the port and the brackets of an IPv6 literal.
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkVersion applies the MCP-Protocol-Version rules to a request after initialize.
func checkVersion(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get(protocol.HeaderProtocolVersion)
	if v == "" || protocol.IsSupportedVersion(v) {
		return true // absent: 2025-03-26 is assumed, which is supported
	}
	writeError(w, http.StatusBadRequest, protocol.ErrTransport("Bad Request",
		fmt.Sprintf("unsupported MCP-Protocol-Version %q (supported: %s)", v, strings.Join(protocol.SupportedVersions, ", "))))
	return false
}

// writeError answers with an HTTP error status and a JSON-RPC error body with id null.
func writeError(w http.ResponseWriter, status int, we *protocol.WireError) {
	writeFrame(w, status, protocol.EncodeError(protocol.ID{}, we))
}

// jsonContentType is the Content-Type header value of every JSON body; net/http only reads it.
var jsonContentType = []string{protocol.MediaTypeJSON}

func writeFrame(w http.ResponseWriter, status int, frame []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType // Set would allocate a new slice for every response
	h.Set("Content-Length", strconv.Itoa(len(frame)))
	w.WriteHeader(status)
	_, _ = w.Write(frame)
}

func startSSE(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Type", protocol.MediaTypeEventStream)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no") // tell nginx-style proxies not to buffer the stream
	w.WriteHeader(http.StatusOK)
}

// discardStream answers notifications and responses, which get no answer.
type discardStream struct{}

func (discardStream) Send([]byte) {}
func (discardStream) Close()      {}

// decodeBody decodes a POST's body: one message or a batch. A body that is not JSON-RPC is
// answered here with 400 and its error, naming the request's id when one could be read.
func decodeBody(w http.ResponseWriter, body []byte) (*protocol.Message, []protocol.BatchItem, bool) {
	msg, batch, werr := protocol.DecodeInput(body)
	if werr != nil {
		var mid protocol.ID
		if msg != nil {
			mid = msg.ID
		}
		writeFrame(w, http.StatusBadRequest, protocol.EncodeError(mid, werr))
		return nil, nil, false
	}
	return msg, batch, true
}
