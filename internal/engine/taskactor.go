package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
	"github.com/toolgrain/toolgrain/tools"
)

// taskSpec is everything a task actor needs: built by the request actor that asks for the task,
// completed by the registry (id, created), never mutated after the actor starts.
type taskSpec struct {
	eng     *Engine
	tool    *tools.Compiled
	toolPID *actor.PID // the tool's admission actor; nil without a concurrency limit
	args    json.RawMessage
	meta    json.RawMessage
	reqID   protocol.ID // the tools/call that made the task, for diagnostics
	// caps and info are what the client declared on that call; identity is its authenticated
	// caller (nil without auth), owner the key the task belongs to.
	caps     *protocol.ClientCapabilities
	info     protocol.Implementation
	identity *tools.Identity
	owner    string
	ttl      time.Duration
	// answers and state are what a deferred task's handler had gathered before it became a
	// task: its answers by input key and its client.SetState state, given again to its new run.
	answers map[string]json.RawMessage
	state   []byte
	replyTo *actor.PID // the request actor, answered taskCreated or taskRefused
	// parent is the span context of the tools/call that asked for the task, when it is traced:
	// the parent of the task's run span.
	parent trace.SpanContext

	id      string // set by the registry
	created time.Time
}

// Messages of a task actor.
type (
	// taskCreated: task → request. The task's first record is stored: answer the call with it.
	taskCreated struct {
		rec *taskstore.Record
		pid *actor.PID
	}
	// taskStored: store goroutine → task. The write of rec ended with err.
	taskStored struct {
		rec *taskstore.Record
		err error
	}
	// retryStore: timer → task. Write the latest record again after a failed write.
	retryStore struct{}
	// inputAsked: handler goroutine → task. The handler needs the answers to reqs; reply with
	// all of them once the client has given them (tasks/update).
	inputAsked struct {
		reqs  map[string]protocol.InputRequest
		reply chan map[string]json.RawMessage // size 1
	}
	// taskCancel: registry → task (tasks/cancel, routed). Cancel the task if it is the
	// asker's.
	taskCancel struct {
		asker
		reply chan taskReply // size 1
	}
	// taskUpdate: registry → task (tasks/update, routed). Take the answers if the task is the
	// asker's.
	taskUpdate struct {
		asker
		answers map[string]json.RawMessage
		reply   chan taskReply // size 1
	}
	// taskFinished: task → registry. The task has ended, its handler has returned and its last
	// record is stored: route nothing more to pid, and stop it.
	taskFinished struct{ pid *actor.PID }
	// taskGet: registry → task (tasks/get, routed). Reply with the task's current record if
	// it is the asker's: a running task's latest state is the actor's, which its store may
	// not have yet (but a final state is answered only once stored).
	taskGet struct {
		asker
		reply chan taskReply // size 1
	}
	// expireTask: registry → task. The task's TTL passed (its record is deleted): stop its
	// work and store nothing more.
	expireTask struct{}
	// stopTask: registry → task. The engine shuts down: stop the work, store nothing more.
	stopTask struct{}
)

// asker is who asks about a task: the owner key of its caller, and the caller, from whom the
// task's tool may be hidden (a task of a hidden tool is a task the caller does not have).
type asker struct {
	owner  string
	caller *tools.Identity
}

// has reports whether the task of owner that runs the tool named tool is the asker's.
func (a asker) has(e *Engine, owner, tool string) bool {
	return a.owner == owner && e.taskVisible(tool, a.caller)
}

func (m *taskCancel) replyTo() chan<- taskReply { return m.reply }
func (m *taskGet) replyTo() chan<- taskReply    { return m.reply }
func (m *taskUpdate) replyTo() chan<- taskReply { return m.reply }

// Phases of a task actor.
const (
	taskCreating  = iota // the first record is being stored
	taskAdmitting        // waiting for a run slot of the tool
	taskRunning          // the handler goroutine runs
	taskEnded            // the task has ended (or is abandoned); waiting for the handler and the writes
)

// maxStoreRetries bounds the retries of a failed write of a task's record.
const maxStoreRetries = 3

// taskActor owns one task from its creation to its end: the task's state, the handler goroutine
// and its cancellation (a cancel.Call, which decides between the handler's outcome and a
// cancellation), the requests for input the handler waits on, and the writes of the task's
// record, made one at a time off the actor, the latest state winning. It stops once the task has
// ended, its handler has returned and its last record is stored.
type taskActor struct {
	*taskSpec
	phase    int
	call     *cancel.Call // the run's cancellation; its context is the handler's
	hctx     context.Context
	stopHdlr context.CancelFunc // the tool's timeout, if any
	timer    *time.Timer
	handler  bool // the handler goroutine has not returned
	acquired bool // holds (or waits for) a slot of the tool's admission actor
	peer     *taskPeer
	span     trace.Span // the run's span, from the handler's start to the task's end; nil untraced

	rec       *taskstore.Record // the latest state
	shown     *taskstore.Record // the state tasks/get answers: rec, but a final one only once stored
	writing   bool              // a write is in flight
	dirty     bool              // rec changed since the write in flight started
	retries   int
	abandoned bool // expired or shut down: nothing more is stored
	finishing bool // the registry was told the task is done; it stops the actor

	outstanding map[string]protocol.InputRequest // requests for input not yet answered, by key
	answers     map[string]json.RawMessage       // every answer given, by key
	waits       []*inputAsked                    // handler requests waiting for answers
}

func newTaskActor(spec *taskSpec) *taskActor {
	return &taskActor{taskSpec: spec, call: cancel.New(context.Background()),
		outstanding: make(map[string]protocol.InputRequest), answers: maps.Clone(spec.answers)}
}

func (t *taskActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		if t.answers == nil {
			t.answers = make(map[string]json.RawMessage)
		}
		t.peer = &taskPeer{spec: t.taskSpec, owner: ctx.Self(), root: ctx.ActorSystem().Root, state: t.state}
		t.store(ctx, &taskstore.Record{
			ID: t.id, Owner: t.owner, Tool: t.tool.Name(), Status: taskstore.Working,
			CreatedAt: t.created, UpdatedAt: t.created, TTL: t.ttl, PollInterval: t.eng.tasks.cfg.PollInterval,
		})
	case *taskStored:
		t.stored(ctx, msg)
	case *retryStore:
		if !t.writing && !t.abandoned {
			t.write(ctx, t.rec)
		}
	case *slotGranted:
		if t.phase == taskAdmitting {
			t.run(ctx)
		}
	case *handlerDone:
		t.handler = false
		if t.phase == taskRunning {
			t.answer(ctx, msg)
		}
		t.maybeStop(ctx)
	case *callTimedOut:
		if t.phase == taskRunning {
			t.fail(ctx, t.timeoutError())
			t.stopHdlr()
		}
	case *inputAsked:
		t.ask(ctx, msg)
	case *taskUpdate:
		t.update(ctx, msg)
	case *taskGet:
		if !msg.has(t.eng, t.owner, t.tool.Name()) {
			msg.reply <- taskReply{kind: taskNotFound}
			return
		}
		msg.reply <- taskReply{kind: taskDone, rec: t.shown} // records are replaced, never changed
	case *taskCancel:
		if !msg.has(t.eng, t.owner, t.tool.Name()) {
			msg.reply <- taskReply{kind: taskNotFound}
			return
		}
		msg.reply <- taskReply{kind: taskDone}
		t.cancel(ctx, cancel.ErrTaskCancelled)
	case *expireTask:
		t.cancel(ctx, cancel.ErrTaskExpired)
	case *stopTask:
		t.cancel(ctx, cancel.ErrShutdown)
	case *actor.Stopped:
		t.endTaskSpan("", true, nil) // stopped before it ended: a panic in the actor
		if t.timer != nil {
			t.timer.Stop()
		}
		if t.stopHdlr != nil {
			t.stopHdlr()
		}
		t.call.Release()
		t.release(ctx)
	case *actor.Stopping, *actor.Restarting:
	default:
		t.eng.log.Debug("task: unexpected message", zap.String("type", fmt.Sprintf("%T", msg)))
	}
}

// stored takes the outcome of a write: the first one creates the task (or refuses it); every
// later successful one is announced to the listen streams that follow the task.
func (t *taskActor) stored(ctx actor.Context, msg *taskStored) {
	t.writing = false
	created := t.phase == taskCreating
	if created {
		if msg.err != nil {
			t.eng.reportStoreError("create a task", msg.err)
			ctx.Send(t.replyTo, &taskRefused{err: protocol.ErrInternal()})
			ctx.Send(ctx.Parent(), &taskAborted{id: t.id})
			t.phase, t.abandoned = taskEnded, true
			t.call.Cancel(cancel.ErrShutdown) // nothing ran: nothing to answer
			t.maybeStop(ctx)
			return
		}
		ctx.Send(t.replyTo, &taskCreated{rec: msg.rec, pid: ctx.Self()})
		t.admit(ctx)
	}
	switch {
	case msg.err != nil && !t.abandoned:
		t.eng.reportStoreError("update a task", msg.err)
		if t.retries < maxStoreRetries {
			t.retries++
			self, root := ctx.Self(), ctx.ActorSystem().Root
			t.timer = time.AfterFunc(time.Duration(t.retries)*time.Second, func() { root.Send(self, &retryStore{}) })
			return
		}
	case msg.err == nil && !created:
		t.retries = 0
		if msg.rec.Status.Terminal() {
			t.shown = msg.rec
		}
		t.eng.notifyTask(msg.rec)
	case msg.err == nil:
		// No one follows the first record: its id is only known from the answer just sent, and
		// a listen request that names it must not get it after that answer, as if it were news.
		t.retries = 0
	}
	if t.dirty && !t.abandoned {
		t.dirty = false
		t.write(ctx, t.rec)
		return
	}
	t.maybeStop(ctx)
}

// store makes rec the task's state and writes it, after the write in flight if there is one.
// A state on the way (working, input_required) is shown to tasks/get at once, so that a client
// reads its own tasks/update; a final one only once the store holds it (stored): a client that
// has seen a task completed, failed or cancelled must not find it otherwise after a crash.
func (t *taskActor) store(ctx actor.Context, rec *taskstore.Record) {
	t.rec = rec
	if !rec.Status.Terminal() {
		t.shown = rec
	}
	if t.abandoned {
		return
	}
	if t.writing {
		t.dirty = true
		return
	}
	t.write(ctx, rec)
}

func (t *taskActor) write(ctx actor.Context, rec *taskstore.Record) {
	t.writing = true
	e, self, root := t.eng, ctx.Self(), ctx.ActorSystem().Root
	e.goIO(func() {
		err := e.tasks.store.Put(context.Background(), rec)
		root.Send(self, &taskStored{rec: rec, err: err})
	})
}

// next returns a copy of the task's state changed at now, for the next write.
func (t *taskActor) next(now time.Time) *taskstore.Record {
	r := *t.rec
	r.UpdatedAt = now
	return &r
}

// admit asks the tool's admission actor for a run slot, or runs at once.
func (t *taskActor) admit(ctx actor.Context) {
	if t.call.Silenced() {
		t.endSilenced(ctx)
		return
	}
	if t.toolPID != nil {
		t.phase, t.acquired = taskAdmitting, true
		ctx.Send(t.toolPID, &acquireSlot{who: ctx.Self()})
		return
	}
	t.run(ctx)
}

// run starts the handler goroutine. Its context is the run's cancel.Call's (cancelled by
// tasks/cancel, the task's expiry and shutdown), with the tool's own timeout if it has one: a
// task is bounded by its TTL, not by the server's default timeout of ordinary calls.
func (t *taskActor) run(ctx actor.Context) {
	t.phase = taskRunning
	hctx := t.call.Context()
	if d := t.tool.Def().Timeout; d > 0 {
		hctx, t.stopHdlr = context.WithTimeoutCause(hctx, d, t.timeoutError())
		self, root := ctx.Self(), ctx.ActorSystem().Root
		t.timer = time.AfterFunc(d, func() { root.Send(self, &callTimedOut{}) })
	}
	t.hctx = hctx
	if t.span = t.eng.tel.startTask(t.parent, t.tool.Name(), t.id); t.span != nil {
		hctx = trace.ContextWithSpan(hctx, t.span)
	}
	hctx = tools.WithIdentity(client.WithPeer(hctx, t.peer), t.identity)
	t.handler = true
	t.eng.runHandler(ctx, nil, t.tool, hctx, &tools.Request{Tool: t.tool.Name(), Arguments: t.args, Meta: t.meta, Identity: t.identity})
}

func (t *taskActor) timeoutError() error {
	return fmt.Errorf("tool %q: %w after %s", t.tool.Name(), ErrTimeout, t.tool.Def().Timeout)
}

// answer turns the handler's outcome into the task's end: completed with the tool's result
// (an isError result included), or failed. A timeout or an unexpected failure fails the task
// with the generic error and reports the original; a capability the client did not declare on
// the call fails it with -32021, which names it. After a cancellation the outcome is dropped.
func (t *taskActor) answer(ctx actor.Context, d *handlerDone) {
	if t.call.Silenced() {
		t.endSilenced(ctx)
		return
	}
	if cause := context.Cause(t.hctx); errors.Is(cause, ErrTimeout) {
		// The deadline passed before this message arrived: the task timed out, as if its timer
		// had won.
		switch {
		case d.err == nil:
			t.eng.metrics.LateResponseSuppressed(t.tool.Name())
			d.err = cause
		case !errors.Is(d.err, ErrTimeout):
			d.err = fmt.Errorf("%w (handler returned: %w)", cause, d.err)
		}
	}
	var capErr *client.CapabilityError
	switch {
	case d.err != nil && errors.As(d.err, &capErr):
		t.end(ctx, taskstore.Failed, "Missing required client capability", nil,
			wireErrorJSON(protocol.ErrMissingCapability(capErr.Required())))
		return
	case d.err != nil:
		t.fail(ctx, d.err)
		return
	}
	result, err := json.Marshal(d.result)
	if err != nil {
		t.fail(ctx, &tools.OutputError{Tool: t.tool.Name(), Err: err})
		return
	}
	t.end(ctx, taskstore.Completed, "", result, nil)
}

// failedTaskError is the error of a task that failed unexpectedly: no detail, as for an
// ordinary call.
var failedTaskError = wireErrorJSON(&protocol.WireError{Code: protocol.CodeInternalError, Message: FailedText})

// fail ends the task failed with the generic error and, only if it did end so (it was not
// cancelled first), hands the original error to diagnostics with the task's id.
func (t *taskActor) fail(ctx actor.Context, err error) {
	if !t.end(ctx, taskstore.Failed, FailedText, nil, failedTaskError) {
		return
	}
	req := diagnostics.NewToolRequest(t.reqID, protocol.MethodToolsCall, t.tool.Name(), t.meta)
	t.eng.report(err, diagnostics.NewTaskErrorDetails(t.tool.Name(), t.id, req))
}

// end claims the run's outcome and stores the task's final state; false when the task was
// cancelled first (then it ends as the cancellation says).
func (t *taskActor) end(ctx actor.Context, status taskstore.Status, message string, result, errJSON json.RawMessage) bool {
	if !t.call.Respond(func() {}) {
		t.endSilenced(ctx)
		return false
	}
	t.phase = taskEnded
	t.endTaskSpan(string(status), status == taskstore.Failed, nil)
	r := t.next(time.Now())
	r.Status, r.StatusMessage, r.InputRequests, r.Result, r.Error = status, message, nil, result, errJSON
	t.store(ctx, r)
	t.release(ctx)
	return true
}

// endSilenced ends a task whose run was cancelled: cancelled by the client, it is stored
// cancelled (and nothing is reported); expired or shut down, nothing more is stored.
func (t *taskActor) endSilenced(ctx actor.Context) {
	if t.phase == taskEnded {
		return
	}
	t.phase = taskEnded
	if errors.Is(t.call.Cause(), cancel.ErrTaskCancelled) {
		t.endTaskSpan(string(taskstore.Cancelled), false, t.call.Cause())
		r := t.next(time.Now())
		r.Status, r.StatusMessage, r.InputRequests = taskstore.Cancelled, taskCancelledText, nil
		t.store(ctx, r)
	} else {
		t.endTaskSpan("", false, t.call.Cause())
		t.abandoned = true
	}
	t.release(ctx)
}

// cancel cancels the run with cause: the handler's context ends; a task not yet running ends
// at once.
func (t *taskActor) cancel(ctx actor.Context, cause cancel.Cause) {
	if !errors.Is(cause, cancel.ErrTaskCancelled) {
		t.abandoned = true // expired or shut down: nothing more is stored, whatever happens
		t.dirty = false
	}
	if !t.call.Cancel(cause) {
		t.maybeStop(ctx) // ended already; an abandoned task stops without its last write
		return
	}
	switch t.phase {
	case taskAdmitting:
		t.endSilenced(ctx)
		t.maybeStop(ctx)
	case taskCreating, taskRunning:
		// The first write's outcome, or the handler's return, ends the task.
	}
}

// release gives back the tool's run slot.
func (t *taskActor) release(ctx actor.Context) {
	if t.acquired {
		t.acquired = false
		ctx.Send(t.toolPID, &releaseSlot{who: ctx.Self()})
	}
}

// maybeStop has the actor stopped once the task has ended, its handler has returned and no write is
// in flight or due.
func (t *taskActor) maybeStop(ctx actor.Context) {
	if t.finishing || t.phase != taskEnded || t.handler || t.writing || (t.dirty && !t.abandoned) {
		return
	}
	// The registry stops the actor: it may have routed operations here that are still in the
	// mailbox, and they must be answered. It routes no more once it has this message, and its
	// poison pill comes after everything it routed.
	t.finishing = true
	ctx.Send(ctx.Parent(), &taskFinished{pid: ctx.Self()})
}

// ask takes a handler's requests for input: answered at once when the client has given every
// answer; otherwise the task waits in input_required, listing every request not yet answered.
func (t *taskActor) ask(ctx actor.Context, msg *inputAsked) {
	missing := false
	for k, r := range msg.reqs {
		if _, ok := t.answers[k]; !ok {
			missing = true
			t.outstanding[k] = r
		}
	}
	if !missing {
		msg.reply <- t.pick(msg.reqs)
		return
	}
	t.waits = append(t.waits, msg)
	t.storeInput(ctx)
}

// update takes the client's answers (tasks/update): answers to requests the task waits on are
// checked and kept; the others (unknown keys, keys answered before) are ignored. The handler
// requests whose answers are all given go on.
func (t *taskActor) update(ctx actor.Context, msg *taskUpdate) {
	if !msg.has(t.eng, t.owner, t.tool.Name()) {
		msg.reply <- taskReply{kind: taskNotFound}
		return
	}
	keys := slices.Sorted(maps.Keys(msg.answers))
	for _, k := range keys {
		if r, ok := t.outstanding[k]; ok {
			if err := checkAnswer(r.Method, msg.answers[k]); err != nil {
				msg.reply <- taskReply{kind: taskRejected, err: protocol.ErrInvalidParams("inputResponses[%q]: %s", k, err.Error())}
				return
			}
		}
	}
	taken := false
	for _, k := range keys {
		if _, ok := t.outstanding[k]; ok {
			t.answers[k] = msg.answers[k]
			delete(t.outstanding, k)
			taken = true
		}
	}
	msg.reply <- taskReply{kind: taskDone}
	if !taken {
		return
	}
	waits := t.waits[:0]
	for _, w := range t.waits {
		if t.answered(w.reqs) {
			w.reply <- t.pick(w.reqs)
			continue
		}
		waits = append(waits, w)
	}
	clear(t.waits[len(waits):])
	t.waits = waits
	t.storeInput(ctx)
}

// storeInput stores the task's input state: input_required with the requests not yet answered,
// or working again.
func (t *taskActor) storeInput(ctx actor.Context) {
	if t.phase != taskRunning {
		return
	}
	r := t.next(time.Now())
	r.Status, r.InputRequests = taskstore.Working, nil
	if len(t.outstanding) > 0 {
		reqs, err := json.Marshal(t.outstanding)
		if err != nil {
			t.eng.Report(fmt.Errorf("task %s: encode its requests for input: %w", t.id, err))
			return
		}
		r.Status, r.InputRequests = taskstore.InputRequired, reqs
	}
	t.store(ctx, r)
}

func (t *taskActor) answered(reqs map[string]protocol.InputRequest) bool {
	for k := range reqs {
		if _, ok := t.answers[k]; !ok {
			return false
		}
	}
	return true
}

func (t *taskActor) pick(reqs map[string]protocol.InputRequest) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(reqs))
	for k := range reqs {
		out[k] = t.answers[k]
	}
	return out
}

// checkAnswer checks that the answer raw fits a request of method: an elicitation result with
// an action, a sampling result, a roots listing.
func checkAnswer(method string, raw json.RawMessage) error {
	r := client.InputResponse{Method: method, Result: raw}
	var err error
	switch method {
	case protocol.MethodElicitationCreate:
		_, err = r.Elicit()
	case protocol.MethodSamplingCreateMessage:
		_, err = r.Message()
	case protocol.MethodRootsList:
		_, err = r.Roots()
	}
	return err
}
