package toolgrain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
)

// stdioStream sends every answer of a stdio connection to its one writer.
type stdioStream struct{ w *protocol.StreamWriter }

func (s stdioStream) Send(frame []byte) { s.w.Send(frame) }
func (stdioStream) Close()              {}

// ServeStdio serves one MCP connection over newline-delimited JSON-RPC: messages are read from
// in and answers written to out through a single writer. Malformed lines get their JSON-RPC
// error and the stream keeps serving; a line longer than MaxMessageSize is skipped and answered
// with -32600. A JSON-RPC batch (one line holding an array) is served in a session that
// negotiated 2025-03-26, whose answer is one line holding the array of its responses, and
// refused with -32600 in any other.
//
// Reading never waits for calls in flight, so cancellations and pings are handled however busy
// the handlers are. It waits in two cases only: while the connection actor has more than 8 MiB
// of messages still to handle (a short wait: the actor never blocks), and
// while more than MaxOutputBacklog bytes of answers wait for a client that does not read them
// (the slow-consumer policy: reading resumes once the backlog has drained to half).
//
// EOF on in means the client will send nothing more, not that it wants nothing back: the calls
// and other requests received before it go on and are answered, for at most EndOfInputGrace,
// after which those still running are cancelled (they get no response). Open
// subscriptions/listen streams, which never end by themselves, end at once with the result
// that closes them; requests to the client (sampling, elicitation) fail, since no answer can
// come. ServeStdio then writes every pending answer and returns nil; with nothing in flight at
// EOF it returns at once.
//
// When ctx ends first (during that wait too), it closes the connection, cancelling the calls in
// flight (they get no response), and returns ctx.Err(); if in is an io.Closer it is closed to
// unblock the reader, otherwise the reading goroutine ends at its next read. When reading fails
// (other than EOF), the error goes to OnError (with no details), the connection is closed the
// same way and ServeStdio returns nil. When writing to out fails, the error goes to OnError
// (with no details), the connection is closed the same way and ServeStdio returns the write
// error, wrapped. Pending answers are written for at most OutputGrace at the end: if out
// still blocks then, they are abandoned and reported as stalled output, and the goroutine
// writing them ends when out's Write returns. Close the server afterwards to flush OnError
// reports and stop the actors.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.ServeStdioAs(ctx, in, out, nil)
}

// ServeStdioAs is [Server.ServeStdio] for a client the host has authenticated as identity (over
// stdio MCP has no tokens: the host knows who started it): every request of the connection
// runs as identity, as if a token verifier had returned it, so handlers find it with
// tools.IdentityFromContext and tools with Scopes accept or refuse the call by its scopes. A
// nil identity is ServeStdio. The identity must not be modified afterwards.
func (s *Server) ServeStdioAs(ctx context.Context, in io.Reader, out io.Writer, identity *Identity) error {
	var (
		writeErr    error
		writeFailed = make(chan struct{})
	)
	w := protocol.NewStreamWriter(out, func(err error) {
		// Called once, on the writer goroutine: writeErr is set before the channel closes.
		writeErr = err
		close(writeFailed)
		s.eng.Report(fmt.Errorf("stdio: write: %w", err))
	})
	// Over stdio, messages unrelated to any request share the one output.
	conn, err := s.eng.ConnectNotify("stdio", stdioStream{w: w})
	if err != nil {
		_ = w.Close()
		if errors.Is(err, engine.ErrClosed) {
			return ErrServerClosed
		}
		return err
	}

	stop := make(chan struct{})
	readDone := make(chan error, 1)
	// Owned by ServeStdio, which waits for it unless ctx ends or the output fails first (see
	// the doc comment); it ends at EOF, at the first read error, or when stop is closed while
	// it waits for room.
	go func() {
		readDone <- s.readLoop(in, conn, w, stop, identity)
	}()

	var result error
	select {
	case err := <-readDone:
		if err != nil {
			s.eng.Report(fmt.Errorf("stdio: read: %w", err))
			break
		}
		// EOF: answer what was received. The connection stops once nothing is in flight, or
		// cancels the rest after EndOfInputGrace.
		s.cfg.Logger.Debug("stdio: end of input; answering the requests in flight")
		conn.Finish()
		select {
		case <-conn.Done():
			if s.eng.Closed() {
				result = ErrServerClosed
			}
		case <-ctx.Done():
			result = ctx.Err()
		case <-writeFailed:
			result = fmt.Errorf("toolgrain: stdio: write: %w", writeErr)
		}
	case <-ctx.Done():
		result = ctx.Err()
		closeInput(in)
	case <-conn.Done(): // the server shut down, or the connection actor failed and was stopped
		result = errors.New("toolgrain: stdio connection stopped after an internal failure")
		if s.eng.Closed() {
			result = ErrServerClosed
		}
	case <-writeFailed:
		result = fmt.Errorf("toolgrain: stdio: write: %w", writeErr)
		closeInput(in)
	}
	close(stop)
	conn.Close()
	<-conn.Done()
	s.closeWriter(w)
	return result
}

// yieldingReader lets the goroutines that are ready run before each read of the input.
// Delivering the lines of one read readies the goroutines that serve them (the connection
// actor's, first), which wait behind the reader on its P; and a read of stdin, a pipe or a
// terminal in blocking mode, keeps that P through the read system call, so that they wait for
// the Go scheduler to take it back or for another thread to steal them: tens of microseconds
// a call. Yielding first, the reader reads again once they ran, or once another P takes it
// up. Measured over stdio (mcpbench, the server's CPU per echo call, legacy era): 105 → 78 µs
// at one call in flight, 25 → 20 µs at 16, 21 → 16 µs at 64; 17 to 33 % more calls a second
// (BENCHMARKS.md, "Reading stdin after the ready goroutines ran").
type yieldingReader struct{ r io.Reader }

func (y yieldingReader) Read(p []byte) (int, error) {
	runtime.Gosched()
	return y.r.Read(p)
}

func closeInput(in io.Reader) {
	if c, ok := in.(io.Closer); ok {
		_ = c.Close()
	}
}

// closeWriter writes the pending answers, waiting at most OutputGrace for a client that
// does not read them.
func (s *Server) closeWriter(w *protocol.StreamWriter) {
	closed := make(chan struct{})
	// Owned by ServeStdio, which waits for it up to the grace; it ends once the writer has
	// written everything, which only out's Write returning can allow.
	go func() {
		_ = w.Close()
		close(closed)
	}()
	grace := s.cfg.Limits.OutputGrace
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-closed:
	case <-timer.C:
		s.eng.Report(fmt.Errorf("stdio: output stalled: %d bytes of answers still unwritten after %s; abandoned", w.Pending(), grace))
	}
}

func (s *Server) readLoop(in io.Reader, conn *engine.Connection, w *protocol.StreamWriter, stop <-chan struct{}, identity *Identity) error {
	stream := stdioStream{w: w}
	lr := protocol.NewLineReader(yieldingReader{in}, s.cfg.Limits.MaxMessageSize)
	for {
		if !s.waitForClient(w, stop) || !conn.WaitForRoom(stop) {
			return nil
		}
		line, err := lr.Next()
		var tooLarge *protocol.MessageTooLargeError
		switch {
		case errors.As(err, &tooLarge):
			stream.Send(protocol.EncodeError(protocol.ID{}, protocol.ErrInvalidRequest("%s", tooLarge.Error())))
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		msg, batch, werr := protocol.DecodeInput(line)
		switch {
		case werr != nil:
			var id protocol.ID
			if msg != nil {
				id = msg.ID
			}
			stream.Send(protocol.EncodeError(id, werr))
		case batch != nil:
			// Served in a 2025-03-26 session, refused in any other.
			conn.DeliverBatch(context.Background(), batch, stream, identity)
		default:
			conn.DeliverWith(context.Background(), msg, stream, identity)
		}
	}
}

// waitForClient applies the slow-consumer policy: while more than MaxOutputBacklog bytes of
// answers wait for the client, read nothing; resume once they have drained to half. It
// reports false when stop was closed first.
func (s *Server) waitForClient(w *protocol.StreamWriter, stop <-chan struct{}) bool {
	high := s.cfg.Limits.MaxOutputBacklog
	if high < 0 || w.Pending() <= high {
		return true
	}
	n := s.outputPauses.Add(1)
	s.cfg.Logger.Warn("client reads its answers too slowly; reading paused",
		zap.Int("backlog_limit", high), zap.Uint64("pauses_total", n))
	return w.WaitPending(high/2, stop)
}
