package httpserve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
)

// Detached streams. An SSE stream that has sent its head and then only waits for the next
// message (a legacy session's standalone GET stream, a modern subscriptions/listen request)
// would keep, as net/http serves it, a goroutine with its stack, a buffered reader and writer
// and the request's state, for as long as the client stays: tens of KiB per client. Over
// HTTP/1.x the handler takes the connection from net/http instead (Hijack) once the head is
// out, and keeps it in a compact record, a wireStream; a small fixed set of goroutines, owned
// by the Handler's hub, writes what is queued for any stream:
//
//   - Writes never block. A stream's bytes are written with non-blocking system calls; what the
//     socket does not take waits in the record, and the socket's readiness (epoll) brings it
//     back. A client that reads too slowly is cut off once more than maxBacklog bytes wait, or
//     once they have waited the dead-client bound: it never holds up a change on its way to the
//     others.
//   - Dead clients are found without reading. A client that closes or resets its connection is
//     seen at once (EPOLLRDHUP, EPOLLHUP, EPOLLERR); one that vanishes without closing (its host
//     gone, or a client that stops reading for good) leaves the stream's data unacknowledged,
//     and the kernel gives up on the connection after the dead-client bound (TCP_USER_TIMEOUT):
//     a stream with nothing to say gets an SSE comment every Config.KeepAlive, so that this
//     holds for idle streams too.
//   - The kernel's send buffer of a detached socket is fixed (sendBuffer), so that neither the
//     kernel nor the record keeps more than a bounded amount for a slow client.
//
// HTTP/2 streams, where the connection cannot be taken, TLS connections, and handlers whose
// ResponseWriter cannot hijack (a forwarded request in a cluster) keep the ordinary path: a
// goroutine relays the stream. Platforms without epoll (detach_other.go) always do.

// sink is where a detached stream's messages go: the wireStream that writes them.
type sink interface {
	// send queues one JSON-RPC message as an SSE event. It never blocks.
	send(frame []byte)
	// end says the stream is complete: what is queued is written, the response ends, and the
	// connection closes. It never blocks.
	end()
}

const (
	// maxBacklog bounds the bytes a detached stream keeps for a client whose socket is full
	// (it does not read them): past it, the client is cut off.
	maxBacklog = 64 << 10
	// maxBurst bounds the bytes a detached stream keeps in any case: a burst of changes queued
	// faster than a writer runs may pass maxBacklog while the socket still takes everything.
	maxBurst = 1 << 20
	// stallGrace is how long a full socket may go without taking anything before a backlog
	// past maxBacklog cuts its client off: a client that reads drains its socket within
	// milliseconds, even behind a burst.
	stallGrace = 500 * time.Millisecond
	// sendBuffer is the kernel send buffer (SO_SNDBUF) of a detached socket, instead of the
	// kernel's autotuning, which would let a slow reader's data grow to megabytes.
	sendBuffer = 32 << 10
)

// endReason says why a detached stream ended.
type endReason int

const (
	endDone     endReason = iota // its owner ended it: the response is complete
	endGone                      // the client closed or reset the connection, or is dead
	endCut                       // the client read too slowly
	endShutdown                  // the handler shut down before the stream could end
)

// hubStats are the hub's counters.
type hubStats struct {
	detached atomic.Int64 // streams taken from net/http so far
	open     atomic.Int64 // streams open now
	gone     atomic.Int64 // ended because the client went away or was found dead
	cut      atomic.Int64 // cut off because the client read too slowly
}

// hub owns the detached streams of a Handler and the one goroutine that serves them all (loop):
// it writes what is ready, without ever blocking, waits for the sockets' events (the platform's
// poller) and, every tick, sends the keep-alive comments and cuts off stalled clients. The
// goroutine runs while streams are open: the first stream starts it, and it ends once the last
// one is over, or at shutdown.
type hub struct {
	log       *zap.Logger
	keepAlive time.Duration // between comments on an idle stream; 0: none
	deadAfter time.Duration // unacknowledged data, or a backlog not written, for this long: dead
	tick      time.Duration
	poller    *poller // the platform's readiness notifications

	mu      sync.Mutex
	streams map[uint64]*wireStream
	nextID  uint64
	ready   []*wireStream // streams with something to write (or to close), in order
	spare   []*wireStream // the loop's previous batch, for reuse
	running bool          // the loop runs
	stopped bool          // shut down: no new stream, and the loop ends
	wg      sync.WaitGroup

	stats hubStats
}

// newHub starts a hub, or returns nil where streams cannot be detached (no epoll).
func newHub(log *zap.Logger, keepAlive time.Duration) *hub {
	deadAfter := keepAlive
	if deadAfter <= 0 {
		deadAfter = streamable.DefaultKeepAlive
	}
	h := &hub{log: log, keepAlive: keepAlive, deadAfter: deadAfter, streams: make(map[uint64]*wireStream)}
	h.tick = min(max(deadAfter/4, 10*time.Millisecond), time.Second)
	p, err := newPoller(h)
	if err != nil {
		log.Warn("streams stay on their goroutines: no readiness notifications", zap.Error(err))
		return nil
	}
	h.poller = p
	return h
}

// detach takes the connection of the response w from net/http, once its head and everything
// written so far are out (the caller has flushed), and returns the stream that carries the
// rest of the response; ok false means the response stays with net/http (HTTP/2, TLS, a
// ResponseWriter that cannot hijack), which goes on serving it. Once ended reports true (its
// connection is over), the stream ends as end does; onEnd is called once, on a hub goroutine,
// when the stream is over.
func (h *hub) detach(w http.ResponseWriter, r *http.Request, ended func() bool, onEnd func(endReason)) (*wireStream, bool) {
	if h == nil || r.ProtoMajor != 1 || r.TLS != nil {
		return nil, false
	}
	h.mu.Lock()
	stopped := h.stopped
	h.mu.Unlock()
	if stopped {
		return nil, false
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, false
	}
	ws := &wireStream{h: h, conn: conn, chunked: r.ProtoAtLeast(1, 1), ended: ended, onEnd: onEnd, lastWrite: time.Now()}
	// What the client sent after its request (nothing, for an SSE request) is not read.
	if brw.Reader.Buffered() > 0 {
		_, _ = brw.Reader.Discard(brw.Reader.Buffered())
	}
	watched := h.poller.prepare(ws) // ws.raw, before ws is seen by anyone
	h.mu.Lock()
	h.nextID++
	ws.id = h.nextID
	h.streams[ws.id] = ws
	h.start()
	h.mu.Unlock()
	h.stats.detached.Add(1)
	h.stats.open.Add(1)
	if !watched || h.poller.add(ws) != nil {
		// A connection whose socket cannot be watched (not a socket of this process's
		// network stack: a wrapped listener's conn) is served by goroutines of its own.
		ws.serveOwn()
	}
	return ws, true
}

// start starts the loop unless it runs; h.mu is held.
func (h *hub) start() {
	if h.running || h.stopped {
		return
	}
	h.running = true
	h.wg.Add(1)
	// Owned by the hub: it ends once no stream is open and nothing is left to write, or at
	// shutdown; shutdown waits for it.
	go h.loop()
}

// chunkEnd ends a chunked response.
var chunkEnd = []byte("0\r\n\r\n")

// keepAliveEvent is keepAliveComment as one chunk.
var keepAliveChunk = appendChunk(nil, keepAliveComment)

// appendChunk appends b to dst as one chunk of a chunked response.
func appendChunk(dst, b []byte) []byte {
	dst = strconv.AppendInt(dst, int64(len(b)), 16)
	dst = append(dst, "\r\n"...)
	dst = append(dst, b...)
	return append(dst, "\r\n"...)
}

// wireStream is one detached stream: its connection and what waits to be written on it.
type wireStream struct {
	h       *hub
	id      uint64
	conn    net.Conn
	chunked bool        // HTTP/1.1: every write is a chunk, and the end is the last chunk
	ended   func() bool // true: end the stream (its connection is over)
	onEnd   func(endReason)
	own     chan struct{}   // serveOwn's wake-up; nil for a stream served by the hub's goroutines
	raw     syscall.RawConn // the socket, for the poller; nil for a stream served by its own goroutines

	mu        sync.Mutex
	out       []byte // written to the connection in order; its prefix is consumed by writes
	queued    bool   // in the hub's ready queue, or being written
	waiting   bool   // a write found the socket full: it waits for writability
	writable  bool   // the socket became writable since the writer last looked
	ending    bool   // close once out is written
	cut       bool   // close now, whatever is queued
	closed    bool
	stalled   time.Time // since when out has waited for a full socket; zero: it has not
	lastWrite time.Time
}

var _ sink = (*wireStream)(nil)

func (ws *wireStream) send(frame []byte) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed || ws.ending || ws.cut {
		return
	}
	start := len(ws.out)
	ws.out = protocol.AppendSSE(ws.out, frame)
	if ws.chunked {
		event := slices.Clone(ws.out[start:])
		ws.out = appendChunk(ws.out[:start], event)
	}
	if ws.tooFar(time.Now()) {
		ws.cut = true
	}
	ws.schedule()
}

// tooFar reports whether the client is too far behind to be kept: its backlog passed maxBurst,
// or passed maxBacklog while its socket has taken nothing for stallGrace. ws.mu is held.
func (ws *wireStream) tooFar(now time.Time) bool {
	return len(ws.out) > maxBurst ||
		(len(ws.out) > maxBacklog && !ws.stalled.IsZero() && now.Sub(ws.stalled) >= stallGrace)
}

func (ws *wireStream) end() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed || ws.ending || ws.cut {
		return
	}
	ws.ending = true
	if ws.chunked {
		ws.out = append(ws.out, chunkEnd...)
	}
	ws.schedule()
}

// schedule hands the stream to a writer unless one has it or it waits for its socket; ws.mu
// is held.
func (ws *wireStream) schedule() {
	if ws.queued || (ws.waiting && !ws.cut) {
		return
	}
	ws.queued = true
	if ws.own != nil {
		select {
		case ws.own <- struct{}{}:
		default:
		}
		return
	}
	ws.h.enqueue(ws)
}

// enqueue hands ws to the loop, waking it when the queue was empty.
func (h *hub) enqueue(ws *wireStream) {
	h.mu.Lock()
	wake := len(h.ready) == 0
	h.ready = append(h.ready, ws)
	h.mu.Unlock()
	if wake {
		h.poller.wake()
	}
}

// flush writes what the stream has queued, as far as its socket takes it without blocking, and
// closes the stream when it is complete or cut off.
func (ws *wireStream) flush() {
	ws.mu.Lock()
	if ws.closed {
		ws.queued = false
		ws.mu.Unlock()
		return
	}
	if ws.cut {
		ws.mu.Unlock()
		ws.close(endCut)
		return
	}
	buf := ws.out
	ws.writable = false
	ws.mu.Unlock()

	n, err := ws.h.poller.write(ws, buf)

	now := time.Now()
	ws.mu.Lock()
	if ws.closed { // closed meanwhile (the client went away): out is gone
		ws.queued = false
		ws.mu.Unlock()
		return
	}
	ws.out = ws.out[n:]
	if len(ws.out) == 0 {
		ws.out = nil
	}
	if n > 0 {
		ws.lastWrite, ws.stalled = now, time.Time{}
	}
	switch {
	case err != nil:
		ws.mu.Unlock()
		ws.close(endGone)
	case ws.cut:
		ws.mu.Unlock()
		ws.close(endCut)
	case n == len(buf) && len(ws.out) > 0:
		// Everything taken was written, and more came meanwhile: write it too.
		ws.mu.Unlock()
		ws.h.enqueue(ws)
	case len(ws.out) > 0:
		// The socket is full: the rest waits for it to drain, unless it did already.
		if ws.stalled.IsZero() {
			ws.stalled = now
		}
		if ws.writable {
			ws.mu.Unlock()
			ws.h.enqueue(ws)
			return
		}
		ws.waiting, ws.queued = true, false
		ws.mu.Unlock()
	case ws.ending:
		ws.mu.Unlock()
		ws.close(endDone)
	default:
		ws.queued = false
		ws.mu.Unlock()
	}
}

// ready is called when the socket can take more: a stream waiting for it is written again.
func (ws *wireStream) readyToWrite() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.writable = true
	if ws.waiting && !ws.closed {
		ws.waiting = false
		ws.schedule()
	}
}

// close ends the stream once: the connection closes (after the response's end, for a complete
// one) and its owner is told why.
func (ws *wireStream) close(why endReason) {
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		return
	}
	ws.closed, ws.out = true, nil
	own := ws.own
	ws.mu.Unlock()
	h := ws.h
	h.mu.Lock()
	delete(h.streams, ws.id)
	h.mu.Unlock()
	if own == nil {
		h.poller.remove(ws)
	}
	if why == endDone {
		if tc, ok := ws.conn.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
	}
	_ = ws.conn.Close()
	h.stats.open.Add(-1)
	switch why {
	case endGone:
		h.stats.gone.Add(1)
		h.log.Debug("stream ended: its client closed the connection or is gone")
	case endCut:
		h.stats.cut.Add(1)
		h.log.Debug("stream cut off: its client reads too slowly", zap.Int("backlog_limit", maxBacklog))
	}
	if own != nil {
		close(own)
	}
	ws.onEnd(why)
}

// loop writes what is ready, waits for the sockets' events and runs the periodic sweep, until
// no stream is left and nothing is ready, or the hub stops.
func (h *hub) loop() {
	defer h.wg.Done()
	next := time.Now().Add(h.tick)
	var list []*wireStream
	for {
		h.mu.Lock()
		batch := h.ready
		h.ready, h.spare = h.spare[:0], nil
		if len(batch) == 0 && (h.stopped || len(h.streams) == 0) {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		for i, ws := range batch {
			ws.flush()
			batch[i] = nil
		}
		h.mu.Lock()
		if h.spare == nil && cap(batch) <= 4096 {
			h.spare = batch // a burst's queue beyond that is let go
		}
		more := len(h.ready) > 0
		h.mu.Unlock()
		wait := time.Until(next)
		if more {
			wait = 0
		}
		h.poller.wait(wait)
		if now := time.Now(); !now.Before(next) {
			list = h.sweep(now, list[:0])
			next = now.Add(h.tick)
		}
	}
}

// sweep ends the streams whose connection stopped, cuts off those whose backlog has waited the
// dead-client bound, and queues a keep-alive comment on those that have written nothing for
// keepAlive. list is scratch space, returned for reuse.
func (h *hub) sweep(now time.Time, list []*wireStream) []*wireStream {
	h.mu.Lock()
	for _, ws := range h.streams {
		list = append(list, ws)
	}
	h.mu.Unlock()
	for _, ws := range list {
		if ws.ended() {
			ws.end()
			continue
		}
		ws.mu.Lock()
		switch {
		case ws.closed || ws.cut || ws.ending:
		case ws.tooFar(now) || (len(ws.out) > 0 && !ws.stalled.IsZero() && now.Sub(ws.stalled) >= h.deadAfter):
			ws.cut = true
			ws.schedule()
		case h.keepAlive > 0 && len(ws.out) == 0 && now.Sub(ws.lastWrite) >= h.keepAlive:
			if ws.chunked {
				ws.out = append(ws.out, keepAliveChunk...)
			} else {
				ws.out = append(ws.out, keepAliveComment...)
			}
			ws.schedule()
		}
		ws.mu.Unlock()
	}
	clear(list)
	return list
}

// shutdown ends every stream, gives them until the deadline (zero: none) to write their end,
// closes those still open, and stops the hub's goroutines.
func (h *hub) shutdown(deadline <-chan struct{}) {
	h.mu.Lock()
	all := make([]*wireStream, 0, len(h.streams))
	for _, ws := range h.streams {
		all = append(all, ws)
	}
	h.mu.Unlock()
	for _, ws := range all {
		ws.end()
	}
	wait := time.NewTicker(5 * time.Millisecond)
wait:
	for h.stats.open.Load() > 0 {
		select {
		case <-deadline:
			break wait
		case <-wait.C:
		}
	}
	wait.Stop()
	h.mu.Lock()
	all = all[:0]
	for _, ws := range h.streams {
		all = append(all, ws)
	}
	h.mu.Unlock()
	for _, ws := range all {
		ws.close(endShutdown)
	}
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.poller.wake()
	h.wg.Wait()
	h.poller.close()
}

// serveOwn serves a stream whose socket the poller cannot watch with two goroutines of its
// own, as net/http would: one writes, with a write deadline, when woken; one reads, to see the
// client leave. Both end when the stream closes.
func (ws *wireStream) serveOwn() {
	ws.mu.Lock()
	ws.own = make(chan struct{}, 1)
	if ws.queued {
		ws.own <- struct{}{}
	}
	own := ws.own
	ws.mu.Unlock()
	h := ws.h
	h.wg.Add(2)
	// Owned by ws: it ends when the stream closes (own is closed).
	go func() {
		defer h.wg.Done()
		for range own {
			ws.mu.Lock()
			buf, cut := ws.out, ws.cut
			ws.mu.Unlock()
			if cut {
				ws.close(endCut)
				return
			}
			_ = ws.conn.SetWriteDeadline(time.Now().Add(h.deadAfter))
			n, err := ws.conn.Write(buf)
			ws.mu.Lock()
			if ws.closed {
				ws.mu.Unlock()
				return
			}
			ws.out = ws.out[n:]
			if n > 0 {
				ws.lastWrite = time.Now()
			}
			more, ending := len(ws.out) > 0, ws.ending
			if !more {
				ws.out = nil
			}
			ws.queued = more
			ws.mu.Unlock()
			switch {
			case errors.Is(err, net.ErrClosed):
				return
			case err != nil:
				ws.close(endGone)
				return
			case more:
				select {
				case own <- struct{}{}:
				default:
				}
			case ending:
				ws.close(endDone)
				return
			}
		}
	}()
	// Owned by ws: it ends when the connection closes, or the client closes it.
	go func() {
		defer h.wg.Done()
		_, _ = io.Copy(io.Discard, bufio.NewReaderSize(ws.conn, 64))
		ws.close(endGone)
	}()
}
