package streamable

import (
	"crypto/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgrain/toolgrain/actors"
	"github.com/toolgrain/toolgrain/protocol"
)

// Resumable POST streams (MCP 2025-11-25, SEP-1699). A POST answered as an SSE stream starts with
// a priming event (an id, a retry field and empty data) and numbers every event. Its events are
// kept, up to maxStreamEvents, until the stream's end has been delivered to a client or the
// session ends, so that a client whose connection closed (on its side, or because the handler
// called client.CloseStream) resumes with GET and Last-Event-ID: it gets the events after that
// id, from that stream only, then the rest of the stream live.
//
// An event id is "<tag>-<stream>-<seq>": the session's random tag, the stream's number in the
// session (from 1) and the event's number in the stream (0 for the priming event). Ids are
// therefore unique across the session's streams and name their stream.

const (
	// DefaultStreamRetry is the reconnection delay sent in the retry field of a POST SSE
	// stream's priming event when [Config].StreamRetry is zero.
	DefaultStreamRetry = time.Second
	// maxStreamEvents bounds the events one stream keeps for resumption; older ones are
	// dropped, and resuming from before them gets 410 Gone.
	maxStreamEvents = 1024
	// maxKeptStreams bounds the streams one session keeps: past it, registering a stream drops
	// the oldest that is complete but whose end no client received.
	maxKeptStreams = 64
)

// postStream is the [actors.Stream] of one POSTed request: the actors queue frames on it without
// blocking, and one reader at a time (the POST's handler goroutine, then the GETs that resume
// it) writes them out. It keeps its frames for resumption once it is an SSE stream.
type postStream struct {
	// jsonOnly: the client takes no event stream, so only the response goes out.
	jsonOnly bool
	// ephemeral: a modern request's stream, which is never resumed.
	ephemeral bool

	mu         sync.Mutex
	frames     [][]byte // frames[i] is event first+i
	first      uint64
	closed     bool
	gone       bool          // nobody will read it again: frames are dropped
	disconnect bool          // the handler asked to close the current reader's connection
	reader     uint64        // generation of the attached reader (0: none)
	gens       uint64        // readers ever attached
	wake       chan struct{} // the attached reader's; size 1
	num        uint64        // the stream's number in its session, 0 until it is an SSE stream
	tag        string        // the session's event-id tag
}

var (
	_ actors.Stream       = (*postStream)(nil)
	_ actors.Streamer     = (*postStream)(nil)
	_ actors.Disconnecter = (*postStream)(nil)
)

func newPostStream() *postStream { return &postStream{first: 1} }

// Streaming reports whether the stream carries messages before the response
// ([actors.Streamer]): not for a client that takes JSON only.
func (p *postStream) Streaming() bool { return !p.jsonOnly }

// Send queues one frame; it never blocks.
func (p *postStream) Send(frame []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.gone {
		return
	}
	p.frames = append(p.frames, frame)
	if len(p.frames) > maxStreamEvents {
		p.frames[0] = nil
		p.frames = p.frames[1:]
		p.first++
	}
	p.signal()
}

// Close says the message's answers are complete.
func (p *postStream) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.signal()
	}
}

// Disconnect asks the attached reader to end its response after what was sent so far
// ([actors.Disconnecter]).
func (p *postStream) Disconnect() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.jsonOnly || p.ephemeral || p.closed || p.gone {
		return false
	}
	p.disconnect = true
	p.signal()
	return true
}

// signal wakes the attached reader; p.mu is held. A wake-up that finds one pending is redundant.
func (p *postStream) signal() {
	if p.wake == nil {
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// attach makes a new reader the stream's only one: a previous reader's wake channel is closed,
// and it finds itself superseded.
func (p *postStream) attach() (uint64, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wake != nil {
		close(p.wake)
	}
	// A disconnect asked before the first reader attached (a handler can get there before the
	// POST's own goroutine does) is meant for that reader; a later reader starts afresh.
	if p.gens > 0 {
		p.disconnect = false
	}
	p.gens++
	p.reader = p.gens
	p.wake = make(chan struct{}, 1)
	return p.reader, p.wake
}

// detach ends reader gen's turn, unless a newer reader took over.
func (p *postStream) detach(gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reader == gen {
		p.reader, p.wake, p.disconnect = 0, nil, false
	}
}

// drop marks the stream read for good: its frames are released and later ones dropped.
func (p *postStream) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone, p.frames = true, nil
}

// readState is what a reader finds after its cursor.
type readState struct {
	frames     [][]byte // the events after the cursor, in order
	closed     bool     // nothing comes after frames
	disconnect bool     // the handler asked to close the connection
	superseded bool     // a newer reader took over
	lost       bool     // events after the cursor were dropped, or the stream was
}

// read returns the events after cursor (the number of the last event the reader wrote) for
// reader gen. It does not consume the disconnect request; takeDisconnect does.
func (p *postStream) read(gen, cursor uint64) readState {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reader != gen {
		return readState{superseded: true}
	}
	if p.gone || cursor+1 < p.first {
		return readState{lost: true}
	}
	st := readState{closed: p.closed, disconnect: p.disconnect}
	if i := cursor + 1 - p.first; i < uint64(len(p.frames)) {
		st.frames = p.frames[i:len(p.frames):len(p.frames)]
	}
	return st
}

func (p *postStream) takeDisconnect(gen uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.reader == gen && p.disconnect
	if d {
		p.disconnect = false
	}
	return d
}

// resumable checks that a reader may resume after event cursor: 400 for an event the stream
// never sent, 410 for one whose successors were dropped.
func (p *postStream) resumable(cursor uint64) (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.gone:
		return http.StatusGone, "the stream of that event id is complete"
	case cursor >= p.first+uint64(len(p.frames)):
		return http.StatusBadRequest, "unknown event id"
	case cursor+1 < p.first:
		return http.StatusGone, "the events after that event id are no longer kept"
	}
	return 0, ""
}

func (p *postStream) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// eventID returns the id of event seq of the stream.
func (p *postStream) eventID(seq uint64) string {
	return p.tag + "-" + strconv.FormatUint(p.num, 10) + "-" + strconv.FormatUint(seq, 10)
}

// streams is a session's table of resumable streams.
type streams struct {
	tag string // random, so that another session's event ids are unknown here

	mu    sync.Mutex
	count uint64 // streams numbered so far
	kept  map[uint64]*postStream
	ended bool
}

func newStreams() *streams {
	return &streams{tag: rand.Text()[:8], kept: make(map[uint64]*postStream)}
}

// register numbers st and keeps it for resumption; past maxKeptStreams it drops the oldest
// complete stream first.
func (ss *streams) register(st *postStream) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.count++
	st.mu.Lock()
	st.num, st.tag = ss.count, ss.tag
	st.mu.Unlock()
	if ss.ended {
		return
	}
	if len(ss.kept) >= maxKeptStreams {
		var oldest uint64
		for n, k := range ss.kept {
			if (oldest == 0 || n < oldest) && k.isClosed() {
				oldest = n
			}
		}
		if oldest != 0 {
			ss.kept[oldest].drop()
			delete(ss.kept, oldest)
		}
	}
	ss.kept[ss.count] = st
}

// forget drops st once its end has been delivered.
func (ss *streams) forget(st *postStream) {
	ss.mu.Lock()
	if ss.kept[st.num] == st {
		delete(ss.kept, st.num)
	}
	ss.mu.Unlock()
	st.drop()
}

// end drops every stream: the session is over.
func (ss *streams) end() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.ended = true
	for n, st := range ss.kept {
		st.drop()
		delete(ss.kept, n)
	}
}

// lookup finds the stream and event an event id names: 400 for an id this session never issued
// (malformed, another session's, a stream number not yet used), 410 for a stream no longer kept.
func (ss *streams) lookup(id string) (*postStream, uint64, int, string) {
	const unknown = "unknown event id"
	tag, rest, ok := strings.Cut(id, "-")
	if !ok || tag != ss.tag {
		return nil, 0, http.StatusBadRequest, unknown
	}
	n, seq, ok := strings.Cut(rest, "-")
	num, err1 := strconv.ParseUint(n, 10, 64)
	cursor, err2 := strconv.ParseUint(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil || num == 0 {
		return nil, 0, http.StatusBadRequest, unknown
	}
	ss.mu.Lock()
	st, count := ss.kept[num], ss.count
	ss.mu.Unlock()
	switch {
	case num > count:
		return nil, 0, http.StatusBadRequest, unknown
	case st == nil:
		return nil, 0, http.StatusGone, "the stream of that event id is complete or no longer kept"
	}
	if status, msg := st.resumable(cursor); status != 0 {
		return nil, 0, status, msg
	}
	return st, cursor, 0, ""
}

// relay writes the answers that the actors queue on st as the response to r: one JSON body when
// the first frame is the final response, otherwise a resumable SSE stream (see pump) that ends
// after the response (lazy upgrade; a client that accepts only SSE always gets SSE). A stream
// closed with no response (a cancelled call) ends as an empty SSE stream, or as 204 No Content
// for a client that does not accept SSE. before, if set, runs just before the status is
// written, with the first frame's kind (FrameInvalid when there is none).
//
// relay runs on the handler goroutine and blocks until the response is complete, the client
// goes away (which does not cancel the call: an SSE stream goes on being kept for resumption, a
// stream not yet answered drops its later frames), the handler asked to close the connection,
// or the connection actor stopped.
func (h *Handler) relay(w http.ResponseWriter, r *http.Request, st *postStream, s *legacySession, before func(protocol.FrameKind)) {
	gen, wake := st.attach()
	sse := false
	defer func() {
		if sse {
			st.detach(gen)
		} else {
			st.drop()
		}
	}()
	accept := r.Header.Values("Accept")
	jsonOK, sseOK := protocol.Accepts(accept, protocol.MediaTypeJSON), protocol.Accepts(accept, protocol.MediaTypeEventStream)
	rc := http.NewResponseController(w)
	connDone, connGone := s.conn.Done(), false
	var cursor uint64 // frames skipped for a client that takes JSON only
	begin := func(kind protocol.FrameKind) {
		if before != nil {
			before(kind)
		}
	}
	for {
		rd := st.read(gen, cursor)
		if rd.superseded {
			return
		}
		if len(rd.frames) > 0 || (rd.disconnect && sseOK) {
			var kind protocol.FrameKind
			if len(rd.frames) > 0 {
				kind = protocol.KindOf(rd.frames[0])
			}
			switch {
			case kind.IsResponse() && jsonOK:
				begin(kind)
				writeFrame(w, http.StatusOK, rd.frames[0])
				return
			case !sseOK:
				cursor++ // a client that takes JSON only gets the response alone
				continue
			}
			// The answer becomes a resumable SSE stream, starting with its priming event.
			begin(kind)
			s.streams.register(st)
			startSSE(w)
			sse = true
			if _, err := w.Write(protocol.AppendSSEPriming(nil, st.eventID(0), h.retryMillis())); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			h.pump(w, r, st, s, gen, wake, cursor)
			return
		}
		if rd.closed || connGone {
			if sseOK {
				begin(protocol.FrameInvalid)
				startSSE(w)
				_ = rc.Flush()
			} else {
				// No response, and the client takes no event stream: there is nothing to say.
				begin(protocol.FrameInvalid)
				w.WriteHeader(http.StatusNoContent)
			}
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-connDone:
			// Nothing more can be queued once the connection actor stopped; take what was.
			connDone, connGone = nil, true
		}
	}
}

// pump writes the events of st after cursor as SSE events on a response whose SSE stream has
// begun, until the stream's end (forgotten then: its end was delivered), the handler's request
// to close the connection, the client's leaving, a newer reader or the connection actor's stop.
func (h *Handler) pump(w http.ResponseWriter, r *http.Request, st *postStream, s *legacySession, gen uint64, wake <-chan struct{}, cursor uint64) {
	rc := http.NewResponseController(w)
	connDone, connGone := s.conn.Done(), false
	var event []byte
	for {
		rd := st.read(gen, cursor)
		if rd.superseded || rd.lost {
			return
		}
		for _, f := range rd.frames {
			cursor++
			event = protocol.AppendSSEWithID(event[:0], st.eventID(cursor), f)
			if _, err := w.Write(event); err != nil {
				return
			}
			if protocol.KindOf(f).IsResponse() {
				if rc.Flush() == nil {
					s.streams.forget(st)
				}
				return
			}
		}
		if len(rd.frames) > 0 {
			if err := rc.Flush(); err != nil {
				return
			}
		}
		switch {
		case rd.closed:
			s.streams.forget(st) // ended with no response: the call was cancelled
			return
		case connGone, st.takeDisconnect(gen):
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-connDone:
			connDone, connGone = nil, true
		}
	}
}

// resume serves a GET with Last-Event-ID: the named stream's events after that id, then the
// rest of the stream live.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, s *legacySession, lastID string) {
	st, cursor, status, msg := s.streams.lookup(lastID)
	if st == nil {
		text := "Bad Request"
		if status == http.StatusGone {
			text = "Gone"
		}
		writeError(w, status, protocol.ErrTransport(text, msg))
		return
	}
	gen, wake := st.attach()
	defer st.detach(gen)
	startSSE(w)
	if err := http.NewResponseController(w).Flush(); err != nil {
		return
	}
	h.pump(w, r, st, s, gen, wake, cursor)
}

func (h *Handler) retryMillis() int64 {
	return h.cfg.StreamRetry.Milliseconds()
}
