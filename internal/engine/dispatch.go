package engine

import (
	"encoding/json"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// What the connection actor does with each message it gets (Receive), and the JSON-RPC methods
// of both eras side by side: handle serves the messages of a legacy session (MCP 2025-11-25
// and the revisions before it: initialize first, then every request on the session's state),
// handleModern the requests of MCP 2026-07-28, each on its own (its envelope says which
// revision, capabilities and log level it has). A method of both eras is served by the same
// function; the era decides the checks before it and the shape of its results (annotation,
// modern.go).
//
//	method                               legacy session (handle)   modern request (handleModern)
//	initialize, ping                     served                    -32601 (not in the revision)
//	server/discover                      -32601                    served
//	tools/list, tools/call               after initialize          served
//	resources/list, templates/list, read after initialize          served
//	resources/subscribe, unsubscribe     after initialize          -32601 (subscriptions/listen)
//	prompts/list, prompts/get            after initialize          served
//	logging/setLevel                     after initialize          -32601 (the envelope's logLevel)
//	completion/complete                  after initialize          served
//	subscriptions/listen                 -32601                    served
//	tasks/get, tasks/update, tasks/cancel -32601                   served (taskrequests.go)
//	a custom method (Config.Methods)     after initialize          served (methods.go)
//
// Either way a request that is not answered at once becomes an actor of its own: tools/call a
// request actor (callTool, request.go), the other handlers an operation (operation.go).

// Receive is the connection actor's one entry: the transport's messages (*inbound, sent by
// the Connection's Deliver functions, handle.go), the ends of its request actors, and its own
// life (passivation, the end of the input, the close grace).
func (c *connectionActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		c.state.pid.Store(ctx.Self())
	case *actor.Stopping, *actor.Restarting:
	case *actor.Stopped:
		if c.passivated {
			return // the connection goes on without an actor
		}
		if c.finishBy != nil {
			c.finishBy.Stop()
		}
		for _, f := range c.children {
			f.slot.release()
		}
		if !c.conn.stateless {
			c.conn.actorStopped()
		}
		c.eng.tel.sessionEnded(c.opened, c.version, c.conn.transport())
		c.eng.forget(c.conn)
		c.conn.closeDone()
	case *passivate:
		c.passivate(ctx)
	case *actor.Terminated:
		c.childEnded(ctx, msg.Who)
	case *inbound:
		c.receiveInbound(ctx, msg)
	case *inboundBatch:
		c.receiveBatch(ctx, msg)
	case *streamGone:
		if key, ok := c.byStream[msg.stream]; ok {
			c.cancelFlight(ctx, key, cancel.ErrCancelledByClient)
		}
	case *inputEnded:
		c.beginClose(ctx)
	case *inputFinished:
		c.beginFinish(ctx)
	case *finishExpired:
		if !c.closing {
			c.log.Warn("end of input: cancelling the requests still in flight after the close grace",
				zap.Int("requests", len(c.children)))
			c.beginClose(ctx)
		}
	case *graceExpired:
		if len(c.children) > 0 {
			c.log.Warn("closing connection with handlers still running after the close grace",
				zap.Int("calls", len(c.children)))
		}
		ctx.Stop(ctx.Self())
	default:
		if !c.receiveSurface(ctx, msg) {
			c.log.Debug("connection: unexpected message", zap.String("type", fmt.Sprintf("%T", msg)))
		}
	}
}

// receiveInbound serves one message a transport delivered, alone or in a batch.
func (c *connectionActor) receiveInbound(ctx actor.Context, in *inbound) {
	c.decoded = &in.call
	c.toolsets = in.toolsets
	s := in.stream
	if in.rec != nil {
		s = c.serving(in)
	}
	if in.modern {
		c.handleModern(ctx, in, s)
	} else {
		c.handle(ctx, in.msg, s, in.identity)
	}
	c.conn.inbox.done(in.cost)
	c.decoded, c.toolsets = nil, nil
	if c.rec != nil {
		c.rec.handled()
		c.rec = nil
	}
}

// handle serves one message of a legacy session: a response to a request a handler sent, a
// notification, or a request of the session era's table.
func (c *connectionActor) handle(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity) {
	switch {
	case m.IsResponse():
		// The answer to a request a handler sent the client.
		c.routeResponse(m)
		s.Close()
		return
	case m.IsNotification():
		c.notification(ctx, m)
		s.Close()
		return
	}
	if c.closing {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidRequest("connection is closing")))
		return
	}
	switch m.Method {
	case protocol.MethodInitialize:
		c.initialize(m, s)
	case protocol.MethodPing:
		c.result(s, m.ID, json.RawMessage(`{}`))
	case protocol.MethodToolsList:
		if c.requireInit(m, s) {
			c.listTools(m, s, caller)
		}
	case protocol.MethodToolsCall:
		if c.requireInit(m, s) {
			c.callTool(ctx, m, s, caller)
		}
	case protocol.MethodResourcesList:
		if c.requireInit(m, s) {
			c.listResources(m, s, caller)
		}
	case protocol.MethodResourcesTemplatesList:
		if c.requireInit(m, s) {
			c.listResourceTemplates(m, s, caller)
		}
	case protocol.MethodResourcesRead:
		if c.requireInit(m, s) {
			c.readResource(ctx, m, s, caller)
		}
	case protocol.MethodResourcesSubscribe:
		if c.requireInit(m, s) {
			c.subscribe(m, s, true)
		}
	case protocol.MethodResourcesUnsubscribe:
		if c.requireInit(m, s) {
			c.subscribe(m, s, false)
		}
	case protocol.MethodPromptsList:
		if c.requireInit(m, s) {
			c.listPrompts(m, s, caller)
		}
	case protocol.MethodPromptsGet:
		if c.requireInit(m, s) {
			c.getPrompt(ctx, m, s, caller)
		}
	case protocol.MethodLoggingSetLevel:
		if c.requireInit(m, s) {
			c.setLevel(m, s)
		}
	case protocol.MethodCompletionComplete:
		if c.requireInit(m, s) {
			c.complete(ctx, m, s, caller)
		}
	default:
		// A custom method (Config.Methods) checks initialize itself (methods.go).
		if !c.customMethod(ctx, m, s, caller) {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrMethodNotFound(m.Method)))
		}
	}
}

// notification serves a legacy notification: notifications/cancelled cancels its request.
func (c *connectionActor) notification(ctx actor.Context, m *protocol.Message) {
	switch m.Method {
	case protocol.MethodInitialized:
	case protocol.MethodCancelled:
		p, err := c.cancelledParams(m)
		if err != nil || p.RequestID.IsZero() {
			return // invalid cancellations are ignored (spec: cancellation)
		}
		if !c.stateless {
			c.cancelFlight(ctx, p.RequestID.Key(), cancel.ErrCancelledByClient)
		}
	}
	// Every other notification is ignored.
}

// requireInit answers a request made before initialize with -32600; it reports whether the
// session is initialized.
func (c *connectionActor) requireInit(m *protocol.Message, s Stream) bool {
	if c.initialized {
		return true
	}
	reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidRequest("%s before initialize", m.Method)))
	return false
}

// handleModern serves one modern request: the envelope's checks first (-32602 for a missing or
// malformed field, -32022 for a version not served), then the method, which must exist in the
// modern revision (-32601 for the removed ones, initialize and ping among them).
func (c *connectionActor) handleModern(ctx actor.Context, in *inbound, s Stream) {
	m := in.msg
	if in.envErr != nil {
		reply(s, protocol.EncodeError(m.ID, in.envErr))
		return
	}
	if werr := in.env.CheckVersion(); werr != nil {
		reply(s, protocol.EncodeError(m.ID, werr))
		return
	}
	if c.closing {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidRequest("connection is closing")))
		return
	}
	c.modern = &modernReq{env: in.env, private: in.identity != nil, toolsets: in.toolsets}
	defer func() { c.modern = nil }()
	caller := in.identity
	switch m.Method {
	case protocol.MethodServerDiscover:
		c.discover(m, s)
	case protocol.MethodToolsList:
		c.listTools(m, s, caller)
	case protocol.MethodToolsCall:
		c.callTool(ctx, m, s, caller)
	case protocol.MethodResourcesList:
		c.listResources(m, s, caller)
	case protocol.MethodResourcesTemplatesList:
		c.listResourceTemplates(m, s, caller)
	case protocol.MethodResourcesRead:
		c.readResource(ctx, m, s, caller)
	case protocol.MethodPromptsList:
		c.listPrompts(m, s, caller)
	case protocol.MethodPromptsGet:
		c.getPrompt(ctx, m, s, caller)
	case protocol.MethodCompletionComplete:
		c.complete(ctx, m, s, caller)
	case protocol.MethodSubscriptionsListen:
		c.listen(m, s, caller)
	case protocol.MethodTasksGet, protocol.MethodTasksUpdate, protocol.MethodTasksCancel:
		c.taskMethod(ctx, m, s, caller)
	default:
		if !c.customMethod(ctx, m, s, caller) {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrMethodNotFound(m.Method)))
		}
	}
}
