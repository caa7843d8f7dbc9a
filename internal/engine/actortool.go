package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// Calls of actor-backed tools (tools.ActorHandler). The request actor sends the tool's actor a
// *tools.ActorCall with Request and waits for the reply as an ordinary message, next to its
// timer, the connection's cancelCall and the Terminated of the actor it watches; nothing ever
// blocks. The message contract is documented on tools.ActorHandler.

type (
	// actorCrashed: supervisor → request. The tool actor the engine spawned panicked on this
	// request's ActorCall, and is being restarted. No reply.
	actorCrashed struct {
		pid    *actor.PID
		reason any
	}
	// spawnActorTools: engine → supervisor (RequestFuture). Spawn an actor for every tool of
	// set defined by Props that has none yet; the reply is an *actorToolsSpawned.
	spawnActorTools struct{ set *tools.Set }
	// actorToolsSpawned: supervisor → engine. err is the first spawn failure, or nil.
	actorToolsSpawned struct{ err error }
	// actorCallAsked: handler goroutine → request. A middleware's next asks for the call to
	// be sent to the tool's actor; the reply (the actor's result or error) goes to reply.
	actorCallAsked struct {
		req   *tools.Request
		reply chan actorOutcome // size 1
	}
	// actorCallAbandoned: handler goroutine → request. The context of a next that asked for
	// the actor's reply ended before it came: stop waiting for it, and tell the actor.
	actorCallAbandoned struct{ cause error }
)

// actorOutcome is the reply of a tool actor, for a middleware's next: the result as the actor
// sent it (Compiled.Run checks it), or the failure.
type actorOutcome struct {
	result *tools.Result
	err    error
}

// actorTools are the actors the engine spawned from Props for actor-backed tools.
type actorTools struct {
	// mu guards spawned: the supervisor writes it, request actors read it.
	mu      sync.RWMutex
	spawned map[string]*actor.PID // by tool name
	// names maps a spawned actor's PID id to its tool name; supervisor only.
	names map[string]string
}

// prepareEmbedding settles what the engine needs for embedding before any actor starts: the
// metrics recorder, and a check of the actor-backed tools.
func (e *Engine) prepareEmbedding() error {
	e.metrics = e.cfg.Metrics
	if e.metrics == nil {
		e.metrics = metrics.Nop{}
	}
	return checkActorTools(e.cfg.Tools, e.system)
}

// checkActorTools reports an actor-backed tool whose actor lives on another actor system than
// the engine's: its messages would go to dead letters.
func checkActorTools(set *tools.Set, system *actor.ActorSystem) error {
	for _, t := range set.List() {
		h, ok := t.Def().Handler.(*tools.ActorHandler)
		if ok && h.System() != nil && h.System() != system {
			return fmt.Errorf("tool %q: its actor lives on another actor system than the server's; set the server's ActorSystem to it", t.Name())
		}
	}
	return nil
}

// startActorTools checks the actor-backed tools of set and has the supervisor spawn an actor
// for each one defined by Props that has none yet. It blocks until they are spawned; call it
// from outside any actor (Start, or when tools are added at run time).
func (e *Engine) startActorTools(set *tools.Set) error {
	if err := checkActorTools(set, e.system); err != nil {
		return err
	}
	need := false
	for _, t := range set.List() {
		if h, ok := t.Def().Handler.(*tools.ActorHandler); ok && h.Props() != nil {
			need = true
			break
		}
	}
	if !need {
		return nil
	}
	res, err := e.system.Root.RequestFuture(e.supervisor, &spawnActorTools{set: set}, defaultActorReplyTimeout).Result()
	if err != nil {
		return fmt.Errorf("actors: spawn tool actors: %w", err)
	}
	return res.(*actorToolsSpawned).err
}

// receive handles the supervisor's spawnActorTools and reports whether the message was one.
func (a *actorTools) receive(ctx actor.Context) bool {
	m, ok := ctx.Message().(*spawnActorTools)
	if !ok {
		return false
	}
	ctx.Respond(&actorToolsSpawned{err: a.spawn(ctx, m.set)})
	return true
}

// spawn spawns one actor for every tool of set defined by Props that has none yet, as children
// of the supervisor (ctx), named "tool-<name>" under it. It returns the first failure.
func (a *actorTools) spawn(ctx actor.Context, set *tools.Set) error {
	var first error
	for _, t := range set.List() {
		h, ok := t.Def().Handler.(*tools.ActorHandler)
		if !ok || h.Props() == nil {
			continue
		}
		a.mu.RLock()
		_, done := a.spawned[t.Name()]
		a.mu.RUnlock()
		if done {
			continue
		}
		pid, err := spawnChild(ctx, h.Props(), "tool-"+t.Name())
		if err != nil {
			if first == nil {
				first = fmt.Errorf("tool %q: spawn its actor: %w", t.Name(), err)
			}
			continue
		}
		a.mu.Lock()
		if a.spawned == nil {
			a.spawned = make(map[string]*actor.PID)
			a.names = make(map[string]string)
		}
		a.spawned[t.Name()] = pid
		a.names[pid.Id] = t.Name()
		a.mu.Unlock()
	}
	return first
}

// spawnChild is ctx.SpawnNamed that turns protoactor's panic on props it cannot spawn as a
// child (a guardian strategy) into an error.
func spawnChild(ctx actor.Context, props *actor.Props, name string) (pid *actor.PID, err error) {
	defer func() {
		if v := recover(); v != nil {
			pid, err = nil, fmt.Errorf("%v", v)
		}
	}()
	return ctx.SpawnNamed(props, name)
}

// backed reports whether t is an actor-backed tool.
func (a *actorTools) backed(t *tools.Compiled) bool {
	_, ok := t.Def().Handler.(*tools.ActorHandler)
	return ok
}

// target returns the actor that runs the calls of t, or nil when t has a Go handler.
func (a *actorTools) target(t *tools.Compiled) *actor.PID {
	h, ok := t.Def().Handler.(*tools.ActorHandler)
	if !ok {
		return nil
	}
	if h.Props() == nil {
		// A PID, or the pick's choice; nil (no actor) runs Handle, which fails with ErrNoActor.
		return h.Target()
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.spawned[t.Name()] // nil if never spawned: the call then fails as a Go handler would
}

// handleFailure is the supervisor's decision for a spawned tool actor that panicked: the
// request actor whose call it was handling is told (its call fails), and the actor is
// restarted with its mailbox kept, so the calls queued behind the failing one still run. It
// reports whether child was such an actor.
func (a *actorTools) handleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, reason, message any, log *zap.Logger) bool {
	name, ok := a.names[child.Id] // written on this same supervisor goroutine
	if !ok {
		return false
	}
	log.Warn("tool actor panicked; restarting it", zap.String("tool", name), zap.String("actor", child.Id), zap.Any("reason", reason))
	_, msg, sender := actor.UnwrapEnvelope(message)
	if call, ok := msg.(*tools.ActorCall); ok {
		to := call.ReplyTo
		if to == nil {
			to = sender
		}
		if to != nil {
			system.Root.Send(to, &actorCrashed{pid: child, reason: reason})
		}
	}
	sup.RestartChildren(child)
	return true
}

// actorCallState is a request actor's state for a call of an actor-backed tool.
type actorCallState struct {
	target       *actor.PID      // the tool's actor, once the call was sent to it
	watching     bool            // watching target
	actorTimeout time.Duration   // the call's timeout
	progress     context.Context // carries the progress sink, when the client asked for progress
	stray        string          // type of the last message outside the contract, for diagnosis
	// Under middleware (bridged): the call runs on a handler goroutine as a Go handler's does,
	// and the middleware's next asks this actor to send it to the tool's actor (actorCallAsked);
	// the reply goes back to it instead of to the client.
	bridged     bool
	bridgeTo    *actor.PID        // the tool's actor, chosen when the call started
	bridgeReply chan actorOutcome // where the reply of the call in flight goes; nil when none
}

// actorTimeoutOf is the timeout of a call of the actor-backed tool t: its own, or
// tools.DefaultActorTimeout.
func actorTimeoutOf(t *tools.Compiled) time.Duration {
	if d := t.Def().Timeout; d > 0 {
		return d
	}
	return tools.DefaultActorTimeout
}

// runOnActor sends the call to the tool's actor and starts waiting for its reply.
func (r *requestActor) runOnActor(ctx actor.Context, target *actor.PID) {
	r.phase = phaseRunning
	r.hctx = r.call.Context()
	r.actorTimeout = actorTimeoutOf(r.tool)
	self, root := ctx.Self(), ctx.ActorSystem().Root
	r.timer = time.AfterFunc(r.actorTimeout, func() { root.Send(self, &callTimedOut{}) })
	if token := progressToken(r.meta); token != nil {
		r.progress = tools.WithProgress(r.call.Context(), progressSender(r.stream, r.call, token, r.eng.cfg.ProgressInterval, r.peer.noProgressMessage()))
	}
	r.sendActorCall(ctx, target, &tools.Request{Tool: r.tool.Name(), Arguments: r.args, Meta: r.meta, Identity: r.identity},
		time.Now().Add(r.actorTimeout))
}

// runBridged starts the call of an actor-backed tool whose calls pass through middleware: the
// middleware runs on a handler goroutine, as for a Go handler, and its next comes back here
// (actorCallAsked) to send the call to target.
func (r *requestActor) runBridged(ctx actor.Context, target *actor.PID) {
	r.bridged, r.bridgeTo = true, target
	r.runGo(ctx)
}

// askActor is a middleware's next for an actor-backed tool: it has the request actor self send
// the call and waits for the reply, or for ctx to end. It runs on the handler goroutine.
func askActor(root *actor.RootContext, self *actor.PID) func(context.Context, *tools.Request) (*tools.Result, error) {
	return func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		reply := make(chan actorOutcome, 1)
		root.Send(self, &actorCallAsked{req: req, reply: reply})
		select {
		case o := <-reply:
			return o.result, o.err
		case <-ctx.Done():
			root.Send(self, &actorCallAbandoned{cause: context.Cause(ctx)})
			return nil, context.Cause(ctx)
		}
	}
}

// actorCallAsked sends the call a middleware's next asked for, or answers at once when it
// cannot be sent.
func (r *requestActor) askedActor(ctx actor.Context, msg *actorCallAsked) {
	switch {
	case r.phase != phaseRunning:
		msg.reply <- actorOutcome{err: context.Cause(r.hctx)}
	case r.target != nil:
		msg.reply <- actorOutcome{err: fmt.Errorf("tool %q: a middleware called next again before the actor replied", r.tool.Name())}
	case r.bridgeTo == nil:
		// No actor (a pick that named none, a spawn that failed): as without middleware.
		msg.reply <- actorOutcome{err: tools.ErrNoActor}
	default:
		r.bridgeReply = msg.reply
		r.actorTimeout = actorTimeoutOf(r.tool)
		deadline, ok := r.hctx.Deadline()
		if !ok {
			deadline = time.Now().Add(r.actorTimeout)
		}
		req := *msg.req
		if req.Tool == "" {
			req.Tool = r.tool.Name()
		}
		r.sendActorCall(ctx, r.bridgeTo, &req, deadline)
	}
}

// deliver ends the wait for the actor's reply: the outcome goes to the middleware's next.
func (r *requestActor) deliver(ctx actor.Context, res *tools.Result, err error) {
	r.unwatch(ctx) // the call's span ends before its outcome goes on
	r.bridgeReply <- actorOutcome{result: res, err: err}
	r.bridgeReply = nil
	r.target = nil
}

// sendActorCall sends the call req to the tool's actor target, watching it.
func (r *requestActor) sendActorCall(ctx actor.Context, target *actor.PID, req *tools.Request, deadline time.Time) {
	self := ctx.Self()
	r.target = target
	call := &tools.ActorCall{
		ID:        callID(self),
		Tool:      req.Tool,
		Arguments: req.Arguments,
		Meta:      req.Meta,
		Identity:  req.Identity,
		Deadline:  deadline,
		Progress:  r.progress != nil,
		ReplyTo:   self,
	}
	ctx.Watch(target)
	r.watching = true
	if span := r.rec().beginPhase(spanActorCall); span != nil {
		// The call's trace context travels in the message header, as protoactor's own tracing
		// carries it: a host actor reads it with ctx.MessageHeader().
		h := propagation.MapCarrier{}
		r.eng.tel.prop.Inject(trace.ContextWithSpan(r.rec().context(), span), h)
		ctx.Send(target, &actor.MessageEnvelope{Header: map[string]string(h), Message: call, Sender: self})
		return
	}
	ctx.Request(target, call)
}

// receiveFromActor handles the messages of a call of an actor-backed tool and reports whether
// it did; everything else goes on to Receive's own switch.
func (r *requestActor) receiveFromActor(ctx actor.Context) bool {
	if _, ok := ctx.Message().(*actor.Stopping); ok {
		r.unwatch(ctx) // stopped from outside (the connection's close grace ran out)
		return false
	}
	if r.phase != phaseRunning {
		return false
	}
	name := r.tool.Name()
	if r.bridged {
		return r.receiveBridged(ctx, name)
	}
	// Every case that ends the call first stops watching the actor (unwatch), which ends the
	// call's span: the call is over once its reply (or its failure) is in, and the span must
	// have ended before the request's, which ends as the answer is queued.
	switch msg := ctx.Message().(type) {
	case *actor.Started, *actor.Stopped, *actor.Restarting:
		return false
	case *cancelCall:
		// The call is silenced already: nothing will be sent. Stop waiting, and tell the actor.
		r.unwatch(ctx)
		r.settle(metrics.Cancelled)
		r.cancelActor(ctx, r.call.Cause())
	case *callTimedOut:
		r.unwatch(ctx)
		err := fmt.Errorf("tool %q: %w after %s", name, ErrTimeout, r.actorTimeout)
		if r.stray != "" {
			err = fmt.Errorf("%w; the actor sent %s, which is not a reply of the contract", err, r.stray)
		}
		r.fail(err)
		r.cancelActor(ctx, err)
	case *actor.Terminated:
		if !msg.Who.Equal(r.target) {
			return false
		}
		r.watching = false
		r.unwatch(ctx)
		r.fail(&tools.ActorStoppedError{Tool: name, PID: r.target, Reason: terminatedReason(msg.Why)})
	case *actor.DeadLetterResponse:
		r.unwatch(ctx)
		r.fail(&tools.ActorStoppedError{Tool: name, PID: r.target, Reason: "dead letter"})
	case *actorCrashed:
		r.unwatch(ctx)
		r.fail(&tools.ActorPanicError{Tool: name, PID: msg.pid, Value: msg.reason})
	case *tools.ActorProgress:
		if r.progress != nil {
			// Progress that breaks the rules (not increasing, not finite) is dropped, as
			// ReportProgress drops it for a Go handler.
			_ = tools.ReportProgress(r.progress, msg.Progress, msg.Total, msg.Message)
		}
		return true // the call goes on
	case *tools.ActorResult, *tools.ActorError, error:
		r.unwatch(ctx)
		res, err := tools.ReadActorReply(name, msg)
		var out *protocol.CallToolResult
		if err == nil {
			out, err = r.tool.Complete(res)
		}
		r.answer(&handlerDone{result: out, err: err})
	default:
		r.stray = fmt.Sprintf("%T", msg)
		r.eng.log.Debug("request: message outside the actor-tool contract",
			zap.String("tool", name), zap.String("type", r.stray))
		return false
	}
	r.finish(ctx)
	return true
}

// receiveBridged is receiveFromActor under middleware: the actor's reply, or its failure, goes
// to the middleware's next; a cancellation or the timeout tells the actor, then ends the call as
// for a Go handler.
func (r *requestActor) receiveBridged(ctx actor.Context, name string) bool {
	switch msg := ctx.Message().(type) {
	case *cancelCall, *callTimedOut:
		// The handler's context ends (or is ended by the timeout's case): its next returns.
		cause := r.call.Cause()
		if _, timedOut := msg.(*callTimedOut); timedOut {
			cause = r.timeoutError()
		}
		r.cancelActor(ctx, cause)
		r.unwatch(ctx)
		r.target = nil
		return false
	case *actorCallAbandoned:
		r.cancelActor(ctx, msg.cause)
		r.unwatch(ctx)
		r.target, r.bridgeReply = nil, nil
	case *actor.Terminated:
		if !msg.Who.Equal(r.target) {
			return false
		}
		r.watching = false
		r.deliver(ctx, nil, &tools.ActorStoppedError{Tool: name, PID: r.target, Reason: terminatedReason(msg.Why)})
	case *actor.DeadLetterResponse:
		r.deliver(ctx, nil, &tools.ActorStoppedError{Tool: name, PID: r.target, Reason: "dead letter"})
	case *actorCrashed:
		r.deliver(ctx, nil, &tools.ActorPanicError{Tool: name, PID: msg.pid, Value: msg.reason})
	case *tools.ActorProgress:
		if r.progress != nil {
			_ = tools.ReportProgress(r.progress, msg.Progress, msg.Total, msg.Message)
		}
	case *tools.ActorResult, *tools.ActorError, error:
		res, err := tools.ReadActorReply(name, msg)
		r.deliver(ctx, res, err)
	case *handlerDone, *actorCallAsked, *inputRequired, *taskWanted,
		*actor.Started, *actor.Stopped, *actor.Restarting:
		return false // the request actor's own
	default:
		r.stray = fmt.Sprintf("%T", msg)
		r.eng.log.Debug("request: message outside the actor-tool contract",
			zap.String("tool", name), zap.String("type", r.stray))
		return false
	}
	return true
}

// cancelActor tells the tool's actor that the engine no longer waits for the call.
func (r *requestActor) cancelActor(ctx actor.Context, cause error) {
	if cause == nil {
		cause = errors.New("call ended")
	}
	ctx.Send(r.target, &tools.ActorCancel{ID: callID(ctx.Self()), Cause: cause})
}

// callID is the ActorCall.ID of the call of the request actor self: its id, unique in its actor
// system; on a system with remote (a cluster member), prefixed with the system's address, so
// that it is unique across the cluster, where a tool actor may serve the calls of every member.
func callID(self *actor.PID) string {
	if self.Address == "" || self.Address == "nonhost" {
		return self.Id
	}
	return self.Address + "/" + self.Id
}

// unwatch stops watching the tool's actor, whose call is over. A stopped watcher stays on the
// watched actor's list, so a long-lived host actor would otherwise collect one entry per call.
func (r *requestActor) unwatch(ctx actor.Context) {
	r.rec().endPhase()
	if r.watching {
		r.watching = false
		ctx.Unwatch(r.target)
	}
}

func terminatedReason(why actor.TerminatedReason) string {
	switch why {
	case actor.TerminatedReason_NotFound:
		return "not found"
	case actor.TerminatedReason_AddressTerminated:
		return "address terminated"
	default:
		return "stopped"
	}
}
