// Package upstream is the gateway's MCP client: one actor per mounted server owns the
// connection to it (a process over stdio, another server in the same process, Streamable HTTP
// or the old HTTP+SSE transport), opens it and opens it again when it is lost, speaks either era
// of the protocol to it (an initialize session up to 2025-11-25, or stateless 2026-07-28
// requests), lists its components, and carries each proxied call: the request, its progress,
// log messages and the upstream's requests to the client of the call, its cancellation, and
// its answer, of which nothing reaches the caller after the call was given up.
//
// Nothing in this package blocks an actor: transports write without waiting (a stdio pipe at
// once when it has room, HTTP from goroutines of their own) and hand what they read to the
// actor as messages or straight to the caller of a call, whose Caller gets the outcome.
package upstream

import (
	"context"
	"sync"

	"github.com/toolgrain/toolgrain/protocol"
)

// Outgoing is one message for the upstream.
type Outgoing struct {
	// Frame is the encoded JSON-RPC message; nil for a caller's request, which enc encodes where
	// the transport needs it (see Bytes, AppendTo).
	Frame []byte
	enc   interface{ appendFrame(b []byte) []byte }
	// ID is the id of a request, or of the request a response answers; zero for a
	// notification.
	ID protocol.ID
	// Response says that Frame answers a request of the upstream.
	Response bool
	// Method is the method of a request or a notification.
	Method string
	// Name is params.name of tools/call and prompts/get, params.uri of resources/read: what
	// the Mcp-Name header of a modern HTTP request carries.
	Name string
	// Modern says that the message is of the 2026-07-28 era.
	Modern bool
	// Version is the protocol version of the connection, for the MCP-Protocol-Version header.
	Version string
	// Params are the Mcp-Param-{Name} headers of a modern HTTP tools/call, by Name: the
	// arguments its tool's input schema annotates with x-mcp-header.
	Params map[string]string
}

// Bytes returns the encoded message.
func (o *Outgoing) Bytes() []byte {
	if o.Frame == nil && o.enc != nil {
		o.Frame = o.enc.appendFrame(nil)
	}
	return o.Frame
}

// AppendTo appends the encoded message to b: a stdio connection encodes a caller's request
// straight into its own buffer.
func (o *Outgoing) AppendTo(b []byte) []byte {
	if o.Frame == nil && o.enc != nil {
		return o.enc.appendFrame(b)
	}
	return append(b, o.Frame...)
}

// Conn is one open connection to an upstream server. Its methods never block.
type Conn interface {
	// Send writes a message, or queues it for a goroutine of the connection's; it never waits.
	Send(out *Outgoing)
	// EndStream closes the stream that carries the answer to the request id, where the
	// transport gives each request a stream of its own (Streamable HTTP): the modern era's
	// cancellation. Elsewhere it does nothing.
	EndStream(id protocol.ID)
	// SetSession tells an HTTP transport the session id the upstream gave at initialize.
	SetSession(id string)
	// Close ends the connection. Handler.Closed is called once, when it has ended (also
	// when it ended on its own, the upstream process exiting or the stream breaking).
	Close()
}

// Handler receives what a connection reads. Its methods must not block: they run on the
// transport's goroutines, and hand the message to the connection's actor.
type Handler interface {
	// Message is one message from the upstream. related is the id of the request whose
	// stream carried it, when the transport knows it (an HTTP POST's stream, a request to a
	// server in the same process); zero otherwise.
	Message(m *protocol.Message, related protocol.ID)
	// Result hands over the result of the request whose id key is key (an integer's JSON
	// text), read from a buffer the transport reuses once Result returns, when that request
	// is a caller's call in flight, and reports whether it did; otherwise the transport
	// decodes the message and gives it to Message. It spares a stdio connection's reader the
	// message's decoding and copy.
	Result(key, result []byte) bool
	// Closed says that the connection ended, and why.
	Closed(err error)
}

// Transport opens connections to one upstream server.
type Transport interface {
	// Kind names the transport in logs and telemetry: "stdio", "memory", "http" or "sse".
	Kind() string
	// Open connects to the upstream. It may block (a process starting, a TCP connection);
	// it is called off the actor. Every goroutine the connection starts is counted in wg,
	// which the owner waits on after closing it.
	Open(ctx context.Context, h Handler, wg *sync.WaitGroup) (Conn, error)
}
