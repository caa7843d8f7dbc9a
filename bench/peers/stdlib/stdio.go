package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// serveStdio serves newline-delimited JSON-RPC from in to out until in ends.
// tools/call runs on a goroutine per call; everything else is answered in
// order on the reading goroutine. At the end of input, the calls in flight
// get grace to finish and be answered; then the rest are cancelled.
func (s *server) serveStdio(in io.Reader, out io.Writer, grace time.Duration) error {
	w := &lineWriter{bw: bufio.NewWriterSize(out, 64<<10)}
	calls := newInflight()
	br := bufio.NewReaderSize(in, 64<<10)
	var long []byte
	for {
		line, err := readLine(br, &long)
		if len(bytes.TrimSpace(line)) > 0 {
			s.stdioMessage(line, w, calls)
		}
		if err != nil {
			calls.close(grace)
			if errors.Is(err, io.EOF) {
				return w.error()
			}
			return err
		}
	}
}

func (s *server) stdioMessage(line []byte, w *lineWriter, calls *inflight) {
	m, errReply := parse(line)
	switch {
	case errReply != nil:
		w.write(errReply)
		return
	case m == nil || m.Method == "":
		return // a response from the client, or a notification without sense
	case m.ID == nil:
		if m.Method == "notifications/cancelled" {
			calls.cancel(string(m.Params.RequestID))
		}
		return // other notifications need nothing
	}
	req, errReply := newRequest(m)
	if errReply != nil {
		w.write(errReply)
		return
	}
	if req.method != "tools/call" {
		w.write(s.handle(calls.ctx, req, nil))
		return
	}
	key := string(req.id)
	ctx, ok := calls.register(calls.ctx, key)
	if !ok {
		w.write(errorResponse(req.id, codeInvalidRequest, "Invalid request: a call with this id is in flight", nil))
		return
	}
	calls.run(ctx, func(ctx context.Context) {
		reply := s.handle(ctx, req, w.write)
		if calls.finish(key) && reply != nil {
			w.write(reply)
		}
	})
}

// readLine returns the next line, however long; it is valid until the next
// call (decoding copies what it keeps). long is scratch space kept between
// calls.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	buf := append((*long)[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		buf = append(buf, line...)
	}
	if cap(buf) <= 1<<20 {
		*long = buf
	}
	return buf, err
}

// lineWriter writes whole messages, one per line, from many goroutines, and
// flushes when no other message is waiting to be written: answers that come
// together leave in one write.
type lineWriter struct {
	waiting atomic.Int64 // writers waiting for mu

	mu  sync.Mutex
	bw  *bufio.Writer
	err error // the first write error; later writes are dropped
}

func (l *lineWriter) write(b []byte) {
	l.waiting.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiting.Add(-1)
	if l.err != nil {
		return
	}
	l.bw.Write(b)
	l.bw.WriteByte('\n')
	// The last writer of a burst flushes: anyone who came after it is
	// counted in waiting and will flush in its turn.
	if l.waiting.Load() == 0 {
		l.err = l.bw.Flush()
	}
}

func (l *lineWriter) error() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
