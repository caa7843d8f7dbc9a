package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"runtime"
	"sync"
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

// lineWriter writes frames, one per line, without ever blocking its caller: a caller's frame
// is encoded straight into the writer's buffer, and a goroutine of the writer's own writes what
// is pending, waiting for room in the pipe, until nothing is. The goroutine starts when a frame
// comes to an idle writer, and first lets the goroutines that are ready run (runtime.Gosched):
// calls that arrive together (the request actors of a client's requests read at once) queue
// their frames meanwhile and share one write, and the upstream reads them at once too. Measured
// behind the gateway at 16 calls in flight: 1.07 writes per call → 0.36, the gateway's CPU per
// call down 9 %, the latency of one call at a time unchanged (BENCHMARKS.md, "The gateway"). An
// idle connection holds no goroutine for it.
type lineWriter struct {
	f  io.Writer
	wg *sync.WaitGroup

	mu      sync.Mutex
	pending []byte // frames not yet written, each with its line's end
	spare   []byte // a buffer written before, for the next pending
	running bool   // the writer's goroutine runs
	closing bool
	failed  bool
	done    chan struct{} // closed once closing and nothing is being written
}

// maxSpare bounds the buffer kept for the next frames: under load the frames of a dozen calls
// queue behind a write, and a busy upstream would otherwise allocate them again for each write.
// An upstream that was never busy keeps one of a frame's size.
const maxSpare = 4 * pipeBuffer

// newLineWriter returns a writer to w; its goroutines are counted in wg.
func newLineWriter(w io.Writer, wg *sync.WaitGroup) *lineWriter {
	return &lineWriter{f: w, wg: wg, done: make(chan struct{})}
}

// write queues out and a line's end for the writer's goroutine. It never blocks.
func (w *lineWriter) write(out *Outgoing) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing || w.failed {
		return
	}
	if w.pending == nil {
		w.pending, w.spare = w.spare, nil
	}
	w.pending = append(out.AppendTo(w.pending), '\n')
	if !w.running {
		w.running = true
		w.wg.Add(1)
		// Owned by the writer: it ends when nothing is pending, or a write fails.
		go w.run()
	}
}

// run writes what is pending, waiting for room in the pipe, until nothing is.
func (w *lineWriter) run() {
	defer w.wg.Done()
	runtime.Gosched() // the goroutines that are ready queue their frames first: one write for all
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
		if cap(data) <= maxSpare && w.spare == nil {
			w.spare = data[:0]
		}
		w.mu.Unlock()
	}
}

// idle ends the writer's goroutine. w.mu is held.
func (w *lineWriter) idle() {
	w.running = false
	if w.closing {
		close(w.done)
	}
}

// fail drops everything after a failed write: the connection is over. w.mu is held.
func (w *lineWriter) fail() {
	w.failed = true
	w.pending, w.spare = nil, nil
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
