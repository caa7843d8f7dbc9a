package protocol

import (
	"bufio"
	"errors"
	"io"
	"math"
	"strconv"
	"sync"
)

// DefaultMaxMessageSize is the default limit for one message: 4 MiB.
const DefaultMaxMessageSize = 4 << 20

// readChunk is the size of the LineReader's read buffer: a line shorter than
// this is returned without a copy.
const readChunk = 64 << 10

// MessageTooLargeError reports a line longer than the limit. The line was
// discarded and the reader is still usable. The text of Error is fixed.
type MessageTooLargeError struct {
	Limit int // the limit in bytes, line terminator excluded
}

// Error returns "message exceeds the limit of <Limit> bytes".
func (e *MessageTooLargeError) Error() string {
	return "message exceeds the limit of " + strconv.Itoa(e.Limit) + " bytes"
}

// LineReader reads newline-delimited messages, the stdio framing of MCP.
// Unlike bufio.Scanner it has no 64 KiB ceiling: a line may be as long as
// the limit given to [NewLineReader]. It never buffers more than about that
// limit for one line: an over-long line is read and discarded in chunks up
// to its newline, and reported once as [*MessageTooLargeError].
//
// A LineReader is not safe for concurrent use; one goroutine reads.
type LineReader struct {
	br   *bufio.Reader
	max  int
	line []byte // a line spanning several chunks, reused
	err  error  // sticky read error (io.EOF included)
}

// NewLineReader returns a reader of the lines of r, each at most max bytes
// long without its terminator. max <= 0 means [DefaultMaxMessageSize].
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxMessageSize
	}
	max = min(max, math.MaxInt-1) // readLine compares against max+1
	return &LineReader{br: bufio.NewReaderSize(r, readChunk), max: max}
}

// Next returns the next non-empty line without its "\n" or "\r\n"; lines
// that are empty or hold only whitespace are skipped. The slice is valid
// until the next call. At the end of input it returns io.EOF, after
// returning a final line that has no newline. A line over the limit gives a
// [*MessageTooLargeError] and the following call reads the next line. Any
// other read error is returned, and returned again by later calls; a
// partial line read before it is dropped. Next blocks while the underlying
// reader does.
func (r *LineReader) Next() ([]byte, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		line, err := r.readLine()
		if err != nil {
			var tooLarge *MessageTooLargeError
			if !errors.As(err, &tooLarge) {
				r.err = err
			}
			return nil, err
		}
		if !isBlank(line) {
			return line, nil
		}
	}
}

// readLine returns one line without its terminator: nil with io.EOF at the
// end of input, a *MessageTooLargeError for a line over the limit.
func (r *LineReader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	tooLarge := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLarge {
			if err == nil && len(r.line) == 0 {
				// The common case: the whole line sits in bufio's buffer.
				line := trimEOL(chunk)
				if len(line) <= r.max {
					return line, nil
				}
				return nil, &MessageTooLargeError{Limit: r.max}
			}
			// One byte of slack: a chunk may end in the '\r' of a "\r\n".
			if len(r.line)+len(chunk) > r.max+1 {
				tooLarge = true
				r.line = r.line[:0]
			} else {
				r.line = append(r.line, chunk...)
			}
		}
		switch {
		case err == nil || (err == io.EOF && (tooLarge || len(r.line) > 0)):
			// A newline, or a final line without one.
			if tooLarge {
				return nil, &MessageTooLargeError{Limit: r.max}
			}
			line := trimEOL(r.line)
			if len(line) > r.max {
				return nil, &MessageTooLargeError{Limit: r.max}
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue // the line goes on
		default:
			return nil, err
		}
	}
}

// trimEOL removes a trailing "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

// StreamWriter writes frames, one per line, onto one io.Writer from a single
// goroutine it owns, so that frames sent by any number of goroutines never
// interleave. [StreamWriter.Send] queues and returns at once; the writer
// goroutine drains the queue through a buffer and flushes whenever the
// queue is empty, so a burst of frames costs few writes.
//
// A StreamWriter is safe for concurrent use. It does not close the
// underlying writer.
type StreamWriter struct {
	w       *bufio.Writer
	onError func(error)
	wake    chan struct{} // size 1: "the queue or the closing flag changed"
	done    chan struct{} // closed when the writer goroutine returns

	unflushed int // bytes in w's buffer; writer goroutine only

	mu      sync.Mutex
	queue   [][]byte
	pending int           // bytes queued, being written or buffered, not yet flushed
	drained chan struct{} // closed (and cleared) when pending drops, while WaitPending waits
	closing bool          // Close was called: Send drops, the goroutine drains and returns
	failed  bool          // a write failed: Send drops
	err     error         // the first write error
}

// NewStreamWriter returns a StreamWriter for w and starts its writer
// goroutine; [StreamWriter.Close] must be called to stop it. onError, which
// may be nil, is called once, from the writer goroutine, with the first
// write error; after that every frame, queued or sent later, is dropped.
// onError must not block for long nor call [StreamWriter.Close], which waits
// for the goroutine onError runs on.
func NewStreamWriter(w io.Writer, onError func(error)) *StreamWriter {
	sw := &StreamWriter{
		w:       bufio.NewWriterSize(w, readChunk),
		onError: onError,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	// The writer goroutine is stopped by Close, which sets closing and wakes
	// it; Close then waits for it on done. It ends only after writing every
	// frame queued before Close.
	go sw.run()
	return sw
}

// Send queues one frame: a complete JSON message without a newline (the
// writer adds "\n"), such as the output of [EncodeResult]. The frame must
// not be modified afterwards. Send never blocks on I/O; the queue has no
// bound of its own, so callers that must limit memory check
// [StreamWriter.Pending]. An empty frame, a Send after [StreamWriter.Close]
// and a Send after a write error are no-ops.
func (w *StreamWriter) Send(frame []byte) {
	if len(frame) == 0 {
		return
	}
	w.mu.Lock()
	if w.closing || w.failed {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, frame)
	w.pending += len(frame) + 1
	w.mu.Unlock()
	w.signal()
}

// Pending returns the number of bytes queued and not yet written, newlines
// included, for backpressure policies. Bytes count as written once flushed
// to the underlying writer. It is 0 after a write error.
func (w *StreamWriter) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending
}

// Close writes every frame queued before it, flushes, stops the writer
// goroutine and waits for it. It returns the first write error, if any (the
// one also given to onError). Close is idempotent and safe to call from
// several goroutines; each call waits. It blocks while the underlying writer
// blocks: closing that writer (stdout, a pipe) unblocks it.
func (w *StreamWriter) Close() error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.signal()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *StreamWriter) signal() {
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// run is the writer goroutine: it takes the whole queue at once, writes it,
// and sleeps on wake when there is nothing left.
func (w *StreamWriter) run() {
	defer close(w.done)
	var batch [][]byte
	for {
		w.mu.Lock()
		batch, w.queue = w.queue, batch[:0]
		closing := w.closing
		w.mu.Unlock()

		if len(batch) > 0 {
			w.writeBatch(batch)
			clear(batch) // drop the references to written frames
			continue
		}
		w.flush()
		if closing {
			return
		}
		<-w.wake
	}
}

// writeBatch writes frames into the buffer; it flushes when no more frames
// are queued, so the peer sees them without waiting for more traffic.
func (w *StreamWriter) writeBatch(batch [][]byte) {
	if w.isFailed() {
		return
	}
	for _, f := range batch {
		if _, err := w.w.Write(f); err != nil {
			w.fail(err)
			return
		}
		if err := w.w.WriteByte('\n'); err != nil {
			w.fail(err)
			return
		}
		w.unflushed += len(f) + 1
	}
	w.mu.Lock()
	more := len(w.queue) > 0
	w.mu.Unlock()
	if !more {
		w.flush()
	}
}

// flush writes out the buffer; only then do its bytes stop counting as
// pending.
func (w *StreamWriter) flush() {
	if w.isFailed() || w.unflushed == 0 {
		return
	}
	if err := w.w.Flush(); err != nil {
		w.fail(err)
		return
	}
	w.mu.Lock()
	w.pending -= w.unflushed
	w.wakeWaiters()
	w.mu.Unlock()
	w.unflushed = 0
}

func (w *StreamWriter) isFailed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// fail records the first write error, drops the queue and reports the error
// once. It runs on the writer goroutine only.
func (w *StreamWriter) fail(err error) {
	w.mu.Lock()
	if w.failed {
		w.mu.Unlock()
		return
	}
	w.failed = true
	w.err = err
	clear(w.queue)
	w.queue = w.queue[:0]
	w.pending = 0
	w.wakeWaiters()
	w.mu.Unlock()
	if w.onError != nil {
		w.onError(err)
	}
}
