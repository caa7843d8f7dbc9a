package httpserve

import (
	"crypto/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
)

// Resumable POST streams (MCP 2025-11-25, SEP-1699). A POST answered as an SSE stream starts with
// a priming event (an id, a retry field and empty data) and numbers every event. Its events are
// kept, up to maxStreamEvents, until the stream's end has been delivered to a client or the
// session ends, so that a client whose connection closed (on its side, or because the handler
// called client.CloseStream) resumes with GET and Last-Event-ID: it gets the events after that
// id, from that stream only, then the rest of the stream live.
//
// What a session keeps is bounded without ever losing an answer that a reader can still
// deliver: a stream that a reader (its POST, or a resuming GET) holds is never dropped; nor is
// one whose call still runs (those are bounded by the calls in flight). Only a complete stream
// that no reader holds, whose client may or may not come back for its end, can be dropped: a
// session keeps maxKeptStreams of them, and past that drops the one that has waited longest.
//
// An event id is "<tag>-<stream>-<seq>": the session's random tag, the stream's number in the
// session (from 1) and the event's number in the stream (0 for the priming event). Ids are
// therefore unique across the session's streams and name their stream.

const (
	// maxStreamEvents bounds the events one stream keeps for resumption; older ones are
	// dropped, and resuming from before them gets 410 Gone.
	maxStreamEvents = 1024
	// maxKeptStreams bounds the complete streams that no reader holds, kept in case their
	// client resumes them: past it, a session drops the one that has waited longest.
	maxKeptStreams = 64
)

// postStream is the [engine.Stream] of one POSTed request: the actors queue frames on it without
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
	owner      *streams      // the table that keeps it, once it is an SSE stream
	sink       sink          // the detached stream that writes it, once handed over (modern only)

	// Guarded by owner.mu: the stream's place in owner's list of idle streams.
	idle               bool
	idlePrev, idleNext *postStream
}

var (
	_ engine.Stream       = (*postStream)(nil)
	_ engine.Streamer     = (*postStream)(nil)
	_ engine.Disconnecter = (*postStream)(nil)
)

func newPostStream() *postStream { return &postStream{first: 1} }

// Streaming reports whether the stream carries messages before the response
// ([engine.Streamer]): not for a client that takes JSON only.
func (p *postStream) Streaming() bool { return !p.jsonOnly }

// Send queues one frame; it never blocks.
func (p *postStream) Send(frame []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.gone {
		return
	}
	if p.sink != nil {
		p.sink.send(frame)
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

// Close says the message's answers are complete. A kept stream that no reader holds becomes
// idle.
func (p *postStream) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.signal()
	if p.sink != nil {
		p.sink.end()
	}
	owner := p.owner
	idle := p.reader == 0
	p.mu.Unlock()
	if owner != nil && idle {
		owner.settle(p)
	}
}

// Disconnect asks the attached reader to end its response after what was sent so far
// ([engine.Disconnecter]).
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
// and it finds itself superseded. A stream with a reader is never dropped for the bound on kept
// streams.
func (p *postStream) attach() (uint64, <-chan struct{}) {
	p.mu.Lock()
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
	gen, wake, owner := p.reader, p.wake, p.owner
	p.mu.Unlock()
	if owner != nil {
		owner.settle(p) // no longer idle
	}
	return gen, wake
}

// detach ends reader gen's turn, unless a newer reader took over. A complete kept stream left
// with no reader becomes idle.
func (p *postStream) detach(gen uint64) {
	p.mu.Lock()
	mine := p.reader == gen
	if mine {
		p.reader, p.wake, p.disconnect = 0, nil, false
	}
	owner, closed := p.owner, p.closed
	p.mu.Unlock()
	if mine && closed && owner != nil {
		owner.settle(p)
	}
}

// handOver makes the detached stream sk the writer of the rest of the stream, in place of reader
// gen, whose cursor is the last frame it wrote: the frames after it go to sk at once, in order,
// then every later one, and the stream's end ends sk. It reports false when gen is no longer
// the reader.
func (p *postStream) handOver(gen, cursor uint64, sk sink) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reader != gen || p.gone {
		return false
	}
	if i := cursor + 1 - p.first; i < uint64(len(p.frames)) {
		for _, f := range p.frames[i:] {
			sk.send(f)
		}
	}
	p.frames, p.sink = nil, sk
	if p.closed {
		sk.end()
	}
	return true
}

// drop marks the stream read for good: its frames are released and later ones dropped.
func (p *postStream) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone, p.frames = true, nil
}

// dropUnread drops the stream unless a reader holds it, which then delivers what it finds.
func (p *postStream) dropUnread() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reader == 0 {
		p.gone, p.frames = true, nil
	}
}

// isIdle reports whether the stream is complete, not dropped, and held by no reader: whether
// the bound on kept streams may drop it.
func (p *postStream) isIdle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed && p.reader == 0 && !p.gone
}

// evict drops the stream if it is still idle, and reports whether it did. The check and the
// drop are one step, so a reader that attached in between keeps its stream.
func (p *postStream) evict() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed || p.reader != 0 || p.gone {
		return false
	}
	p.gone, p.frames = true, nil
	return true
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
//
// Lock order: streams.mu before postStream.mu. A stream's own methods release its lock before
// they call settle.
type streams struct {
	tag string // random, so that another session's event ids are unknown here

	mu    sync.Mutex
	count uint64 // streams numbered so far
	kept  map[uint64]*postStream
	ended bool

	// The idle streams (complete, kept, held by no reader), oldest first: the only ones the
	// bound may drop, found at the head in O(1).
	idleHead, idleTail *postStream
	idleLen            int
}

func newStreams() *streams {
	return &streams{tag: rand.Text()[:8], kept: make(map[uint64]*postStream)}
}

// register numbers st and keeps it for resumption.
func (ss *streams) register(st *postStream) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.count++
	st.mu.Lock()
	st.num, st.tag = ss.count, ss.tag
	if !ss.ended {
		st.owner = ss
	}
	st.mu.Unlock()
	if ss.ended {
		return
	}
	ss.kept[ss.count] = st
	ss.file(st)
}

// settle files st as idle or not after a change of its state (closed, a reader attached or
// detached), and applies the bound.
func (ss *streams) settle(st *postStream) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.file(st)
}

// file puts st in or out of the idle list, as its state says, then drops the idle streams that
// have waited longest while there are more than maxKeptStreams; ss.mu is held. A stream whose
// state changes again is filed again by its own call of settle: the last call sees the last
// state. Each step is O(1); each drop takes out an entry that an earlier call put in.
func (ss *streams) file(st *postStream) {
	if ss.kept[st.num] != st {
		return // forgotten, or the session ended
	}
	switch idle := st.isIdle(); {
	case idle && !st.idle:
		ss.pushIdle(st)
	case !idle && st.idle:
		ss.unlinkIdle(st)
	}
	for ss.idleLen > maxKeptStreams {
		oldest := ss.idleHead
		ss.unlinkIdle(oldest)
		// A reader may have attached since oldest was filed (its settle is waiting for ss.mu):
		// then it is not dropped, and that settle finds it busy.
		if oldest.evict() {
			delete(ss.kept, oldest.num)
		}
	}
}

func (ss *streams) pushIdle(st *postStream) {
	st.idle, st.idlePrev, st.idleNext = true, ss.idleTail, nil
	if ss.idleTail != nil {
		ss.idleTail.idleNext = st
	} else {
		ss.idleHead = st
	}
	ss.idleTail = st
	ss.idleLen++
}

func (ss *streams) unlinkIdle(st *postStream) {
	if st.idlePrev != nil {
		st.idlePrev.idleNext = st.idleNext
	} else {
		ss.idleHead = st.idleNext
	}
	if st.idleNext != nil {
		st.idleNext.idlePrev = st.idlePrev
	} else {
		ss.idleTail = st.idlePrev
	}
	st.idle, st.idlePrev, st.idleNext = false, nil, nil
	ss.idleLen--
}

// forget drops st once its end has been delivered.
func (ss *streams) forget(st *postStream) {
	ss.mu.Lock()
	if ss.kept[st.num] == st {
		delete(ss.kept, st.num)
		if st.idle {
			ss.unlinkIdle(st)
		}
	}
	ss.mu.Unlock()
	st.drop()
}

// end forgets every stream: the session is over, and none can be resumed. A stream that a
// reader holds is left to it, so that an answer already queued still reaches its POST; the
// others are dropped.
func (ss *streams) end() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.ended = true
	for n, st := range ss.kept {
		if st.idle {
			ss.unlinkIdle(st)
		}
		st.dropUnread()
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
	// Done is asked for only when the relay has to wait: an answer at hand (an initialize
	// answered from a passive session's record) needs no channel made for it.
	var connDone <-chan struct{}
	connGone := false
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
			s.streamTable().register(st)
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
		if connDone == nil {
			connDone = s.conn.Done()
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-connDone:
			// Nothing more can be queued once the connection actor stopped; take what was.
			connDone, connGone = closedChan, true
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
					s.streamTable().forget(st)
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
			s.streamTable().forget(st) // ended with no response: the call was cancelled
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
	st, cursor, status, msg := s.streamTable().lookup(lastID)
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
	// The stream may have been dropped between the lookup and the attach; attached, it no
	// longer can be.
	if status, msg := st.resumable(cursor); status != 0 {
		writeError(w, status, protocol.ErrTransport(http.StatusText(status), msg))
		return
	}
	startSSE(w)
	if err := http.NewResponseController(w).Flush(); err != nil {
		return
	}
	h.pump(w, r, st, s, gen, wake, cursor)
}

func (h *Handler) retryMillis() int64 {
	return h.cfg.StreamRetry.Milliseconds()
}
