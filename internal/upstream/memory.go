package upstream

import (
	"context"
	"errors"
	"sync"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
)

// ErrConnectionClosed is the cause of the end of a connection to a server in the same process
// that was closed, by the gateway or by that server's shutdown.
var ErrConnectionClosed = errors.New("upstream: the in-process connection was closed")

// Memory is the transport to another server in the same process: a connection of its engine,
// with no encoding on the way out beyond the message itself and no I/O. Every request is
// delivered with a stream of its own, so what the server sends about it (progress, log
// messages, its requests to the client) is related to it exactly.
type Memory struct {
	Engine *engine.Engine
}

// Kind returns "memory".
func (Memory) Kind() string { return "memory" }

// Open connects to the engine.
func (m Memory) Open(_ context.Context, h Handler, wg *sync.WaitGroup) (Conn, error) {
	mc := &memConn{h: h, stop: make(chan struct{})}
	conn, err := m.Engine.ConnectNotify("memory", memStream{c: mc})
	if err != nil {
		return nil, err
	}
	mc.conn = conn
	wg.Add(1)
	// Owned by the connection: it ends when the engine's connection has ended, which Close
	// or the engine's shutdown brings about.
	go func() {
		defer wg.Done()
		<-conn.Done()
		h.Closed(ErrConnectionClosed)
	}()
	return mc, nil
}

type memConn struct {
	h    Handler
	conn *engine.Connection
	once sync.Once
	stop chan struct{}
}

// memStream carries the messages the engine sends about one request (related), or, with a zero
// related, those unrelated to any.
type memStream struct {
	c       *memConn
	related protocol.ID
}

func (s memStream) Send(frame []byte) {
	m, werr := protocol.Decode(frame)
	if werr != nil || m == nil {
		return // the engine's own encoding: not expected
	}
	s.c.h.Message(m, s.related)
}

func (memStream) Close() {}

func (c *memConn) Send(out *Outgoing) {
	m, werr := protocol.Decode(out.Bytes())
	if werr != nil || m == nil {
		return
	}
	s := memStream{c: c}
	if m.IsRequest() {
		s.related = m.ID
	}
	c.conn.Deliver(m, s)
}

func (c *memConn) EndStream(protocol.ID) {}
func (c *memConn) SetSession(string)     {}

func (c *memConn) Close() { c.once.Do(c.conn.Close) }
