package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
	"syscall"
)

// The framing of a stdio upstream's pipes with small buffers: a gateway may hold many
// upstreams, and most of their messages are small. (protocol's LineReader and StreamWriter,
// built for a server's one stdio connection, buffer 64 KiB each way.)

// pipeBuffer is the buffer size of each direction.
const pipeBuffer = 4 << 10

// errLineTooLong is a line over the message limit, skipped.
var errLineTooLong = errors.New("upstream: message over the size limit")

// lineReader reads newline-delimited messages of at most max bytes.
type lineReader struct {
	br   *bufio.Reader
	max  int
	long []byte // a line spanning several buffers, reused
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, pipeBuffer), max: max}
}

// next returns the next non-blank line without its terminator, valid until the next call;
// errLineTooLong for a line over the limit (the next call reads the one after); the read error
// at the end.
func (r *lineReader) next() ([]byte, error) {
	for {
		line, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.long = append(r.long[:0], line...)
			tooLong := false
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.br.ReadSlice('\n')
				if !tooLong && len(r.long)+len(line) > r.max+2 {
					tooLong, r.long = true, r.long[:0]
				}
				if !tooLong {
					r.long = append(r.long, line...)
				}
			}
			if tooLong {
				return nil, errLineTooLong
			}
			line = r.long
			if cap(r.long) > 1<<20 {
				r.long = nil // do not keep a large buffer for the life of the connection
			}
		}
		if len(line) == 0 && err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// lineWriter writes frames, one per line, without ever blocking its caller: a frame is written
// at once on the caller's goroutine by a write that does not wait (the pipe is non-blocking), and
// the frames that come while one is being written go out after it in one write. Only when the
// pipe is full does a goroutine of its own take over what is left, waiting for room, until it has
// written everything; an idle connection holds no goroutine for it.
type lineWriter struct {
	f   io.Writer       // the pipe, for the writes that wait (the goroutine's)
	raw syscall.RawConn // the pipe's descriptor, for the writes that do not; nil: every write goes through the goroutine
	wg  *sync.WaitGroup

	// The write in progress on the descriptor (tryWrite): only its writer touches them.
	writeFn func(fd uintptr) bool // w.writeFd, bound once
	data    []byte
	written int
	werr    error

	mu      sync.Mutex
	pending []byte // frames queued behind the write in progress, each with its line's end
	spare   []byte // a buffer written before, for the next pending
	scratch []byte // a buffer written before, for the next frame written at once
	running bool   // a write is in progress: a caller's, or the goroutine's
	closing bool
	failed  bool
	done    chan struct{} // closed once closing and nothing is being written
}

// maxSpare bounds each buffer kept for the next frames (at most three: one for a frame written
// at once, two for the frames that queue behind a write and the write of them): under load the
// frames of a dozen calls queue behind a write, and a busy upstream would otherwise allocate
// them again for each write. An upstream that was never busy keeps one of a frame's size.
const maxSpare = 4 * pipeBuffer

// newLineWriter returns a writer to w; its goroutines are counted in wg. When w is a file with a
// descriptor the runtime polls (a pipe), frames are written without waiting.
func newLineWriter(w io.Writer, wg *sync.WaitGroup) *lineWriter {
	lw := &lineWriter{f: w, wg: wg, done: make(chan struct{})}
	if sc, ok := w.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			lw.raw = raw
			lw.writeFn = lw.writeFd
		}
	}
	return lw
}

// write writes out and a line's end. It never blocks: it writes what the pipe takes now and
// leaves the rest, and the frames queued meanwhile, to the writer's goroutine. A caller's
// request is encoded straight into the writer's buffer.
func (w *lineWriter) write(out *Outgoing) {
	w.mu.Lock()
	if w.closing || w.failed {
		w.mu.Unlock()
		return
	}
	if w.running || w.raw == nil {
		if w.pending == nil {
			w.pending, w.spare = w.spare, nil
		}
		w.pending = append(out.AppendTo(w.pending), '\n')
		w.start()
		w.mu.Unlock()
		return
	}
	w.running = true
	data := w.scratch
	w.scratch = nil
	w.mu.Unlock()
	data = append(out.AppendTo(data[:0]), '\n')
	for {
		n, err := w.tryWrite(data)
		if err != nil {
			w.mu.Lock()
			w.fail()
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		if n < len(data) {
			// The pipe is full: the goroutine writes the rest, then what was queued, as room
			// comes.
			rest := make([]byte, 0, len(data)-n+len(w.pending))
			rest = append(append(rest, data[n:]...), w.pending...)
			w.pending = rest
			w.running = false
			w.start()
			w.mu.Unlock()
			return
		}
		w.keep(data)
		if len(w.pending) == 0 {
			w.idle()
			w.mu.Unlock()
			return
		}
		data = w.pending
		w.pending, w.spare = w.spare, nil
		w.mu.Unlock()
	}
}

// keep keeps a buffer written, for the next frames. w.mu is held.
func (w *lineWriter) keep(data []byte) {
	switch {
	case cap(data) > maxSpare:
	case w.scratch == nil:
		w.scratch = data[:0]
	case w.spare == nil:
		w.spare = data[:0]
	}
}

// tryWrite writes as much of data as the pipe takes without waiting. Only the writer in
// progress calls it.
func (w *lineWriter) tryWrite(data []byte) (int, error) {
	w.data, w.written, w.werr = data, 0, nil
	err := w.raw.Write(w.writeFn) // a func bound once: no closure per write
	n, werr := w.written, w.werr
	w.data, w.werr = nil, nil
	if err == nil {
		err = werr
	}
	return n, err
}

// writeFd writes w.data from w.written on the pipe's descriptor until it is written or the
// pipe is full; RawConn.Write calls it.
func (w *lineWriter) writeFd(fd uintptr) bool {
	for w.written < len(w.data) {
		n, err := syscall.Write(int(fd), w.data[w.written:])
		if n > 0 {
			w.written += n
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true // full: the goroutine waits for room
		case err != nil:
			w.werr = err
			return true
		}
	}
	return true
}

// start starts the writer's goroutine for what is pending, unless a write is in progress. w.mu
// is held.
func (w *lineWriter) start() {
	if w.running || len(w.pending) == 0 {
		return
	}
	w.running = true
	w.wg.Add(1)
	// Owned by the writer: it ends when nothing is pending, or a write fails.
	go w.run()
}

// idle ends a write in progress. w.mu is held.
func (w *lineWriter) idle() {
	w.running = false
	if w.closing {
		close(w.done)
	}
}

// fail drops everything after a failed write: the connection is over. w.mu is held.
func (w *lineWriter) fail() {
	w.failed = true
	w.pending, w.spare, w.scratch = nil, nil, nil
	w.idle()
}

// close drops what is still queued once written, and closes done when the writer is idle.
func (w *lineWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return
	}
	w.closing = true
	if !w.running {
		close(w.done)
	}
}

// run writes what is pending, waiting for room in the pipe, until nothing is.
func (w *lineWriter) run() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if len(w.pending) == 0 || w.failed {
			w.idle()
			w.mu.Unlock()
			return
		}
		data := w.pending
		w.pending, w.spare = w.spare, nil
		w.mu.Unlock()
		_, err := w.f.Write(data)
		w.mu.Lock()
		if err != nil {
			w.fail()
			w.mu.Unlock()
			return
		}
		w.keep(data)
		w.mu.Unlock()
	}
}
