package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
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

// lineWriter writes frames, one per line, from a goroutine of its own that runs while there is
// something to write: Send never blocks, and an idle connection holds no goroutine for it.
type lineWriter struct {
	w  *bufio.Writer
	wg *sync.WaitGroup

	mu      sync.Mutex
	queue   [][]byte
	running bool // the goroutine is writing
	closing bool
	failed  bool
	done    chan struct{} // closed once closing and nothing is being written
}

// newLineWriter returns a writer to w; its goroutines are counted in wg.
func newLineWriter(w io.Writer, wg *sync.WaitGroup) *lineWriter {
	return &lineWriter{w: bufio.NewWriterSize(w, pipeBuffer), wg: wg, done: make(chan struct{})}
}

func (w *lineWriter) send(frame []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing || w.failed {
		return
	}
	w.queue = append(w.queue, frame)
	if !w.running {
		w.running = true
		w.wg.Add(1)
		// Owned by the writer: it ends when the queue is empty.
		go w.run()
	}
}

// write writes frame on the caller's goroutine when nothing else is being written, which spares
// the writer's goroutine a wake-up; otherwise it queues frame as send does. It blocks while the
// pipe is full: callers that must not block (an actor) use send.
func (w *lineWriter) write(frame []byte) {
	w.mu.Lock()
	if w.closing || w.failed {
		w.mu.Unlock()
		return
	}
	if w.running || len(w.queue) > 0 {
		w.mu.Unlock()
		w.send(frame)
		return
	}
	w.running = true
	w.queue = append(w.queue, frame)
	w.wg.Add(1)
	w.mu.Unlock()
	w.run() // writes frame, and whatever was queued meanwhile, then stops
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

func (w *lineWriter) run() {
	defer w.wg.Done()
	var batch [][]byte
	for {
		w.mu.Lock()
		if len(w.queue) == 0 || w.failed {
			w.running = false
			if w.closing {
				close(w.done)
			}
			w.mu.Unlock()
			return
		}
		batch, w.queue = w.queue, batch[:0]
		w.mu.Unlock()
		err := error(nil)
		for _, f := range batch {
			if _, err = w.w.Write(f); err == nil {
				err = w.w.WriteByte('\n')
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = w.w.Flush()
		}
		if err != nil {
			w.mu.Lock()
			w.failed = true
			w.queue = nil
			w.mu.Unlock()
		}
		clear(batch)
		if cap(batch) > 1024 {
			batch = nil
		}
	}
}
