package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/internal/faults"
	"github.com/toolgrain/toolgrain/internal/toolctx"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// FailedText is the only text a client ever sees for an unexpected failure.
const FailedText = "Tool execution failed"

// failedResult is the public result of every unexpected failure: no detail, no structuredContent.
var failedResult = json.RawMessage(`{"content":[{"type":"text","text":"` + FailedText + `"}],"isError":true}`)

// ErrTimeout is the error onError receives when a call runs past its tool's Timeout.
var ErrTimeout = errors.New("tool call timed out")

// callSpec is everything a request actor needs; it is built by the connection actor and never
// mutated.
type callSpec struct {
	eng     *Engine
	tool    *tools.Compiled
	toolPID *actor.PID // nil when the tool has no concurrency limit
	id      protocol.ID
	args    json.RawMessage
	meta    json.RawMessage
	call    *cancel.Call
	stream  Stream
	peer    *callPeer // the call's client: logs and requests to it
	// identity is the authenticated caller, nil when the transport has none; it only goes
	// into the handler's context.
	identity *tools.Identity
	slot     *callSlot // the call's place under the limits on calls in flight
	// ann is what the call's revision makes of its results (see connectionActor.annotation).
	ann *protocol.Annotation
	// task says that the call runs as a task (taskrequests.go); nil for an ordinary call.
	task *taskPlan
}

// callTool is the connection actor's side of a tools/call, in both eras: the checks it answers
// at once (bad params, an unknown or invisible tool, a missing scope, an id in use, a task that
// cannot be made, a modern input round that does not hold, a limit on calls in flight), then
// the call's flight in the connection's table and its request actor.
func (c *connectionActor) callTool(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity) {
	p, err := c.callParams(m)
	if err != nil || p.Name == "" {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("tools/call needs params with a string name")))
		return
	}
	snap := c.eng.reg.tools.Load()
	tool, ok := c.eng.lookupTool(snap, p.Name, c.viewer(caller))
	if !ok {
		// None has that name, or it is invisible to the caller: the same answer.
		reply(s, protocol.EncodeError(m.ID, errUnknownTool(p.Name)))
		return
	}
	if missing := tool.MissingScopes(caller); missing != nil {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInsufficientScope(tool.Name(), missing)))
		return
	}
	if c.idBusy(m, s) {
		return
	}
	plan, werr := c.planTask(tool, caller)
	if werr != nil {
		reply(s, protocol.EncodeError(m.ID, werr))
		return
	}
	var input *callInput
	if c.modern != nil {
		var werr *protocol.WireError
		if input, werr = c.inputFor(m, protocol.MethodToolsCall, tool.Name(), p.Arguments, p.InputParams, caller); werr != nil {
			reply(s, protocol.EncodeError(m.ID, werr))
			return
		}
	}
	slot := c.admit(m, s)
	if slot == nil {
		return
	}
	f := &flight{call: cancel.New(c.rec.context()), slot: slot}
	c.track(m, s, f)
	spec := &callSpec{
		eng:     c.eng,
		tool:    tool,
		toolPID: snap.pids[tool.Name()],
		id:      m.ID,
		args:    p.Arguments,
		meta:    p.Meta,
		call:    f.call,
		stream:  s,
		peer:    c.newPeer(f.call, s, input),
		slot:    slot,
		ann:     c.annotation(false),
		task:    plan,
	}
	spec.identity = caller
	spec.peer.taskable = plan != nil && plan.deferred
	f.pid = c.spawnRequest(ctx, spec)
	c.addChild(f)
}

// spawnRequest spawns the request actor of spec. One Props serves all the connection's
// request actors: protoactor calls its producer inside Spawn, on this actor's goroutine, and
// never again for a request actor, which HandleFailure stops rather than restarts; so the
// producer takes the spec the connection has just set.
func (c *connectionActor) spawnRequest(ctx actor.Context, spec *callSpec) *actor.PID {
	if c.reqProps == nil {
		// protoactor makes the mailbox right after the actor, in the same Spawn.
		c.reqProps = actor.PropsFromProducer(func() actor.Actor {
			spec := c.nextSpec
			c.nextSpec = nil
			c.nextActor = newRequestActor(spec)
			return c.nextActor
		}, actor.WithDispatcher(c.eng.dispatcher), actor.WithMailbox(func() actor.Mailbox {
			a := c.nextActor
			c.nextActor = nil
			if a == nil {
				// Spawn makes the actor first: a mailbox that is not the actor's own would take
				// no postHere, so say so rather than go on without it.
				panic("engine: protoactor made a request actor's mailbox before the actor")
			}
			a.mailbox.init(c.eng.dispatcher) // in the actor's own allocation
			return &a.mailbox
		}))
	}
	c.nextSpec = spec
	return ctx.Spawn(c.reqProps)
}

// request phases.
const (
	phaseStarting = iota // validating
	phaseWaiting         // asked the tool actor for a run slot
	phaseRunning         // the handler goroutine runs
	phaseDraining        // answered or silenced; waiting for the handler goroutine to return
)

// requestActor owns one tools/call from start to finish: validation, admission, the handler
// goroutine, the response, the failure report, and the decision to stay silent after a
// cancellation (through its cancel.Call). It stops itself once it has answered (or been
// silenced) and its handler goroutine has returned, so the goroutine never outlives its owner.
type requestActor struct {
	*callSpec
	phase    int
	acquired bool // asked the tool actor for a slot (and must release it)
	timer    *time.Timer
	stopHdlr context.CancelFunc // cancels the handler context of a tool with a timeout; nil otherwise
	hctx     context.Context    // the handler's context
	// askedInput: the call was answered input_required (or with the task its handler asked
	// for); the handler's return is expected and dropped.
	askedInput bool
	// startedCall is the call a CallStarter started (mount.go), until its outcome; nil
	// otherwise. callDone and mailbox are what CallDone needs, on another goroutine.
	startedCall StartedCall
	callDone    atomic.Bool
	// mailbox is the actor's: the goroutine that brings a handler's outcome posts it there
	// and takes the actor's next step itself (requestMailbox).
	mailbox requestMailbox

	callMetrics    // what the call reports to the engine's metrics (metrics.go)
	actorCallState // the call of an actor-backed tool (actortool.go)
	taskCallState  // the task the call becomes (taskrequests.go)
}

func newRequestActor(spec *callSpec) *requestActor { return &requestActor{callSpec: spec} }

// rec is the call's telemetry, which its traced stream carries; nil when there is none.
func (r *requestActor) rec() *served { return recordOf(r.stream) }

func (r *requestActor) Receive(ctx actor.Context) {
	if r.target != nil && r.receiveFromActor(ctx) {
		return
	}
	if r.task != nil && r.receiveTask(ctx) {
		return
	}
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		faults.Check(faults.RequestStart, r.tool.Name())
		r.peer.owner = ctx.Self()
		r.start(ctx)
	case *inputRequired:
		if r.phase == phaseRunning && r.respondAs(msg.frame, metrics.InputRequired) {
			r.askedInput = true
			r.phase = phaseDraining // the answer cancelled the handler's context
			r.abandonStarted()
		}
	case *slotGranted:
		if r.phase != phaseWaiting {
			return
		}
		r.rec().endPhase()
		if r.call.Silenced() {
			r.finish(ctx)
			return
		}
		r.run(ctx)
	case *actorCallAsked:
		r.askedActor(ctx, msg)
	case *actorCallAbandoned:
		// The actor's reply came first; nothing waits for it any more.
	case *cancelCall:
		// The call is already silenced; only a request still waiting for a slot, or a started
		// call (which has no goroutine on the cancelled context), has to act.
		r.settle(metrics.Cancelled)
		if r.phase == phaseWaiting {
			r.finish(ctx)
		}
		r.abandonStarted()
	case *callTimedOut:
		if r.phase == phaseRunning {
			r.fail(r.timeoutError())
			r.phase = phaseDraining
			r.stopHdlr()
			r.abandonStarted()
		}
	case *handlerDone:
		r.startedCall = nil
		r.rec().endHandler(msg.err)
		switch {
		case r.phase == phaseRunning:
			faults.Check(faults.RequestAnswer, r.tool.Name())
			r.answer(msg)
		case !r.askedInput:
			r.eng.metrics.LateResponseSuppressed(r.tool.Name()) // after the timeout answered
		}
		r.finish(ctx)
	case *actor.Stopped:
		r.rec().endPhase()
		r.rec().endHandler(nil) // stopped with the handler still running: its span ends here
		if r.timer != nil {
			r.timer.Stop()
		}
		if r.stopHdlr != nil {
			r.stopHdlr()
		}
		r.call.Release()
		r.abandonStarted()
		r.settleAtStop()
		// Stopped without finishing: the engine failed in this actor. Give back what it held.
		r.slot.release()
		if r.acquired {
			r.acquired = false
			ctx.Send(r.toolPID, &releaseSlot{who: ctx.Self()})
		}
	}
}

func (r *requestActor) start(ctx actor.Context) {
	r.begin()
	r.rec().arguments(r.args)
	if fb := r.validate(); fb != nil {
		r.respondResult(feedbackResult(fb))
		r.finish(ctx)
		return
	}
	if r.task != nil && !r.task.deferred {
		r.phase = phaseTasking
		r.askTask(ctx, nil, nil)
		return
	}
	if r.toolPID != nil {
		r.phase = phaseWaiting
		r.acquired = true
		r.rec().beginPhase(spanWaitSlot)
		ctx.Send(r.toolPID, &acquireSlot{who: ctx.Self()})
		return
	}
	r.run(ctx)
}

// validate checks the call's _meta and arguments against the tool's schemas, and keeps the
// arguments as the tool reads them; it returns the feedback for the client when they fail.
func (r *requestActor) validate() *tools.Result {
	span := r.rec().child(spanValidate)
	defer endSpan(span, nil)
	if fb := r.tool.ValidateMeta(r.meta); fb != nil {
		return fb
	}
	args, fb := r.tool.ValidateInput(r.args)
	if fb != nil {
		return fb
	}
	r.args = args
	return nil
}

// run starts the handler goroutine, or sends the call to the actor of an actor-backed tool.
func (r *requestActor) run(ctx actor.Context) {
	if r.eng.actorTools.backed(r.tool) {
		target := r.eng.actorTools.target(r.tool)
		switch {
		case r.tool.Wrapped():
			r.runBridged(ctx, target)
			return
		case target != nil:
			r.runOnActor(ctx, target)
			return
		}
	}
	r.runGo(ctx)
}

// runGo starts the handler goroutine.
func (r *requestActor) runGo(ctx actor.Context) {
	r.phase = phaseRunning
	// Without a timeout the handler gets the call's own context, which the answer, a
	// cancellation and the actor's stop (call.Release) all cancel: a child context would cost
	// allocations on every call and cancel nothing more.
	hctx := r.call.Context()
	if d := r.timeout(); d > 0 {
		hctx, r.stopHdlr = context.WithTimeoutCause(hctx, d, r.timeoutError())
		self, root := ctx.Self(), ctx.ActorSystem().Root
		r.timer = time.AfterFunc(d, func() { root.Send(self, &callTimedOut{}) })
	}
	r.hctx = hctx
	hctx = r.eng.handlerContext(hctx, r.peer, r.meta)
	if r.bridged {
		if progressToken(r.meta) != nil {
			r.progress = hctx // its progress sink takes the actor's reports
		}
		hctx = context.WithValue(hctx, toolctx.ActorDispatch{}, askActor(ctx.ActorSystem().Root, ctx.Self()))
	}
	hctx = tools.WithIdentity(hctx, r.identity)
	if span := r.rec().startHandler(); span != nil {
		hctx = trace.ContextWithSpan(hctx, span)
	}
	// The handler's context is cancelled on client cancellation, connection close, timeout and
	// shutdown.
	req := &tools.Request{Tool: r.tool.Name(), Arguments: r.args, Meta: r.meta, Identity: r.identity}
	if r.task == nil {
		if r.startedCall = r.startCall(hctx, req); r.startedCall != nil {
			return // a mounted tool's call, on its way without a goroutine (mount.go)
		}
		if r.slot != nil {
			r.slot.handlerRuns.Store(true)
		}
	}
	r.eng.runHandler(ctx, &r.mailbox, r.tool, hctx, req)
}

// runHandler runs tool's handler on a pool worker that belongs to the actor of ctx, which gets
// a handlerDone when it returns and must not stop before. With the actor's mailbox, the worker
// posts the handlerDone there and takes the actor's next step itself (postHere); without (a
// task's actor), it sends it.
func (e *Engine) runHandler(ctx actor.Context, mb *requestMailbox, tool *tools.Compiled, hctx context.Context, req *tools.Request) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	e.handlers.Add(1)
	// The handler runs on a pool worker but belongs to the actor that started it, which waits
	// for its handlerDone before stopping. It ends when the handler returns; its context is
	// cancelled as the actor's doc says.
	e.pool.Go(func() {
		defer e.handlers.Done()
		res, err := tool.Run(hctx, req)
		if mb != nil {
			mb.postHere(&handlerDone{result: res, err: err})
			return
		}
		root.Send(self, &handlerDone{result: res, err: err})
	})
}

func (r *requestActor) timeoutError() error {
	err := fmt.Errorf("tool %q: %w after %s", r.tool.Name(), ErrTimeout, r.timeout())
	if r.stray != "" {
		err = fmt.Errorf("%w; the actor sent %s, which is not a reply of the contract", err, r.stray)
	}
	return err
}

// timeout is the call's timeout: the tool's own, or else the engine's default (for an
// actor-backed tool, tools.DefaultActorTimeout).
func (r *requestActor) timeout() time.Duration {
	if r.bridged {
		return actorTimeoutOf(r.tool)
	}
	if d := r.tool.Def().Timeout; d > 0 {
		return d
	}
	return r.eng.cfg.ToolTimeout
}

// answer turns the handler's outcome into the call's one response.
func (r *requestActor) answer(d *handlerDone) {
	// The deadline passed before this message arrived (its timer's message is still queued):
	// the call timed out whatever the handler returned, exactly as if the timer had won.
	if cause := context.Cause(r.hctx); errors.Is(cause, ErrTimeout) {
		if r.stray != "" {
			cause = r.timeoutError() // names what the tool's actor sent instead of a reply
		}
		if d.err == nil {
			r.eng.metrics.LateResponseSuppressed(r.tool.Name())
			r.fail(cause)
			return
		}
		switch {
		case !errors.Is(d.err, ErrTimeout):
			d.err = fmt.Errorf("%w (handler returned: %w)", cause, d.err)
		case r.stray != "":
			d.err = cause
		}
	}
	var capErr *client.CapabilityError
	switch {
	case d.err != nil && r.ann.Modern() && errors.As(d.err, &capErr):
		// A modern call that cannot do without a capability its request did not declare.
		r.respondAs(capabilityError(r.id, capErr.Required()), metrics.Invalid)
		return
	case d.err != nil:
		r.fail(d.err)
		return
	}
	frame, err := protocol.EncodeResultWith(r.id, d.result, r.ann)
	if err != nil {
		r.fail(&tools.OutputError{Tool: r.tool.Name(), Err: err})
		return
	}
	outcome := metrics.OK
	if d.result.IsError {
		outcome = metrics.ToolError
	}
	r.rec().succeeded(d.result)
	r.respondAs(frame, outcome)
}

// respondAs sends frame as the call's one response and settles the call with outcome o. When the
// call was silenced first, nothing is sent, the dropped outcome is counted as a late response
// suppressed, and respondAs returns false.
//
// The call is settled just before its frame is queued, so a client that has the response also
// finds the call counted.
func (r *requestActor) respondAs(frame []byte, o metrics.Outcome) bool {
	r.rec().settled(o)
	if !r.call.Respond(func() {
		r.settle(o)
		r.slot.release() // before the frame: see callSlot
		r.stream.Send(frame)
	}) {
		r.eng.metrics.LateResponseSuppressed(r.tool.Name())
		r.settle(metrics.Cancelled)
		return false
	}
	return true
}

// fail answers an unexpected failure with the generic result and, only if that answer was
// actually sent (the call was not cancelled), hands the original error to diagnostics.
func (r *requestActor) fail(err error) {
	frame, _ := protocol.EncodeResultWith(r.id, failedResult, r.ann)
	outcome := metrics.Failed
	if errors.Is(err, ErrTimeout) {
		outcome = metrics.Timeout
	}
	r.rec().failed(err)
	if !r.respondAs(frame, outcome) {
		return
	}
	req := diagnostics.NewToolRequest(r.id, protocol.MethodToolsCall, r.tool.Name(), r.meta)
	r.eng.report(err, diagnostics.NewToolErrorDetails(r.tool.Name(), req))
}

func (r *requestActor) respondResult(res *protocol.CallToolResult) {
	frame, err := protocol.EncodeResultWith(r.id, res, r.ann)
	if err != nil {
		r.fail(&tools.OutputError{Tool: r.tool.Name(), Err: err})
		return
	}
	r.respondAs(frame, metrics.Invalid)
}

// finish ends the request: the stream is closed, the run slot released, and the actor stops.
func (r *requestActor) finish(ctx actor.Context) {
	r.phase = phaseDraining
	if r.bridged && r.target != nil {
		// A middleware returned without waiting for the actor's reply.
		r.cancelActor(ctx, nil)
		r.unwatch(ctx)
		r.target = nil
	}
	r.stream.Close()
	if r.acquired {
		r.acquired = false
		ctx.Send(r.toolPID, &releaseSlot{who: ctx.Self()})
	}
	ctx.Stop(ctx.Self())
}

func feedbackResult(fb *tools.Result) *protocol.CallToolResult {
	return &protocol.CallToolResult{Content: fb.Content, IsError: true}
}

// progressToken returns params._meta.progressToken, or nil.
func progressToken(meta json.RawMessage) json.RawMessage {
	if len(meta) == 0 {
		return nil
	}
	tok := protocol.MetaProgressToken(meta)
	if len(tok) == 0 {
		return nil
	}
	if _, err := protocol.ParseID(tok); err != nil {
		return nil // a token must be a string or an integer
	}
	return tok
}

// requestMailbox is a request actor's mailbox: protoactor's own, which it schedules on the
// engine's dispatcher, and one more way to post to it, postHere, for the goroutine that brings
// the call's outcome. That goroutine (a handler's worker, a mounted upstream's reader) would
// otherwise wake a worker to take the actor's next step and then park; on a process that is
// mostly idle each such hand-over costs a wake-up of another thread and its sleep again
// (BENCHMARKS.md, "The gateway"). The actor's messages are still processed one at a time, by
// whichever goroutine runs the mailbox.
type requestMailbox struct {
	actor.Mailbox
	next actor.Dispatcher
	// state is mailboxHeld while postHere posts: a schedule of the mailbox then leaves its
	// run to postHere (in run), which runs it once it has posted.
	state atomic.Int32
	run   func() // written by Schedule before state becomes mailboxTaken
}

// The states of a requestMailbox.
const (
	mailboxFree   = iota // its runs go to the engine's dispatcher
	mailboxHeld          // postHere is posting: the next run is left to it
	mailboxTaking        // Schedule is leaving a run to postHere
	mailboxTaken         // the run is in run
)

func newRequestMailbox(next actor.Dispatcher) *requestMailbox {
	m := &requestMailbox{}
	m.init(next)
	return m
}

// init makes m a mailbox whose runs go to next.
func (m *requestMailbox) init(next actor.Dispatcher) {
	m.Mailbox, m.next = actor.UnboundedLockfree()(), next
}

// RegisterHandlers takes the mailbox itself as its dispatcher.
func (m *requestMailbox) RegisterHandlers(invoker actor.MessageInvoker, _ actor.Dispatcher) {
	m.Mailbox.RegisterHandlers(invoker, m)
}

// Schedule runs the mailbox on the engine's dispatcher, unless postHere is posting: then its
// caller runs it.
func (m *requestMailbox) Schedule(fn func()) {
	if m.state.CompareAndSwap(mailboxHeld, mailboxTaking) {
		m.run = fn
		m.state.Store(mailboxTaken)
		return
	}
	m.next.Schedule(fn)
}

// Throughput is the engine dispatcher's.
func (m *requestMailbox) Throughput() int { return m.next.Throughput() }

// postHere posts msg and, when that schedules the mailbox (it was idle), runs it on this
// goroutine until it is idle again. A message another goroutine posts meanwhile, scheduling the
// mailbox, is run here too. A call has one outcome, so one postHere at a time; another that
// came meanwhile would only post.
func (m *requestMailbox) postHere(msg any) {
	if !m.state.CompareAndSwap(mailboxFree, mailboxHeld) {
		m.PostUserMessage(msg)
		return
	}
	m.PostUserMessage(msg)
	if m.state.CompareAndSwap(mailboxHeld, mailboxFree) {
		return // the mailbox was running: the post did not schedule it
	}
	for m.state.Load() != mailboxTaken {
		runtime.Gosched() // Schedule is between its two steps
	}
	run := m.run
	m.run = nil
	m.state.Store(mailboxFree)
	run()
}

var _ actor.Dispatcher = (*requestMailbox)(nil)
