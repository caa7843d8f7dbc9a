package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// StdioOptions configure [DialStdio].
type StdioOptions struct {
	// Stderr receives the server's stderr; nil discards it.
	Stderr io.Writer
	// Env, if not nil, is the server's environment.
	Env []string
	// Dir is the server's working directory; empty means the current one.
	Dir string
	// CloseGrace is how long Close waits for the server to exit after it
	// closed the server's stdin, and again after SIGTERM, before SIGKILL.
	// Zero means 2 s.
	CloseGrace time.Duration
}

// DialStdio starts argv as a child process and returns a client speaking to
// it over its stdin and stdout, one JSON message per line. It does not
// perform the handshake; call [Client.Initialize] or [Client.Discover].
func DialStdio(argv []string, opts StdioOptions) (*Client, error) {
	if len(argv) == 0 {
		return nil, errors.New("stdio: empty command")
	}
	// os.Pipe gives pollable files: closing our ends unblocks a reader or a
	// writer stuck on a server that stopped reading or never exits.
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, err
	}
	grace := opts.CloseGrace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = childIn, childOut, opts.Stderr
	cmd.Env, cmd.Dir = opts.Env, opts.Dir
	cmd.WaitDelay = grace
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("stdio: start %s: %w", argv[0], err)
	}
	c := newStream(stdout, stdin, cmd, grace)
	c.pid = cmd.Process.Pid
	return c, nil
}

// Connect returns a client speaking newline-delimited JSON-RPC over r (from
// the server) and w (to the server): a server in the same process behind
// io.Pipe, or any other stream. Close closes w, then r. Like [DialStdio], it
// does not perform the handshake.
func Connect(r io.ReadCloser, w io.WriteCloser) *Client {
	return newStream(r, w, nil, 0)
}

func newStream(r io.ReadCloser, w io.WriteCloser, cmd *exec.Cmd, grace time.Duration) *Client {
	c := newClient()
	t := &stdioTransport{
		c:          c,
		cmd:        cmd,
		stdin:      w,
		stdout:     r,
		grace:      grace,
		w:          newBatchWriter(),
		readerDone: make(chan struct{}),
		writerDone: make(chan struct{}),
		exited:     make(chan struct{}),
	}
	c.tr = t
	// The goroutines below end in close(): the writer when the batch writer
	// closes, the reader when the input reaches EOF or is closed, the waiter
	// when the process exits (close sends SIGKILL at the latest).
	go func() {
		defer close(t.writerDone)
		if err := t.w.run(w); err != nil {
			c.fail(fmt.Errorf("%w: writing to server: %v", ErrClosed, err))
		}
	}()
	go func() {
		defer close(t.readerDone)
		t.read()
	}()
	if cmd == nil {
		return c
	}
	go func() {
		defer close(t.exited)
		t.waitErr = cmd.Wait()
	}()
	return c
}

type stdioTransport struct {
	c      *Client
	cmd    *exec.Cmd // nil for Connect
	stdin  io.WriteCloser
	stdout io.ReadCloser
	grace  time.Duration
	w      *batchWriter

	readerDone chan struct{}
	writerDone chan struct{}
	exited     chan struct{}
	waitErr    error // valid once exited is closed

	closeOnce sync.Once
	closeErr  error
}

func (t *stdioTransport) send(call *Call, body []byte) error {
	_, err := t.w.enqueue(body)
	call.markWritten() // queued; the writer sends it with the next batch
	return err
}

func (t *stdioTransport) notify(ctx context.Context, _ string, body []byte) error {
	seq, err := t.w.enqueue(body)
	if err != nil {
		return err
	}
	return t.w.wait(ctx, seq)
}

func (t *stdioTransport) notifyMany(ctx context.Context, _ string, bodies [][]byte, _ int) error {
	var seq uint64
	for _, b := range bodies {
		s, err := t.w.enqueue(b)
		if err != nil {
			return err
		}
		seq = s
	}
	return t.w.wait(ctx, seq)
}

func (t *stdioTransport) flush(ctx context.Context) error {
	return t.w.wait(ctx, t.w.last())
}

func (t *stdioTransport) raw(ctx context.Context, body []byte, wait time.Duration) (*RawReply, error) {
	t.c.takeUnmatched() // replies to earlier probes are not this one's
	start := time.Now()
	seq, err := t.w.enqueue(bytes.TrimSuffix(body, []byte("\n")))
	if err != nil {
		return nil, err
	}
	if err := t.w.wait(ctx, seq); err != nil {
		return nil, err
	}
	reply := &RawReply{}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-t.c.arrived:
			got := t.c.takeUnmatched()
			if len(got) == 0 {
				continue
			}
			if len(reply.Messages) == 0 {
				reply.Elapsed = time.Since(start)
				// A reply may come in several lines (an unpacked batch):
				// give the rest a moment.
				timer.Reset(min(wait, 100*time.Millisecond))
			}
			reply.Messages = append(reply.Messages, got...)
		case <-timer.C:
			if len(reply.Messages) == 0 {
				reply.Elapsed = time.Since(start)
			}
			return reply, nil
		case <-t.exited:
			reply.Messages = append(reply.Messages, t.c.takeUnmatched()...)
			reply.Elapsed = time.Since(start)
			return reply, nil
		case <-ctx.Done():
			return reply, ctx.Err()
		}
	}
}

func (t *stdioTransport) progress() int64 { return t.w.progress.Load() }

func (t *stdioTransport) alive() error {
	if t.cmd == nil {
		return nil
	}
	select {
	case <-t.exited:
		if t.waitErr != nil {
			return fmt.Errorf("server exited: %v", t.waitErr)
		}
		return errors.New("server exited")
	default:
		return nil
	}
}

func (t *stdioTransport) close() error {
	t.closeOnce.Do(func() {
		t.w.close()
		t.stdin.Close()
		<-t.writerDone
		if t.cmd == nil {
			t.stdout.Close()
			<-t.readerDone
			return
		}
		if !t.waitExit(t.grace) {
			t.cmd.Process.Signal(syscall.SIGTERM)
			if !t.waitExit(t.grace) {
				t.cmd.Process.Kill()
				<-t.exited
				t.closeErr = fmt.Errorf("stdio: server ignored stdin EOF and SIGTERM; killed")
			}
		}
		// A grandchild may still hold the server's stdout open.
		t.stdout.Close()
		<-t.readerDone
	})
	return t.closeErr
}

func (t *stdioTransport) waitExit(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.exited:
		return true
	case <-timer.C:
		return false
	}
}

func (t *stdioTransport) read() {
	br := bufio.NewReaderSize(t.stdout, 64<<10)
	var long []byte
	for {
		line, err := readLine(br, &long)
		if line = bytes.TrimSpace(line); len(line) > 0 {
			msgs, batch, perr := parseMessages(line)
			if perr != nil {
				t.c.countGarbage()
				t.c.mu.Lock()
				t.c.keepUnmatched(RawMessage{Raw: bytes.Clone(line)})
				t.c.mu.Unlock()
			}
			for _, m := range msgs {
				t.c.deliver(m, line, batch)
			}
		}
		if err != nil {
			t.c.fail(fmt.Errorf("%w: server closed its stdout", ErrClosed))
			return
		}
	}
}

// readLine returns the next line, however long; the result is valid until
// the next call. long is scratch space kept between calls.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	buf := append((*long)[:0], line...)
	for {
		line, err = br.ReadSlice('\n')
		buf = append(buf, line...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	if cap(buf) <= 1<<20 {
		*long = buf // keep moderate scratch space, let huge lines go
	}
	return buf, err
}

// batchWriter queues lines from many goroutines and writes whatever has
// queued in one write, so that a busy client makes few system calls.
type batchWriter struct {
	mu      sync.Mutex
	cond    sync.Cond
	pending []byte
	spare   []byte
	queued  uint64 // sequence number of the last line queued
	written uint64 // sequence number of the last line written
	err     error
	closing bool

	progress atomic.Int64 // bytes written
}

func newBatchWriter() *batchWriter {
	w := &batchWriter{}
	w.cond.L = &w.mu
	return w
}

// enqueue queues p and a newline; it returns the line's sequence number.
func (w *batchWriter) enqueue(p []byte) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closing {
		return 0, w.errLocked()
	}
	w.pending = append(w.pending, p...)
	w.pending = append(w.pending, '\n')
	w.queued++
	w.cond.Broadcast()
	return w.queued, nil
}

func (w *batchWriter) last() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued
}

// wait blocks until line seq has been written, the writer failed, or ctx is
// done.
func (w *batchWriter) wait(ctx context.Context, seq uint64) error {
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.written < seq {
		if w.err != nil || w.closing {
			return w.errLocked()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		w.cond.Wait()
	}
	return nil
}

func (w *batchWriter) errLocked() error {
	if w.err != nil {
		return fmt.Errorf("%w: %v", ErrClosed, w.err)
	}
	return ErrClosed
}

func (w *batchWriter) close() {
	w.mu.Lock()
	w.closing = true
	w.cond.Broadcast()
	w.mu.Unlock()
}

// run writes queued lines to out until close is called or a write fails.
func (w *batchWriter) run(out io.Writer) error {
	for {
		w.mu.Lock()
		for len(w.pending) == 0 && !w.closing {
			w.cond.Wait()
		}
		if w.closing {
			w.mu.Unlock()
			return nil
		}
		buf, seq := w.pending, w.queued
		w.pending = w.spare[:0]
		w.mu.Unlock()

		// In pieces, so that Progress moves while a slow reader drains a
		// large batch.
		var err error
		for rest := buf; len(rest) > 0 && err == nil; {
			n := min(len(rest), 64<<10)
			n, err = out.Write(rest[:n])
			w.progress.Add(int64(n))
			rest = rest[n:]
		}

		w.mu.Lock()
		if cap(buf) <= 1<<20 {
			w.spare = buf[:0]
		} else {
			w.spare = nil
		}
		if err != nil && !w.closing {
			w.err = err
		} else {
			w.written = seq
		}
		w.cond.Broadcast()
		closing := w.closing
		w.mu.Unlock()
		if err != nil {
			if closing {
				return nil
			}
			return err
		}
	}
}
