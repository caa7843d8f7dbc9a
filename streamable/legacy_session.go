package streamable

import (
	"sync"
	"time"

	"github.com/toolgrain/toolgrain/actors"
	"github.com/toolgrain/toolgrain/protocol"
)

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

// newLegacySession returns a session with one request in progress (the initialize POST that
// opens it). end is what idle expiry calls.
func newLegacySession(conn *actors.Connection, subject string, idle time.Duration, end func(*legacySession)) *legacySession {
	s := &legacySession{
		id:      protocol.NewSessionID(),
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
	return true
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
