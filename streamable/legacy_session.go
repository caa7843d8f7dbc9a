package streamable

import (
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/actors"
	"github.com/toolgrain/toolgrain/protocol"
)

// Limits on the legacy sessions of a [Handler]. Without them a client could open sessions, each
// a connection actor and its bookkeeping, until memory ran out: they end only when deleted or
// after SessionIdleTimeout.
const (
	// DefaultMaxSessions is the limit on open legacy sessions when [Config].MaxSessions is
	// zero. An idle session holds about 4 KB, so the limit keeps them to some tens of MB.
	DefaultMaxSessions = 10000
	// DefaultMaxSessionsPerSubject is the limit on the legacy sessions of one authenticated
	// subject when [Config].MaxSessionsPerSubject is zero: a tenth of DefaultMaxSessions, so
	// that no one token can take every place.
	DefaultMaxSessionsPerSubject = 1000
)

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

// newPlaces applies the limits of a [Config]: zero means the default, negative none; the limit
// per subject applies only with authentication.
func newPlaces(max, perSubject int, auth bool) places {
	switch {
	case max == 0:
		max = DefaultMaxSessions
	case max < 0:
		max = 0
	}
	switch {
	case !auth || perSubject < 0:
		perSubject = 0
	case perSubject == 0:
		perSubject = DefaultMaxSessionsPerSubject
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
// 2025-11-25: a connection actor, the id the client names it by, and the bookkeeping of its idle
// expiry. A session ends once: on DELETE, on idle expiry, when its connection actor stopped, or
// at shutdown; its id then answers 404 for good.
type legacySession struct {
	id      string
	conn    *actors.Connection
	notify  *standaloneStream // the session's notification path, relayed by its GET stream
	streams *streams          // its POST SSE streams kept for resumption
	subject string            // the identity's subject when auth is on; later requests must match it
	idle    time.Duration

	ended chan struct{} // closed when the session ends

	mu        sync.Mutex
	active    int       // HTTP requests in progress on the session (POSTs, the GET stream)
	idleSince time.Time // when active last dropped to 0
	timer     *time.Timer
	done      bool
	getOpen   bool // the standalone GET stream is open
}

// newLegacySession returns the session id with one request in progress (the initialize POST
// that opens it). end is what idle expiry calls.
func newLegacySession(id string, conn *actors.Connection, subject string, idle time.Duration, end func(*legacySession)) *legacySession {
	s := &legacySession{
		id:      id,
		conn:    conn,
		subject: subject,
		idle:    idle,
		ended:   make(chan struct{}),
		active:  1,
		streams: newStreams(),
	}
	// The timer's function runs on its own short-lived goroutine, only when the timer fires:
	// a waiting session costs no goroutine. It stays stopped while requests are in progress.
	s.timer = time.AfterFunc(idle, func() {
		s.mu.Lock()
		// A firing that raced with new activity, or with a reset, finds the session busy or not
		// idle for long enough; the reset timer fires again later.
		expired := !s.done && s.active == 0 && !time.Now().Before(s.idleSince.Add(s.idle))
		s.mu.Unlock()
		if expired {
			end(s)
		}
	})
	s.timer.Stop()
	return s
}

// acquire marks one more HTTP request on the session. It fails once the session has ended or
// its connection actor stopped.
func (s *legacySession) acquire() bool {
	select {
	case <-s.conn.Done():
		return false
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.active++
	s.timer.Stop()
	return true
}

// release ends what acquire began; the last request out starts the idle timer.
func (s *legacySession) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active == 0 && !s.done {
		s.idleSince = time.Now()
		s.timer.Reset(s.idle)
	}
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
	s.timer.Stop()
	close(s.ended)
	s.streams.end()
	if s.notify != nil {
		s.notify.end() // a detached GET stream ends; one on its goroutine sees ended
	}
	return true
}

// isDone reports whether the session has ended.
func (s *legacySession) isDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// openGet claims the session's one standalone GET stream.
func (s *legacySession) openGet() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.getOpen {
		return false
	}
	s.getOpen = true
	return true
}

func (s *legacySession) closeGet() {
	s.mu.Lock()
	s.getOpen = false
	s.mu.Unlock()
}
