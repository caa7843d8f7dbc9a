package toolgrain

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/toolgrain/toolgrain/actors"
	"github.com/toolgrain/toolgrain/protocol"
)

// stdioStream sends every answer of a stdio connection to its one writer.
type stdioStream struct{ w *protocol.StreamWriter }

func (s stdioStream) Send(frame []byte) { s.w.Send(frame) }
func (stdioStream) Close()              {}

// ServeStdio serves one MCP connection over newline-delimited JSON-RPC: messages are read from
// in and answers written to out through a single writer. Malformed lines get their JSON-RPC
// error and the stream keeps serving; a line longer than MaxMessageSize is skipped and answered
// with -32600.
//
// It returns nil when in reaches EOF, after cancelling the calls still in flight (they get no
// response) and writing every pending answer. When ctx ends first, it closes the connection the
// same way and returns ctx.Err(); if in is an io.Closer it is closed to unblock the reader,
// otherwise the reading goroutine ends at its next read. Close the server afterwards to flush
// OnError reports and stop the actors.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	w := protocol.NewStreamWriter(out, func(err error) {
		s.eng.Report(fmt.Errorf("stdio: write: %w", err))
	})
	stream := stdioStream{w: w}
	// Over stdio, messages unrelated to any request share the one output.
	conn, err := s.eng.ConnectNotify("stdio", stream)
	if err != nil {
		_ = w.Close()
		if errors.Is(err, actors.ErrClosed) {
			return ErrServerClosed
		}
		return err
	}

	readDone := make(chan error, 1)
	// Owned by ServeStdio, which waits for it unless ctx ends first (see the doc comment); it
	// ends at EOF or at the first read error.
	go func() {
		readDone <- s.readLoop(in, conn, stream)
	}()

	var result error
	select {
	case err := <-readDone:
		if err != nil {
			s.eng.Report(fmt.Errorf("stdio: read: %w", err))
		}
	case <-ctx.Done():
		result = ctx.Err()
		if c, ok := in.(io.Closer); ok {
			_ = c.Close()
		}
	case <-conn.Done(): // the connection actor failed and was stopped
		result = errors.New("toolgrain: stdio connection stopped after an internal failure")
	}
	conn.Close()
	<-conn.Done()
	_ = w.Close()
	return result
}

func (s *Server) readLoop(in io.Reader, conn *actors.Connection, stream actors.Stream) error {
	lr := protocol.NewLineReader(in, s.cfg.MaxMessageSize)
	for {
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
		msg, werr := protocol.Decode(line)
		if werr != nil {
			var id protocol.ID
			if msg != nil {
				id = msg.ID
			}
			stream.Send(protocol.EncodeError(id, werr))
			continue
		}
		conn.Deliver(msg, stream)
	}
}
