package httpserve

import (
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
)

// Limits on the legacy sessions of a [Handler]. Without them a client could open sessions, each
// a connection actor and its bookkeeping, until memory ran out: they end only when deleted or
// after SessionIdleTimeout.
// sessionRetryAfter is the Retry-After, in seconds, of an initialize refused for a limit on
// sessions: a hint only, since a place frees whenever a session is deleted or expires.
const sessionRetryAfter = "5"

// places counts the sessions under the limits: the open ones and those whose initialize is in
// progress, in all and per subject. It is guarded by Handler.mu.
type places struct {
	max, perSubject int // 0: no limit
	total           int
	bySubject       map[string]int // when perSubject applies
}

// newPlaces applies the limits of a [streamable.Config]: zero means the default, negative none; the limit
// per subject applies only with authentication.
func newPlaces(max, perSubject int, auth bool) places {
	switch {
	case max == 0:
		max = streamable.DefaultMaxSessions
	case max < 0:
		max = 0
	}
	switch {
	case !auth || perSubject < 0:
		perSubject = 0
	case perSubject == 0:
		perSubject = streamable.DefaultMaxSessionsPerSubject
	}
	return places{max: max, perSubject: perSubject, bySubject: make(map[string]int)}
}

// claim takes a place for a session of subject, or returns the scope and value of the limit in
// the way: the subject's own first, since that one is the client's doing.
func (p *places) claim(subject string) (scope string, limit int) {
	switch {
	case p.perSubject > 0 && p.bySubject[subject] >= p.perSubject:
		return protocol.BusySubject, p.perSubject
	case p.max > 0 && p.total >= p.max:
		return protocol.BusySessions, p.max
	}
	p.total++
	if p.perSubject > 0 {
		p.bySubject[subject]++
	}
	return "", 0
}

// release gives back a place that claim took.
func (p *places) release(subject string) {
	p.total--
	if p.perSubject == 0 {
		return
	}
	if n := p.bySubject[subject] - 1; n > 0 {
		p.bySubject[subject] = n
	} else {
		delete(p.bySubject, subject)
	}
}

// claimPlace takes a place for a new session of subject under the limits on sessions, or
// refuses the initialize request id and returns false. The refusal is a JSON-RPC error -31000
// (the engine's code for a request refused unprocessed at a limit, safe to send again) with
// Retry-After, in 503 Service Unavailable when the server is full, a condition of the server
// that a load balancer may route around, and in 429 Too Many Requests when the subject has its
// share, a condition of that client alone.
func (h *Handler) claimPlace(w http.ResponseWriter, id protocol.ID, subject string) bool {
	h.mu.Lock()
	scope, limit := h.places.claim(subject)
	h.mu.Unlock()
	if scope == "" {
		return true
	}
	h.log.Debug("initialize refused: limit on sessions reached", zap.String("scope", scope), zap.Int("limit", limit))
	status := http.StatusServiceUnavailable
	if scope == protocol.BusySubject {
		status = http.StatusTooManyRequests
	}
	w.Header().Set("Retry-After", sessionRetryAfter)
	writeFrame(w, status, protocol.EncodeError(id, protocol.ErrTooManySessions(scope, limit)))
	return false
}

// releasePlace gives back the place of a session that did not open.
func (h *Handler) releasePlace(subject string) {
	h.mu.Lock()
	h.places.release(subject)
	h.mu.Unlock()
}

// legacySession is one Streamable HTTP session, the stateful kind of the revisions up to MCP
// 2025-11-25: a connection, the id the client names it by, and the bookkeeping of its idle
// expiry and passivation. A session ends once: on DELETE, on idle expiry, when its connection
// actor stopped, or at shutdown; its id then answers 404 for good.
//
// A session with no request in progress but its standalone GET stream is quiet: after
// passivateAfter its connection lets its actor go (engine.Connection.Passivate), to bring it
// back with the next request. A session with nothing at all in progress, not even a GET
// stream, is idle, and expires after SessionIdleTimeout. Both are timed by the handler's clock.
// The record is kept small: thousands of sessions wait at once.
type legacySession struct {
	id      string
	h       *Handler
	conn    *engine.Connection
	notify  *standaloneStream // the session's notification path, relayed by its GET stream
	streams *streams          // its POST SSE streams kept for resumption; made with the first
	subject string            // the identity's subject when auth is on; later requests must match it
	sse     bool              // a session of the HTTP+SSE transport: its one GET stream carries every answer

	ended chan struct{} // closed when the session ends; made when first asked for (endedCh)

	mu         sync.Mutex
	active     int32 // HTTP requests in progress on the session (POSTs, the GET stream)
	idleSince  int64 // when active last dropped to 0 (Unix nanoseconds)
	quietSince int64 // when the requests other than the GET stream last dropped to 0
	filed      int64 // the clock tick the session is filed under; 0: none
	asked      bool  // passivation was asked for since it became quiet
	done       bool
	getOpen    bool // the standalone GET stream is open
}

// sessionRecord holds a session with its connection and its notification path, as one
// allocation: what a waiting session costs is this record (with its entry in the handler's
// table, and its id).
type sessionRecord struct {
	session legacySession
	conn    engine.Connection
	notify  standaloneStream
}

// newLegacySession returns the session id with one request in progress (the initialize POST
// that opens it). Its connection is to be opened (engine.Engine.OpenIdle) before use.
func newLegacySession(h *Handler, id, subject string) *legacySession {
	rec := &sessionRecord{}
	rec.session = legacySession{id: id, h: h, conn: &rec.conn, notify: &rec.notify, subject: subject, active: 1}
	return &rec.session
}

// requests is the number of requests in progress other than the standalone GET stream; s.mu
// is held.
func (s *legacySession) requests() int32 {
	if s.getOpen {
		return s.active - 1
	}
	return s.active
}

// due returns when the next of the passivation and the idle expiry is due (Unix nanoseconds),
// or 0 when none is; s.mu is held.
func (s *legacySession) due() int64 {
	if s.done {
		return 0
	}
	var next int64
	if quiet := s.h.passivateAfter(); quiet > 0 && !s.asked && s.requests() == 0 {
		next = s.quietSince + int64(quiet)
	}
	if s.active == 0 {
		if exp := s.idleSince + int64(s.h.cfg.SessionIdleTimeout); next == 0 || exp < next {
			next = exp
		}
	}
	return next
}

// schedule files the session with the handler's clock for what is due next, unless it is
// filed for an earlier tick already; s.mu is held.
func (s *legacySession) schedule() {
	next := s.due()
	if next == 0 {
		return
	}
	tick := tickOf(time.Unix(0, next))
	if s.filed != 0 && s.filed <= tick {
		return // it looks at itself then, and files itself again
	}
	if s.h.clock.file(s, tick) {
		s.filed = tick
	}
}

// fire is the clock's call for tick: the session passivates if it has been quiet for long
// enough, ends if it has been idle for long enough, and files itself for what is due later.
// A filing that is no longer the session's (it filed itself earlier since) is ignored.
func (s *legacySession) fire(tick int64) {
	s.mu.Lock()
	if s.filed != tick || s.done {
		s.mu.Unlock()
		return
	}
	s.filed = 0
	s.h.clock.unfiled()
	now := time.Now().UnixNano()
	quiet := s.h.passivateAfter()
	passivate := quiet > 0 && !s.asked && s.requests() == 0 && now >= s.quietSince+int64(quiet)
	if passivate {
		s.asked = true
	}
	expired := s.active == 0 && now >= s.idleSince+int64(s.h.cfg.SessionIdleTimeout)
	if !expired {
		s.schedule()
	}
	s.mu.Unlock()
	if passivate {
		s.conn.Passivate()
	}
	if expired {
		s.h.endSession(s)
	}
}

// acquire marks one more HTTP request on the session. It fails once the session has ended or
// its connection stopped.
func (s *legacySession) acquire() bool {
	if s.conn.Ended() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.active++
	s.asked = false
	return true
}

// release ends what acquire began; the last request out makes the session quiet, or idle.
func (s *legacySession) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	now := time.Now().UnixNano()
	if s.active == 0 {
		s.idleSince = now
	}
	if s.requests() == 0 {
		s.quietSince = now
	}
	s.schedule()
}

// finish marks the session ended and reports whether this call did it. It does not close the
// connection: the caller does.
func (s *legacySession) finish() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.done = true
	if s.filed != 0 {
		s.filed = 0
		s.h.clock.unfiled()
	}
	if s.ended == nil {
		s.ended = closedChan
	} else {
		close(s.ended)
	}
	if s.streams != nil {
		s.streams.end()
	}
	if s.notify != nil {
		s.notify.end() // a detached GET stream ends; one on its goroutine sees ended
	}
	return true
}

// closedChan is the ended channel of a session that ended before anyone asked for it.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// endedCh returns a channel closed when the session ends.
func (s *legacySession) endedCh() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = make(chan struct{})
	}
	return s.ended
}

// streamTable returns the session's table of resumable streams, made with its first stream;
// a session that has ended gets one that keeps nothing.
func (s *legacySession) streamTable() *streams {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams == nil {
		s.streams = newStreams()
		if s.done {
			s.streams.end()
		}
	}
	return s.streams
}

// isDone reports whether the session has ended.
func (s *legacySession) isDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// openGet claims the session's one standalone GET stream, whose request (acquired already)
// then no longer keeps the session from passivating.
func (s *legacySession) openGet() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.getOpen {
		return false
	}
	s.getOpen = true
	if s.requests() == 0 {
		s.quietSince = time.Now().UnixNano()
	}
	s.schedule()
	return true
}

// closeGet gives the standalone GET stream back; its request's release follows.
func (s *legacySession) closeGet() {
	s.mu.Lock()
	s.getOpen = false
	s.mu.Unlock()
}
