package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// The Connection handle: what a transport (stdio, the in-memory client, an HTTP session, the
// HTTP transport's stateless connection) holds of its connection actor, on the transport's
// own goroutines. Its Deliver functions hand each decoded message to the actor as an *inbound
// (dispatch.go takes it from there); Close and Finish end it. Passivation (the actor let go
// while the connection lives on, passivate.go), batches (batch.go) and the inbox's bound
// (WaitForRoom, limits.go) are the handle's too.

// Connection is the handle a transport holds on its connection actor. Its zero value is not
// usable: it is made by the Engine's Connect functions, or opened in place by
// [Engine.OpenIdle]. It must not be copied.
type Connection struct {
	eng    *Engine
	pid    *actor.PID
	done   chan struct{}
	notify Stream // messages unrelated to any request; nil drops them
	inbox  inbox
	// session is its legacy HTTP session id, once named (NameSession), and name its name, which
	// also tells its network.transport (networkTransport): both for logs and telemetry only.
	session atomic.Pointer[string]
	name    string

	// Passivation (passivate.go): the phase of the connection's actor, guarded by pmu, and
	// what a passive connection keeps of it. pid is guarded by pmu too, but on a stateless
	// connection, which never passivates.
	pmu     sync.Mutex
	settled chan struct{} // made by a goroutine waiting for the phase to settle; closed when it does
	kept    *[]any        // broadcasts that came while the phase was settling
	snap    snapshot      // valid while passive or activating
	phase   phase
	// stateless: the connection serves the modern requests of many clients; see
	// [Engine.ConnectStateless].
	stateless bool
	// closeSent and finishSent: Close and Finish did their work (guarded by pmu).
	closeSent, finishSent bool
	// rev is the protocol.Revision its initialize negotiated; 0 before.
	rev atomic.Uint32
	// viewer is the caller of its latest request and the toolsets it chose, whose view a
	// change of the tags is compared in (tags.go); nil before the first.
	viewer atomic.Pointer[viewer]
}

// Revision returns the revision of the legacy session the connection serves, as its initialize
// negotiated it, and 0 before initialize (and on a stateless connection). It never blocks.
func (c *Connection) Revision() protocol.Revision { return protocol.Revision(c.rev.Load()) }

// transport is the connection's network.transport, told by its name.
func (c *Connection) transport() string { return networkTransport(c.name) }

// Connect spawns a connection actor. name is used in logs, and tells telemetry the
// connection's network.transport: "stdio" is a pipe, a name that starts with "http" is TCP.
// Messages unrelated to any request (list_changed, resources/updated, cancellations of requests
// to the client) are dropped; see [Engine.ConnectNotify].
func (e *Engine) Connect(name string) (*Connection, error) { return e.ConnectNotify(name, nil) }

// ConnectNotify spawns a connection actor whose messages unrelated to any request go to notify:
// the stdio output, or a stream of a legacy HTTP session that sends on its standalone GET
// stream while one is open (and drops, or keeps for replay, otherwise). The engine never closes
// notify. name is as for [Engine.Connect].
func (e *Engine) ConnectNotify(name string, notify Stream) (*Connection, error) {
	return e.connect(&Connection{eng: e, notify: notify}, name)
}

// ConnectStateless spawns a connection actor that serves the modern (MCP 2026-07-28) requests
// of any number of clients, delivered with [Connection.DeliverModern]: an HTTP transport needs
// one, not one per client. Request ids may repeat across its clients, so notifications/cancelled
// means nothing on it; a request is cancelled when its client goes away
// ([Connection.StreamGone]). Only the server-wide limit on calls in flight applies to it. name
// is as for [Engine.Connect].
func (e *Engine) ConnectStateless(name string) (*Connection, error) {
	return e.connect(&Connection{eng: e, done: make(chan struct{}), stateless: true}, name)
}

func (e *Engine) connect(c *Connection, name string) (*Connection, error) {
	c.name = name
	pid, err := e.spawnConnection(c, nil)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		// Shutdown began during the spawn: the actor closes at once.
		e.system.Root.Send(pid, &inputEnded{})
		return nil, ErrClosed
	}
	c.pid = pid
	e.conns[c] = struct{}{}
	return c, nil
}

// StreamGone tells a stateless connection that the client of the stream s went away: the
// request s carries is cancelled, exactly as notifications/cancelled cancels one (no response,
// no report). Streams of finished requests are ignored. It never blocks.
func (c *Connection) StreamGone(s Stream) {
	c.send(&streamGone{stream: s})
}

// Deliver hands one decoded message to the connection; its answers go to s. It never blocks;
// a reader that must bound what it has delivered calls [Connection.WaitForRoom] first.
func (c *Connection) Deliver(msg *protocol.Message, s Stream) {
	c.DeliverWith(context.Background(), msg, s, nil)
}

// DeliverWith is [Connection.Deliver] for a message whose sender the transport authenticated:
// a tools/call it starts runs with id in its handler's context (tools.IdentityFromContext). A
// nil id is Deliver. The identity goes nowhere else: not into logs, not into diagnostics.
//
// ctx is the transport's context for the message, such as an HTTP request's; only its values
// are used, never its cancellation: the span it carries, if any, is linked from the message's
// server span.
func (c *Connection) DeliverWith(ctx context.Context, msg *protocol.Message, s Stream, id *tools.Identity) {
	cost := inboundCost(msg)
	c.inbox.add(cost)
	in := newInbound(msg, s, id)
	in.cost = cost
	in.toolsets = ToolsetsFromContext(ctx)
	c.noteViewer(id, in.toolsets)
	c.deliver(ctx, in)
}

// DeliverModern hands a modern request whose envelope the transport has read and checked (an
// HTTP POST) to the connection, as [Connection.DeliverWith] does.
func (c *Connection) DeliverModern(ctx context.Context, msg *protocol.Message, env *protocol.Envelope, s Stream, id *tools.Identity) {
	cost := inboundCost(msg)
	c.inbox.add(cost)
	in := &inbound{msg: msg, stream: s, identity: id, modern: true, env: env, cost: cost}
	in.toolsets = ToolsetsFromContext(ctx)
	in.decode()
	c.deliver(ctx, in)
}

// deliver starts the message's telemetry, when there is any, and sends it to the connection
// actor.
func (c *Connection) deliver(ctx context.Context, in *inbound) {
	if t := c.eng.tel; t != nil && !in.msg.IsResponse() {
		in.rec = t.receive(ctx, c, in)
	}
	c.send(in)
}

// NameSession tells the connection the id of the legacy HTTP session it serves, for the
// mcp.session.id of its messages' spans. A transport calls it before delivering the session's
// first message.
func (c *Connection) NameSession(id string) { c.session.Store(&id) }

// Close tells the connection that its input ended: every call in flight is cancelled and the
// connection actor stops once their handlers returned (or after [Config].HandlerGrace). It does not
// wait; see [Connection.Done].
func (c *Connection) Close() {
	c.stop(&inputEnded{}, &c.closeSent)
}

// stop sends msg, which ends the connection, to its actor, once (sent says whether it was); a
// passive connection (which has nothing in progress) ends at once.
func (c *Connection) stop(msg any, sent *bool) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if *sent {
		return
	}
	*sent = true
	if c.stateless || !c.closePassive() {
		c.eng.system.Root.Send(c.pid, msg)
	}
}

// Finish tells the connection that its input reached its end cleanly (a stdio client closed
// its side at EOF): no message follows, but the client still reads its answers. The calls and
// other requests in flight go on and are answered; open listen streams (subscriptions/listen,
// which never end by themselves) end at once with the result that ends them gracefully;
// requests to the client (sampling, elicitation, roots) fail with client.ErrConnectionClosed, since
// no answer can come. The connection actor stops once nothing is in flight. After
// [Config].EndOfInputGrace, what is still in flight is cancelled as by [Connection.Close], which
// also cuts the wait short at any time. It does not wait; see [Connection.Done].
func (c *Connection) Finish() {
	c.stop(&inputFinished{}, &c.finishSent)
}

// Done is closed when the connection has ended (its actor stopped for good).
func (c *Connection) Done() <-chan struct{} {
	if c.stateless {
		return c.done // made with the connection: it is read on every modern request
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{}) // made when first asked for: a passive session may never be
	}
	return c.done
}

// closedChan is the Done of a connection that ended before anyone asked for it.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// closeDone closes Done; it runs once, when the connection ends.
func (c *Connection) closeDone() {
	if c.stateless {
		close(c.done)
		return
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
}

func (e *Engine) forget(c *Connection) {
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
}
