package toolgrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
)

// ErrClientClosed is returned by the methods of an [InMemoryClient] once its connection has
// ended: the client was closed, or the server shut down.
var ErrClientClosed = errors.New("toolgrain: in-memory connection closed")

// InMemoryClient is an MCP client connected to a [Server] in the same process, with no I/O and
// no goroutine of its own: what it sends goes straight to the server's connection actor, and
// what the server sends waits in the client's memory until it is read. It exists for the host's
// own tests (and for in-process callers): the server treats it as one more connection, with the
// same error model, cancellation and limits as stdio.
//
// Its methods are safe for concurrent use. [InMemoryClient.Call] and the helpers built on it
// ([InMemoryClient.Initialize], [InMemoryClient.CallTool], [InMemoryClient.ListTools]) match
// each response to its request; every other message from the server (progress notifications,
// answers to messages given to [InMemoryClient.Send]) is read with [InMemoryClient.Receive].
// Messages wait unread without limit: a test that ignores them holds them in memory.
type InMemoryClient struct {
	srv      *Server
	conn     *engine.Connection
	identity *Identity // every message's caller; nil for none

	mu      sync.Mutex
	inbox   [][]byte               // server messages not matched to a Call
	waiters map[string]chan []byte // Call's pending requests, by id key
	nextID  int64
	closed  bool
	arrived chan struct{} // size 1: the inbox was empty and is not anymore

	closeOnce sync.Once
}

// ConnectInMemory opens an in-memory connection to s; see [InMemoryClient]. The connection is
// not initialized: call [InMemoryClient.Initialize] first, as an MCP client does. Close it with
// [InMemoryClient.Close]; closing the server closes it too. After [Server.Close] it returns
// [ErrServerClosed]. Its calls have no authenticated caller, as over stdio.
func (s *Server) ConnectInMemory() (*InMemoryClient, error) { return s.ConnectInMemoryAs(nil) }

// ConnectInMemoryAs is [Server.ConnectInMemory] for a caller authenticated as identity, as if a
// token verifier had returned it: handlers find it with tools.IdentityFromContext, tool actors in
// [tools.ActorCall].Identity. It lets a host test its authorisation rules without HTTP. The
// identity must not be modified afterwards.
func (s *Server) ConnectInMemoryAs(identity *Identity) (*InMemoryClient, error) {
	c := &InMemoryClient{
		srv:      s,
		identity: identity,
		waiters:  make(map[string]chan []byte),
		arrived:  make(chan struct{}, 1),
	}
	// Messages unrelated to any request (list_changed, resources/updated) wait in the inbox too.
	conn, err := s.eng.ConnectNotify("memory", memoryStream{c})
	if errors.Is(err, engine.ErrClosed) {
		return nil, ErrServerClosed
	}
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return c, nil
}

// memoryStream is where the server's messages for an in-memory connection go.
type memoryStream struct{ c *InMemoryClient }

func (s memoryStream) Send(frame []byte) { s.c.deliver(frame) }
func (memoryStream) Close()              {}

// deliver routes one message from the server: a response to a pending Call goes to its waiter,
// everything else to the inbox. It never blocks.
func (c *InMemoryClient) deliver(frame []byte) {
	c.mu.Lock()
	if m, err := protocol.Decode(frame); err == nil && m.IsResponse() && !m.ID.IsZero() {
		if w, ok := c.waiters[m.ID.Key()]; ok {
			delete(c.waiters, m.ID.Key())
			c.mu.Unlock()
			w <- frame // buffered: one response per waiter
			return
		}
	}
	c.inbox = append(c.inbox, frame)
	c.mu.Unlock()
	c.signal()
}

func (c *InMemoryClient) signal() {
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

// Send sends one JSON-RPC message, as its raw JSON text, exactly as a client would write it on
// stdio: a request, a notification, a response, a batch of them (served in a 2025-03-26
// session), or something malformed. What the server
// answers is read with [InMemoryClient.Receive]. A message that cannot be parsed, or that is
// larger than the server's MaxMessageSize, is answered with its JSON-RPC error, as on stdio.
// Use string ids, or integers below 1: [InMemoryClient.Call] numbers its requests from 1 up.
//
// Send never blocks; message may be reused once it returns. It returns [ErrClientClosed] after
// the connection ended.
func (c *InMemoryClient) Send(message []byte) error {
	if c.isClosed() {
		return ErrClientClosed
	}
	if len(message) > c.srv.cfg.Limits.MaxMessageSize {
		tooLarge := &protocol.MessageTooLargeError{Limit: c.srv.cfg.Limits.MaxMessageSize}
		c.deliver(protocol.EncodeError(protocol.ID{}, protocol.ErrInvalidRequest("%s", tooLarge.Error())))
		return nil
	}
	msg, batch, werr := protocol.DecodeInput(message)
	switch {
	case werr != nil:
		var id protocol.ID
		if msg != nil {
			id = msg.ID
		}
		c.deliver(protocol.EncodeError(id, werr))
	case batch != nil:
		c.conn.DeliverBatch(context.Background(), batch, memoryStream{c}, c.identity)
	default:
		c.conn.DeliverWith(context.Background(), msg, memoryStream{c}, c.identity)
	}
	return nil
}

// Receive returns the next message from the server that no [InMemoryClient.Call] claimed, as
// raw JSON text, waiting for one until ctx ends. After the connection ended it returns the
// messages still unread, then [io.EOF].
func (c *InMemoryClient) Receive(ctx context.Context) ([]byte, error) {
	for {
		c.mu.Lock()
		if len(c.inbox) > 0 {
			frame := c.inbox[0]
			c.inbox[0] = nil
			c.inbox = c.inbox[1:]
			more := len(c.inbox) > 0
			c.mu.Unlock()
			if more {
				c.signal() // another receiver may be waiting
			}
			return frame, nil
		}
		c.mu.Unlock()
		if c.isClosed() {
			c.mu.Lock()
			empty := len(c.inbox) == 0
			c.mu.Unlock()
			if empty {
				return nil, io.EOF
			}
			continue
		}
		select {
		case <-c.arrived:
		case <-c.conn.Done():
			c.markClosed()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Notify sends a notification: method with params marshalled with encoding/json (nil for
// none). It never blocks.
func (c *InMemoryClient) Notify(method string, params any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	if c.isClosed() {
		return ErrClientClosed
	}
	c.conn.DeliverWith(context.Background(), &protocol.Message{Method: method, Params: raw}, memoryStream{c}, c.identity)
	return nil
}

// Call sends a request (method, with params marshalled with encoding/json; nil for none) and
// waits for its response. It returns the result as raw JSON, or the JSON-RPC error as a
// [*protocol.WireError]. When ctx ends first, Call sends notifications/cancelled for the
// request, as a client that gives up must, and returns ctx.Err(); the server then sends
// nothing for it. It returns [ErrClientClosed] when the connection ends first.
//
// When the server traces ([Config].Telemetry), a span in ctx is linked from the request's
// server span, as an HTTP request's span is; the request's parent is the trace context of its
// params._meta, as over every transport.
func (c *InMemoryClient) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	w := make(chan []byte, 1)
	if c.isClosed() {
		return nil, ErrClientClosed
	}
	c.mu.Lock()
	c.nextID++
	id := protocol.NewIntID(c.nextID)
	c.waiters[id.Key()] = w
	c.mu.Unlock()

	c.conn.DeliverWith(ctx, &protocol.Message{ID: id, Method: method, Params: raw}, memoryStream{c}, c.identity)
	select {
	case frame := <-w:
		m, werr := protocol.Decode(frame)
		switch {
		case werr != nil:
			return nil, werr
		case m.Error != nil:
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		c.forget(id)
		reason := ""
		if cause := context.Cause(ctx); cause != nil {
			reason = cause.Error()
		}
		_ = c.Notify(protocol.MethodCancelled, protocol.CancelledParams{RequestID: id, Reason: reason})
		return nil, ctx.Err()
	case <-c.conn.Done():
		c.forget(id)
		c.markClosed()
		return nil, ErrClientClosed
	}
}

func (c *InMemoryClient) forget(id protocol.ID) {
	c.mu.Lock()
	delete(c.waiters, id.Key())
	c.mu.Unlock()
}

// Initialize performs the MCP handshake of the legacy era: an initialize request for
// [protocol.LatestLegacyVersion], then notifications/initialized, which opens a session. It
// returns the server's initialize result.
func (c *InMemoryClient) Initialize(ctx context.Context) (*protocol.InitializeResult, error) {
	raw, err := c.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{
		ProtocolVersion: protocol.LatestLegacyVersion,
		Capabilities:    json.RawMessage(`{}`),
		ClientInfo:      protocol.Implementation{Name: "toolgrain-in-memory", Version: Version},
	})
	if err != nil {
		return nil, err
	}
	var res protocol.InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("toolgrain: initialize result: %w", err)
	}
	return &res, c.Notify(protocol.MethodInitialized, nil)
}

// CallTool calls the tool name with arguments marshalled with encoding/json (nil for none) and
// returns its result: a success, validation feedback or a failure, all as a result (check
// IsError). An unknown tool or another protocol error is a [*protocol.WireError]. ctx ending
// first cancels the call, as with [InMemoryClient.Call].
func (c *InMemoryClient) CallTool(ctx context.Context, name string, arguments any) (*protocol.CallToolResult, error) {
	args, err := marshalParams(arguments)
	if err != nil {
		return nil, err
	}
	raw, err := c.Call(ctx, protocol.MethodToolsCall, protocol.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	var res protocol.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("toolgrain: tools/call result: %w", err)
	}
	return &res, nil
}

// ListTools lists every tool, following the pages of tools/list.
func (c *InMemoryClient) ListTools(ctx context.Context) ([]protocol.Tool, error) {
	var all []protocol.Tool
	var params protocol.ListToolsParams
	for {
		raw, err := c.Call(ctx, protocol.MethodToolsList, params)
		if err != nil {
			return nil, err
		}
		var page protocol.ListToolsResult
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("toolgrain: tools/list result: %w", err)
		}
		all = append(all, page.Tools...)
		if page.NextCursor == "" {
			return all, nil
		}
		params.Cursor = page.NextCursor
	}
}

// Close ends the connection: the calls still in flight are cancelled (the server sends nothing
// more for them; unlike EOF on stdio, which lets them answer first, since that client still
// reads), and Close waits until the connection's actor has stopped, which the server's
// Limits.HandlerGrace bounds. Messages already received stay readable with
// [InMemoryClient.Receive]. Calling Close again does nothing.
func (c *InMemoryClient) Close() error {
	c.closeOnce.Do(func() {
		c.conn.Close()
		<-c.conn.Done()
		c.markClosed()
	})
	return nil
}

func (c *InMemoryClient) markClosed() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.signal()
}

// isClosed reports whether the connection ended: closed by the client, or stopped by the server.
func (c *InMemoryClient) isClosed() bool {
	select {
	case <-c.conn.Done():
		c.markClosed()
		return true
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// marshalParams encodes params for a message: nil stays absent, a json.RawMessage is used as it
// is.
func marshalParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("toolgrain: marshal params: %w", err)
	}
	return b, nil
}
