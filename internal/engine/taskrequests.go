package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
	"github.com/toolgrain/toolgrain/tools"
)

// The calls and methods of the tasks extension, on the connection's side: which tools/call
// becomes a task (taskPlan), how its request actor asks the registry for one, and tasks/get,
// tasks/update and tasks/cancel, each served by an operation actor whose goroutine reads the
// store or waits for the task actor's answer.

// taskPlan says that a tools/call is to run as a task; built by the connection actor.
type taskPlan struct {
	// deferred: the call starts as an ordinary call, and becomes a task when its handler calls
	// client.StartTask (tools.Tool.DeferTask).
	deferred bool
	owner    string // ownerKey of the caller
	ttl      time.Duration
}

// planTask decides whether the modern tools/call of tool runs as a task: only for a tool with
// TaskSupport, a server that offers the extension and a request that declares it. A tool that
// requires a task, called without the extension, is refused with -32021 naming it.
func (c *connectionActor) planTask(tool *tools.Compiled, caller *tools.Identity) (*taskPlan, *protocol.WireError) {
	sup := tool.Def().TaskSupport
	if c.modern == nil || sup == tools.TaskForbidden || !c.eng.TasksEnabled() {
		return nil, nil
	}
	if !c.modern.env.Capabilities.HasExtension(protocol.ExtensionTasks) {
		if sup == tools.TaskRequired {
			return nil, protocol.ErrMissingCapability(protocol.TasksRequired)
		}
		return nil, nil
	}
	return &taskPlan{deferred: tool.Def().DeferTask, owner: ownerKey(caller), ttl: c.eng.tasks.ttlFor(tool)}, nil
}

// phaseTasking: the request actor of a task call waits for the registry's answer.
const phaseTasking = phaseDraining + 1

// Messages of a task call.
type (
	// taskWanted: handler goroutine → request. The handler of a deferred task call asked for
	// the task (client.StartTask), with the answers it had read and its state.
	taskWanted struct {
		answers map[string]json.RawMessage
		state   []byte
	}
)

// taskCallState is what a request actor keeps about the task its call becomes.
type taskCallState struct {
	awaitingTask bool // asked the registry, no answer yet
	handlerBack  bool // the handler returned while the registry's answer was awaited
}

// receiveTask handles the messages of a call that becomes a task, and reports whether it
// consumed the message. It runs before the request actor's own switch.
func (r *requestActor) receiveTask(ctx actor.Context) bool {
	switch msg := ctx.Message().(type) {
	case *taskWanted:
		if r.phase == phaseRunning && !r.awaitingTask && !r.askedInput {
			r.askTask(ctx, msg.answers, msg.state)
		}
	case *handlerDone:
		if !r.awaitingTask {
			return false
		}
		// The call was cancelled while the registry makes the task: finish once it answers.
		r.handlerBack = true
	case *taskCreated:
		r.awaitingTask = false
		frame, err := protocol.EncodeResultWith(r.id, taskWire(msg.rec, false),
			&protocol.Annotation{ResultType: protocol.ResultTask, Meta: r.eng.serverMeta})
		if err != nil || !r.respondAs(frame, metrics.Task) {
			// The client is gone before it learnt the task's id: nobody can reach the task.
			ctx.Send(msg.pid, &taskCancel{asker: asker{owner: r.task.owner, caller: r.identity}, reply: make(chan taskReply, 1)})
		}
		r.taskAnswered(ctx)
	case *taskRefused:
		r.awaitingTask = false
		r.respondAs(protocol.EncodeError(r.id, msg.err), metrics.Invalid)
		r.taskAnswered(ctx)
	default:
		return false
	}
	return true
}

// askTask asks the registry for the call's task, whose handler starts with answers and state.
func (r *requestActor) askTask(ctx actor.Context, answers map[string]json.RawMessage, state []byte) {
	r.awaitingTask = true
	env := r.peer.env
	ctx.Send(r.eng.tasks.registry, &createTask{spec: &taskSpec{
		eng: r.eng, tool: r.tool, toolPID: r.toolPID, args: r.args, meta: r.meta, reqID: r.id,
		caps: env.Capabilities, info: r.peer.ClientInfo(), identity: r.identity,
		owner: r.task.owner, ttl: r.task.ttl, answers: answers, state: state, replyTo: ctx.Self(),
		parent: r.rec().spanContext(),
	}})
}

// taskAnswered ends the call once the registry answered: at once, unless a deferred call's
// handler has yet to return (it does now: the answer ended its context), whose return is then
// dropped.
func (r *requestActor) taskAnswered(ctx actor.Context) {
	if r.task.deferred && !r.handlerBack {
		r.askedInput = true
		r.phase = phaseDraining
		return
	}
	r.finish(ctx)
}

// StartTask asks for the call's task when the call may become one (a deferred task call), and
// waits until the call is answered with it; otherwise the call goes on ([client.StartTask]).
func (p *callPeer) StartTask(ctx context.Context) error {
	if !p.taskable {
		return nil
	}
	var answers map[string]json.RawMessage
	if p.in != nil {
		p.in.mu.Lock()
		answers = maps.Clone(p.in.consumed)
		p.in.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	p.conn.root.Send(p.owner, &taskWanted{answers: answers, state: p.State()})
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, cancel.ErrResponded) {
		return cause
	}
	return client.ErrTaskStarted
}

// TaskID returns "": an ordinary call runs in no task.
func (p *callPeer) TaskID() string { return "" }

var _ client.TaskPeer = (*callPeer)(nil)

// taskMethod serves tasks/get, tasks/update and tasks/cancel: only for a server that offers
// the extension (-32601 otherwise) and a request that declares it (-32021 otherwise). Each runs
// in an operation actor, whose goroutine reads the store or waits for the task actor.
func (c *connectionActor) taskMethod(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity) {
	switch {
	case !c.eng.TasksEnabled():
		reply(s, protocol.EncodeError(m.ID, protocol.ErrMethodNotFound(m.Method)))
		return
	case !c.modern.env.Capabilities.HasExtension(protocol.ExtensionTasks):
		reply(s, protocol.EncodeError(m.ID, protocol.ErrMissingCapability(protocol.TasksRequired)))
		return
	}
	id, werr := protocol.ReadTaskParams(m.Method, m.Params)
	if werr != nil {
		reply(s, protocol.EncodeError(m.ID, werr))
		return
	}
	e, who := c.eng, asker{owner: ownerKey(caller), caller: caller}
	var run func(context.Context) (any, error)
	if gone := e.tasks.cfg.Gone; gone != nil && gone(id) {
		// The task's home server is gone, and the task with it: it is reported failed.
		if m.Method == protocol.MethodTasksGet {
			rec := e.tasks.goneRecord(id, time.Now())
			run = func(context.Context) (any, error) { return taskWire(rec, true), nil }
		} else {
			run = func(context.Context) (any, error) {
				return nil, &publicError{we: protocol.NewError(protocol.CodeInvalidParams, TaskHomeGoneText)}
			}
		}
		c.spawnOperation(ctx, m, s, caller, id, nil, nil, false, run)
		return
	}
	switch m.Method {
	case protocol.MethodTasksGet:
		run = func(ctx context.Context) (any, error) {
			// A running task answers from its actor (read your own tasks/update at once); an
			// ended one from the store.
			reply := make(chan taskReply, 1)
			e.system.Root.Send(e.tasks.registry, &routeTask{id: id, op: &taskGet{asker: who, reply: reply}})
			var rec *taskstore.Record
			select {
			case r := <-reply:
				switch r.kind {
				case taskNotFound:
					return nil, errTaskNotFound()
				case taskDone:
					rec = r.rec
				}
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			if rec == nil {
				var err error
				if rec, err = e.lookupTask(ctx, id, who); err != nil {
					return nil, err
				}
			}
			return taskWire(rec, true), nil
		}
	case protocol.MethodTasksCancel:
		run = func(ctx context.Context) (any, error) {
			reply := make(chan taskReply, 1)
			return e.routeTaskOp(ctx, id, who, &taskCancel{asker: who, reply: reply}, reply)
		}
	case protocol.MethodTasksUpdate:
		var p protocol.UpdateTaskParams
		_ = json.Unmarshal(m.Params, &p) // ReadTaskParams decoded it already
		answers, werr := protocol.ReadInputResponses(p.InputResponses)
		if werr == nil && p.InputResponses == nil {
			werr = protocol.ErrInvalidParams("tasks/update needs inputResponses, an object of responses by key")
		}
		if werr != nil {
			reply(s, protocol.EncodeError(m.ID, werr))
			return
		}
		run = func(ctx context.Context) (any, error) {
			reply := make(chan taskReply, 1)
			return e.routeTaskOp(ctx, id, who, &taskUpdate{asker: who, answers: answers, reply: reply}, reply)
		}
	}
	c.spawnOperation(ctx, m, s, caller, id, nil, nil, false, run)
}

// goneRecord is the record of task id whose home server is gone, as of now: failed with
// [TaskHomeGoneText], with the engine's TTL and poll interval (its own are unknown here).
func (s *taskService) goneRecord(id string, now time.Time) *taskstore.Record {
	return &taskstore.Record{
		ID: id, Status: taskstore.Failed, StatusMessage: TaskHomeGoneText,
		CreatedAt: now, UpdatedAt: now, TTL: s.cfg.TTL, PollInterval: s.cfg.PollInterval,
		Error: wireErrorJSON(&protocol.WireError{Code: protocol.CodeInternalError, Message: TaskHomeGoneText}),
	}
}

// emptyResult is the empty acknowledgement of tasks/update and tasks/cancel.
var emptyResult = json.RawMessage(`{}`)

// routeTaskOp hands op to the task's actor through the registry and waits for its answer; a
// task that does not run is looked up in the store, and acknowledged if the caller has it.
func (e *Engine) routeTaskOp(ctx context.Context, id string, who asker, op taskOp, reply chan taskReply) (any, error) {
	e.system.Root.Send(e.tasks.registry, &routeTask{id: id, op: op})
	select {
	case r := <-reply:
		switch r.kind {
		case taskDone:
			return emptyResult, nil
		case taskRejected:
			return nil, &publicError{we: r.err}
		case taskNotFound:
			return nil, errTaskNotFound()
		}
		if _, err := e.lookupTask(ctx, id, who); err != nil {
			return nil, err
		}
		return emptyResult, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func errTaskNotFound() error {
	return &publicError{we: protocol.NewError(protocol.CodeInvalidParams, TaskNotFoundText)}
}

// lookupTask reads the asker's task id from the store: -32602 when there is none (or it is
// another caller's, or its tool is hidden from the asker: the answer is the same), or when its
// TTL has passed.
func (e *Engine) lookupTask(ctx context.Context, id string, who asker) (*taskstore.Record, error) {
	rec, err := e.tasks.store.Get(ctx, id)
	switch {
	case errors.Is(err, taskstore.ErrNotFound) || (err == nil && !who.has(e, rec.Owner, rec.Tool)):
		return nil, errTaskNotFound()
	case err != nil:
		return nil, fmt.Errorf("task store: get %s: %w", id, err)
	case !time.Now().Before(rec.ExpiresAt()):
		return nil, &publicError{we: protocol.NewError(protocol.CodeInvalidParams, TaskExpiredText)}
	}
	return rec, nil
}

// taskWire is the wire form of a task: with the payload of its status (inputRequests, result
// or error) when detailed (tasks/get, notifications/tasks), without for a CreateTaskResult.
func taskWire(rec *taskstore.Record, detailed bool) *protocol.Task {
	ttl := rec.TTL.Milliseconds()
	t := &protocol.Task{
		TaskID: rec.ID, Status: string(rec.Status), StatusMessage: rec.StatusMessage,
		CreatedAt: protocol.TaskTime(rec.CreatedAt), LastUpdatedAt: protocol.TaskTime(rec.UpdatedAt),
		TTLMs: &ttl, PollIntervalMs: rec.PollInterval.Milliseconds(),
	}
	if !detailed {
		return t
	}
	switch rec.Status {
	case taskstore.InputRequired:
		t.InputRequests = rec.InputRequests
	case taskstore.Completed:
		t.Result = rec.Result
	case taskstore.Failed:
		t.Error = rec.Error
	}
	return t
}

// notifyTask sends the task's state (notifications/tasks) on every listen stream of its owner
// that follows it.
func (e *Engine) notifyTask(rec *taskstore.Record) {
	ls := e.listeners.following(e, rec)
	if len(ls) == 0 {
		return
	}
	body, err := json.Marshal(taskWire(rec, true))
	if err != nil {
		return
	}
	for _, l := range ls {
		params := make([]byte, 0, len(l.meta)+len(body)+10)
		params = append(params, `{"_meta":`...)
		params = append(params, l.meta...)
		params = append(params, ',')
		params = append(params, body[1:]...)
		frame, err := protocol.EncodeNotification(protocol.MethodTasksNotification, json.RawMessage(params))
		if err != nil {
			continue
		}
		l.call.Notify(func() { l.stream.Send(frame) })
	}
}

// listenTasks checks the task ids of a listen filter: they need the extension declared on the
// request (-32021 otherwise) and are not acknowledged by a server that does not offer it.
func (c *connectionActor) listenTasks(f *protocol.ListenFilter) *protocol.WireError {
	if len(f.TaskIDs) == 0 {
		return nil
	}
	if !c.modern.env.Capabilities.HasExtension(protocol.ExtensionTasks) {
		return protocol.ErrMissingCapability(protocol.TasksRequired)
	}
	if len(f.TaskIDs) > MaxListenTasks {
		return protocol.ErrInvalidParams("too many task ids (the limit is %d per listen request)", MaxListenTasks)
	}
	if !c.eng.TasksEnabled() {
		f.TaskIDs = nil
	}
	return nil
}
