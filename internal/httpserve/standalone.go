package httpserve

import (
	"net/http"
	"sync"
	"time"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
)

// maxStandaloneQueue bounds the messages waiting for a standalone stream whose client reads
// slowly; further ones are dropped.
const maxStandaloneQueue = 1024

// standaloneStream is an HTTP session's notification path (the notify stream of
// [engine.Engine.ConnectNotify]): messages unrelated to any request — list_changed,
// resources/updated, the withdrawal of a request to the client — go to the session's
// standalone GET stream while one is open, and are dropped while none is (the transport keeps
// no events for replay). The actors queue frames without blocking; the GET handler relays them.
type standaloneStream struct {
	mu     sync.Mutex
	wake   chan struct{} // size 1, as postStream's; made when a relayed GET stream attaches
	frames [][]byte
	open   bool
	sink   sink // the detached GET stream, while there is one: frames go to it
	// strict: every frame matters (the stream of the HTTP+SSE transport, which carries the
	// answers): past maxStandaloneQueue the stream is cut (over) instead of dropping frames.
	strict bool
	over   bool
}

var _ engine.Stream = (*standaloneStream)(nil)

func newStandaloneStream() *standaloneStream { return &standaloneStream{} }

// Send queues frame for the open GET stream, or drops it.
func (n *standaloneStream) Send(frame []byte) {
	n.mu.Lock()
	if n.sink != nil {
		n.sink.send(frame)
		n.mu.Unlock()
		return
	}
	if !n.open || n.over {
		n.mu.Unlock()
		return
	}
	if len(n.frames) >= maxStandaloneQueue {
		if n.strict {
			n.over, n.frames = true, nil
			n.signal()
		}
		n.mu.Unlock()
		return
	}
	n.frames = append(n.frames, frame)
	n.signal()
	n.mu.Unlock()
}

// signal wakes the relaying GET handler; n.mu is held.
func (n *standaloneStream) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Close does nothing: the path lives as long as the session.
func (*standaloneStream) Close() {}

func (n *standaloneStream) attach() {
	n.mu.Lock()
	n.open = true
	n.mu.Unlock()
}

// waiter returns the channel the relaying GET handler is woken on.
func (n *standaloneStream) waiter() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wake == nil {
		n.wake = make(chan struct{}, 1)
	}
	return n.wake
}

func (n *standaloneStream) detach() {
	n.mu.Lock()
	n.open, n.frames, n.sink = false, nil, nil
	n.mu.Unlock()
}

// setSink hands the open GET stream to a detached stream: what is queued goes to it first, in
// order, then every later frame.
func (n *standaloneStream) setSink(sk sink) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, f := range n.frames {
		sk.send(f)
	}
	n.frames, n.sink = nil, sk
}

// end ends the detached GET stream, if there is one: the session ended.
func (n *standaloneStream) end() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sink != nil {
		n.sink.end()
	}
}

// take returns the frames queued for the relaying handler; over reports a strict stream cut
// for its backlog.
func (n *standaloneStream) take() (frames [][]byte, over bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	frames = n.frames
	n.frames = nil
	return frames, n.over
}

// relayStandalone writes the session's notifications as SSE events on the GET response until the
// client leaves, the session ends or its connection actor stopped, with an SSE comment after
// every keepAlive without an event (0: none). It runs on the GET's handler goroutine, after the
// stream was attached.
func relayStandalone(w http.ResponseWriter, r *http.Request, s *legacySession, keepAlive time.Duration) {
	rc := http.NewResponseController(w)
	wake, ended, connDone := s.notify.waiter(), s.endedCh(), s.conn.Done()
	var tick <-chan time.Time
	if keepAlive > 0 {
		t := time.NewTicker(keepAlive)
		defer t.Stop()
		tick = t.C
	}
	var event []byte
	for {
		frames, over := s.notify.take()
		if over {
			return // a strict stream whose client fell too far behind
		}
		for _, f := range frames {
			event = protocol.AppendSSE(event[:0], f)
			if _, err := w.Write(event); err != nil {
				return
			}
		}
		if len(frames) > 0 {
			if err := rc.Flush(); err != nil {
				return
			}
		}
		select {
		case <-wake:
		case <-tick:
			if _, err := w.Write(keepAliveComment); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-ended:
			return
		case <-connDone:
			return
		}
	}
}
