package engine

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/internal/principal"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
	"github.com/toolgrain/toolgrain/tools"
)

// Tasks (the io.modelcontextprotocol/tasks extension of MCP 2026-07-28). A tools/call of a task
// tool, from a client that declares the extension, is answered with a task: the request actor
// asks the task registry for one, the registry admits it under the caps and spawns a task actor,
// the task actor stores the task's first record and only then has the request answered with
// the task's id, so that tasks/get finds it. The task actor owns the task from then on: its
// handler goroutine, its cancellation, its requests for input, and the writes of its record,
// which it makes one at a time off the actor. It stops when the task has ended and its last
// record is stored: a finished task is only its record in the store. The registry keeps, for
// every task the store holds, its owner and expiry (for the caps and the TTL), and routes
// tasks/update and tasks/cancel to the running task actors.
//
//	server supervisor
//	└── task registry         one per engine: caps, expiry, routing
//	    └── task actors       one per running task: its state and its cancellation

// Defaults of [TaskConfig].
const (
	DefaultTaskTTL           = time.Hour
	DefaultTaskPollInterval  = time.Second
	DefaultMaxTasks          = 10000
	DefaultMaxTasksPerCaller = 1000
	// MaxListenTasks bounds the task ids one listen request may follow.
	MaxListenTasks = 1024
)

// Texts of the tasks extension that a client sees; they are contract.
const (
	// TaskHomeGoneText is the error of a task whose home server is gone ([TaskConfig].Gone).
	TaskHomeGoneText = "the server holding this task is gone"
	// TaskNotFoundText answers tasks/* for an id the caller has no task of.
	TaskNotFoundText = "Failed to retrieve task: Task not found"
	// TaskExpiredText answers tasks/* for a task whose TTL has passed.
	TaskExpiredText = "Failed to retrieve task: Task has expired"
	// TaskRestartedText is the error of a task that was running when its server stopped: the
	// server that took its store over reports it failed with this message.
	TaskRestartedText = "Task failed: the server restarted before it finished"
	// taskCancelledText is the statusMessage of a cancelled task.
	taskCancelledText = "Cancelled by the client"
)

// TaskConfig configures the tasks extension; toolgrain.TaskConfig documents each field, but for
// Enabled, which here means that the extension is offered at all. The zero value is usable (and
// disabled); zero limits and durations mean the defaults above, negative limits none.
type TaskConfig struct {
	Enabled           bool
	Store             taskstore.Store // nil: in memory
	TTL               time.Duration
	PollInterval      time.Duration
	MaxTasks          int
	MaxTasksPerCaller int
	Home              string
	// Gone, if set, reports whether the task id names a home server that is gone (a cluster
	// member that died): tasks/get then answers a failed task with [TaskHomeGoneText], and
	// tasks/update and tasks/cancel the error -32602 with that text, without looking further.
	// It must not block.
	Gone func(id string) bool
}

// taskService is the engine's side of the tasks extension: its configuration, the store, the
// registry actor, and the goroutines doing store I/O, which it counts so that shutdown can wait
// for them.
type taskService struct {
	cfg      TaskConfig
	store    taskstore.Store
	registry *actor.PID
	reg      *registryState // the registry actor's state, kept across a restart
	io       sync.WaitGroup
	live     atomic.Int64 // tasks held
	running  atomic.Int64 // task actors alive
	failed   errorSet     // store failures already reported, to report each kind once a while
}

// TaskStats are the engine's task gauges.
type TaskStats struct {
	Live    int64 // tasks held: running, or finished and not yet expired
	Running int64 // tasks whose handler has not ended
}

// TaskStats returns the task gauges; zero when tasks are disabled.
func (e *Engine) TaskStats() TaskStats {
	if e.tasks == nil {
		return TaskStats{}
	}
	return TaskStats{Live: e.tasks.live.Load(), Running: e.tasks.running.Load()}
}

// TasksEnabled reports whether the engine offers the tasks extension.
func (e *Engine) TasksEnabled() bool { return e.tasks != nil }

// startTasks prepares the tasks extension before any actor runs: it takes over the tasks of an
// earlier process from the store (those expired are deleted, those that were running are now
// failed with [TaskRestartedText]) and builds the registry's state from what is left. It
// blocks on the store; Start calls it outside any actor.
func (e *Engine) startTasks() error {
	cfg := e.cfg.Tasks
	if !cfg.Enabled {
		return nil
	}
	if err := taskstore.CheckHome(cfg.Home); err != nil {
		return fmt.Errorf("actors: tasks: %w", err)
	}
	if cfg.Store == nil {
		cfg.Store = taskstore.NewMemory()
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTaskTTL
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultTaskPollInterval
	}
	if cfg.MaxTasks == 0 {
		cfg.MaxTasks = DefaultMaxTasks
	}
	if cfg.MaxTasksPerCaller == 0 {
		cfg.MaxTasksPerCaller = DefaultMaxTasksPerCaller
	}
	svc := &taskService{cfg: cfg, store: cfg.Store, reg: newRegistryState()}
	if err := svc.takeOver(context.Background(), time.Now()); err != nil {
		return fmt.Errorf("actors: tasks: %w", err)
	}
	e.tasks = svc
	return nil
}

// takeOver reads the store once: expired records are deleted, records of tasks that were
// running are rewritten as failed, and every record kept enters the registry's index.
func (s *taskService) takeOver(ctx context.Context, now time.Time) error {
	var expired []string
	var interrupted []*taskstore.Record
	err := s.store.Scan(ctx, func(r *taskstore.Record) error {
		switch {
		case !now.Before(r.ExpiresAt()):
			expired = append(expired, r.ID)
			return nil
		case !r.Status.Terminal():
			f := *r
			f.Status, f.StatusMessage, f.UpdatedAt = taskstore.Failed, TaskRestartedText, now
			f.InputRequests, f.Result = nil, nil
			f.Error = wireErrorJSON(&protocol.WireError{Code: protocol.CodeInternalError, Message: TaskRestartedText})
			interrupted = append(interrupted, &f)
		}
		s.reg.add(r.ID, r.Owner, r.ExpiresAt())
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the task store: %w", err)
	}
	if err := s.store.Delete(ctx, expired...); err != nil {
		return fmt.Errorf("delete expired tasks: %w", err)
	}
	for _, r := range interrupted {
		if err := s.store.Put(ctx, r); err != nil {
			return fmt.Errorf("mark task %s failed: %w", r.ID, err)
		}
	}
	s.live.Store(int64(len(s.reg.live)))
	return nil
}

// ownerKey is the owner of the tasks of the caller id: a digest of its authenticated subject,
// so that the store holds no identity; "" without authentication. A client's subject (its
// client_id: internal/principal) is digested apart from a user's, which keeps the digest it
// always had, so that the tasks a store holds stay their owners'.
func ownerKey(id *tools.Identity) string {
	if id == nil || id.Subject == "" {
		return ""
	}
	domain := "toolgrain/task-owner\x00"
	if principal.IsClient(id) {
		domain = "toolgrain/task-owner/client\x00"
	}
	sum := sha256.Sum256([]byte(domain + id.Subject))
	return base64.RawURLEncoding.EncodeToString(sum[:18])
}

// ttlFor is the TTL of a task of tool.
func (s *taskService) ttlFor(tool *tools.Compiled) time.Duration {
	if d := tool.Def().TaskTTL; d > 0 {
		return d
	}
	return s.cfg.TTL
}

// goIO runs fn, which does store I/O, on a worker of the engine's pool. The task service owns
// the goroutine and counts it; shutdown waits for every one (waitTaskIO).
func (e *Engine) goIO(fn func()) {
	e.tasks.io.Add(1)
	e.pool.Go(func() {
		defer e.tasks.io.Done()
		fn()
	})
}

// reportStoreError hands a failure of the task store to onError, with no details (it belongs to
// no call), once per kind of error a minute: a store that is down fails every write.
func (e *Engine) reportStoreError(op string, err error) {
	err = fmt.Errorf("task store: %s: %w", op, err)
	if e.tasks.failed.first(err.Error(), time.Minute) {
		e.Report(err)
	}
}

// errorSet remembers the texts of recent errors.
type errorSet struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// first reports whether text was not seen in the last period, and remembers it.
func (s *errorSet) first(text string, period time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if t, ok := s.seen[text]; ok && now.Sub(t) < period {
		return false
	}
	if s.seen == nil || len(s.seen) > 64 {
		s.seen = make(map[string]time.Time)
	}
	s.seen[text] = now
	return true
}

// wireErrorJSON encodes a wire error as a JSON-RPC error object.
func wireErrorJSON(we *protocol.WireError) json.RawMessage {
	b, _ := json.Marshal(we) // a WireError always encodes
	return b
}

// Messages of the task registry.
type (
	// createTask: request → registry. Admit and spawn a task for spec; its task actor answers
	// spec.replyTo with taskCreated, or the registry or the task actor with taskRefused.
	createTask struct{ spec *taskSpec }
	// taskRefused: registry or task → request. No task was made: answer the call with err.
	taskRefused struct{ err *protocol.WireError }
	// routeTask: operation goroutine → registry. Hand op (a *taskGet, *taskCancel or *taskUpdate) to the
	// task actor of id if it runs; otherwise answer op.reply with taskNotRunning.
	routeTask struct {
		id string
		op taskOp
	}
	// sweepTasks: timer → registry. Forget the tasks whose TTL has passed.
	sweepTasks struct{}
	// stopTasks: engine → registry (RequestFuture). The engine shuts down: cancel every
	// task, and reply tasksStopped once no task actor is left.
	stopTasks struct{}
	// tasksStopped: registry → engine.
	tasksStopped struct{}
	// taskAborted: task → registry. The task's first record could not be stored: forget it.
	taskAborted struct{ id string }
	// spawnTaskRegistry: engine → supervisor (RequestFuture). Spawn the task registry; the
	// reply is its *actor.PID.
	spawnTaskRegistry struct{ props *actor.Props }
)

// taskOp is an operation on a task routed through the registry; its reply channel (of size
// one) gets exactly one answer.
type taskOp interface{ replyTo() chan<- taskReply }

// taskReply is the outcome of a routed taskOp: what happened, and the error that answers the
// request, if any.
type taskReply struct {
	kind taskAnswer
	err  *protocol.WireError
	rec  *taskstore.Record // the task's record, for a taskGet
}

// taskAnswer says what became of a routed taskOp.
type taskAnswer int

const (
	taskDone       taskAnswer = iota // the task actor did it
	taskNotFound                     // no task of the caller's with that id
	taskNotRunning                   // the task is not running: look it up in the store
	taskRejected                     // the operation is invalid: err says why
)

// registryState is the registry's state, kept outside the actor so that a restart (the
// supervisor restarts a registry that panics) keeps it.
type registryState struct {
	running map[string]*actor.PID // task id → task actor, until the task has finished
	ids     map[string]string     // task actor PID id → task id
	live    map[string]*liveTask  // every task held, by id
	owners  map[string]int        // tasks held per owner
	expiry  expiryHeap
	timer   *time.Timer
	timerAt time.Time
	closing bool
	waiters []*actor.PID // stopTasks requesters
}

// liveTask is a task the store holds, as the registry sees it.
type liveTask struct {
	id, owner string
	expires   time.Time
	index     int // in expiry
}

func newRegistryState() *registryState {
	return &registryState{running: make(map[string]*actor.PID), ids: make(map[string]string),
		live: make(map[string]*liveTask), owners: make(map[string]int)}
}

func (s *registryState) add(id, owner string, expires time.Time) {
	t := &liveTask{id: id, owner: owner, expires: expires}
	s.live[id] = t
	s.owners[owner]++
	heap.Push(&s.expiry, t)
}

func (s *registryState) remove(t *liveTask) {
	delete(s.live, t.id)
	if s.owners[t.owner]--; s.owners[t.owner] <= 0 {
		delete(s.owners, t.owner)
	}
	if t.index >= 0 {
		heap.Remove(&s.expiry, t.index)
	}
}

// expiryHeap orders live tasks by expiry.
type expiryHeap []*liveTask

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *expiryHeap) Push(x any) {
	t := x.(*liveTask)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *expiryHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}

// taskRegistry is the actor that admits tasks under the caps, spawns their task actors,
// routes operations to the running ones, and forgets tasks whose TTL has passed: it deletes
// their records (off the actor) and stops those still running.
type taskRegistry struct {
	eng *Engine
	svc *taskService
	st  *registryState
}

var _ actor.SupervisorStrategy = (*taskRegistry)(nil)

func (r *taskRegistry) Receive(ctx actor.Context) {
	st := r.st
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		r.schedule(ctx)
	case *actor.Stopping, *actor.Restarting:
	case *actor.Stopped:
		if st.timer != nil {
			st.timer.Stop()
		}
	case *actor.Terminated:
		r.taskEnded(ctx, msg.Who)
	case *createTask:
		r.create(ctx, msg.spec)
	case *taskFinished:
		if id, ok := st.ids[msg.pid.Id]; ok {
			delete(st.running, id)
		}
		ctx.Poison(msg.pid)
	case *routeTask:
		if pid, ok := st.running[msg.id]; ok {
			ctx.Send(pid, msg.op)
			return
		}
		msg.op.replyTo() <- taskReply{kind: taskNotRunning}
	case *taskAborted:
		if t, ok := st.live[msg.id]; ok {
			st.remove(t)
			r.svc.live.Add(-1)
		}
	case *sweepTasks:
		st.timer, st.timerAt = nil, time.Time{}
		r.sweep(ctx, time.Now())
	case *stopTasks:
		st.closing = true
		st.waiters = append(st.waiters, ctx.Sender())
		for _, pid := range st.running {
			ctx.Send(pid, &stopTask{})
		}
		r.replyIfStopped(ctx)
	default:
		r.eng.log.Debug("task registry: unexpected message", zap.String("type", fmt.Sprintf("%T", msg)))
	}
}

// create admits a task under the caps and spawns its actor.
func (r *taskRegistry) create(ctx actor.Context, spec *taskSpec) {
	st, cfg := r.st, &r.svc.cfg
	var werr *protocol.WireError
	switch {
	case st.closing:
		werr = protocol.ErrInvalidRequest("server shutting down")
	case cfg.MaxTasks > 0 && len(st.live) >= cfg.MaxTasks:
		werr = protocol.ErrTooManyTasks(protocol.BusyTasksServer, cfg.MaxTasks)
	case spec.owner != "" && cfg.MaxTasksPerCaller > 0 && st.owners[spec.owner] >= cfg.MaxTasksPerCaller:
		werr = protocol.ErrTooManyTasks(protocol.BusyTasksCaller, cfg.MaxTasksPerCaller)
	}
	if werr != nil {
		ctx.Send(spec.replyTo, &taskRefused{err: werr})
		return
	}
	id, err := taskstore.NewID(cfg.Home)
	if err != nil { // the home was checked at start
		ctx.Send(spec.replyTo, &taskRefused{err: protocol.ErrInternal()})
		return
	}
	now := time.Now()
	spec.id, spec.created = id, now
	pid := ctx.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor { return newTaskActor(spec) },
		actor.WithDispatcher(r.eng.dispatcher)), "task")
	st.running[id] = pid
	st.ids[pid.Id] = id
	st.add(id, spec.owner, now.Add(spec.ttl))
	r.svc.live.Add(1)
	r.svc.running.Add(1)
	r.schedule(ctx)
}

// taskEnded forgets a task actor that stopped. A task whose TTL passed while it ran is
// deleted once more: a write of the actor's may have landed after the sweep deleted it.
func (r *taskRegistry) taskEnded(ctx actor.Context, who *actor.PID) {
	st := r.st
	id, ok := st.ids[who.Id]
	if !ok {
		return
	}
	delete(st.ids, who.Id)
	delete(st.running, id)
	r.svc.running.Add(-1)
	if _, live := st.live[id]; !live {
		r.deleteRecords(id)
	}
	r.replyIfStopped(ctx)
}

func (r *taskRegistry) replyIfStopped(ctx actor.Context) {
	if !r.st.closing || len(r.st.ids) > 0 {
		return
	}
	for _, w := range r.st.waiters {
		ctx.Send(w, &tasksStopped{})
	}
	r.st.waiters = nil
}

// sweep forgets every task whose TTL has passed by now: running ones are told to stop, and
// every record is deleted.
func (r *taskRegistry) sweep(ctx actor.Context, now time.Time) {
	st := r.st
	var ids []string
	for st.expiry.Len() > 0 && !now.Before(st.expiry[0].expires) {
		t := heap.Pop(&st.expiry).(*liveTask)
		st.remove(t)
		r.svc.live.Add(-1)
		ids = append(ids, t.id)
		if pid, ok := st.running[t.id]; ok {
			ctx.Send(pid, &expireTask{})
		}
	}
	if len(ids) > 0 {
		r.deleteRecords(ids...)
	}
	r.schedule(ctx)
}

// deleteRecords deletes records off the actor.
func (r *taskRegistry) deleteRecords(ids ...string) {
	e := r.eng
	e.goIO(func() {
		if err := e.tasks.store.Delete(context.Background(), ids...); err != nil {
			e.reportStoreError("delete expired tasks", err)
		}
	})
}

// schedule sets the timer for the next expiry.
func (r *taskRegistry) schedule(ctx actor.Context) {
	st := r.st
	if st.expiry.Len() == 0 || st.closing {
		return
	}
	next := st.expiry[0].expires
	if st.timer != nil && !st.timerAt.After(next) {
		return
	}
	if st.timer != nil {
		st.timer.Stop()
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	st.timerAt = next
	st.timer = time.AfterFunc(max(time.Until(next), 0), func() { root.Send(self, &sweepTasks{}) })
}

// HandleFailure implements [actor.SupervisorStrategy] for task actors. A panic there is a bug
// in the engine (tool panics are recovered on the handler goroutine): the task actor is stopped
// and its record, if the task had not ended, is marked failed, as a restart would.
func (r *taskRegistry) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ interface{}) {
	r.eng.log.Error("task actor panicked", zap.String("actor", child.Id), zap.Any("reason", reason))
	r.eng.Report(fmt.Errorf("internal error: task actor panicked: %v", reason))
	if id, ok := r.st.ids[child.Id]; ok {
		e := r.eng
		e.goIO(func() { e.failStoredTask(id, protocol.ErrInternal()) })
	}
	sup.StopChildren(child)
}

// failStoredTask marks the stored task id failed with werr unless it has ended.
func (e *Engine) failStoredTask(id string, werr *protocol.WireError) {
	ctx := context.Background()
	rec, err := e.tasks.store.Get(ctx, id)
	if err != nil || rec.Status.Terminal() {
		return
	}
	f := *rec
	f.Status, f.StatusMessage, f.UpdatedAt = taskstore.Failed, werr.Message, time.Now()
	f.InputRequests, f.Result, f.Error = nil, nil, wireErrorJSON(werr)
	if err := e.tasks.store.Put(ctx, &f); err != nil {
		e.reportStoreError("mark a task failed", err)
	}
}

// spawnTaskRegistry has the supervisor spawn the task registry; Start calls it.
func (e *Engine) spawnTaskRegistry() error {
	if e.tasks == nil {
		return nil
	}
	svc := e.tasks
	props := actor.PropsFromProducer(func() actor.Actor { return &taskRegistry{eng: e, svc: svc, st: svc.reg} },
		actor.WithDispatcher(e.dispatcher))
	res, err := e.system.Root.RequestFuture(e.supervisor, &spawnTaskRegistry{props: props}, defaultActorReplyTimeout).Result()
	if err != nil {
		return fmt.Errorf("actors: spawn the task registry: %w", err)
	}
	svc.registry = res.(*actor.PID)
	return nil
}

// stopTasks cancels every running task (its handler's context ends with cancel.ErrShutdown;
// nothing more is stored for it, so a durable store still says it runs, and the next server
// reports it failed with [TaskRestartedText]), waits for the task actors to stop, then for the
// store writes in flight. It returns ctx's error if ctx ends first.
func (e *Engine) stopTasks(ctx context.Context) error {
	if e.tasks == nil {
		return nil
	}
	timeout := defaultActorReplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if timeout <= 0 {
		return ctx.Err()
	}
	if _, err := e.system.Root.RequestFuture(e.tasks.registry, &stopTasks{}, timeout).Result(); err != nil {
		return fmt.Errorf("actors: stop tasks: %w", err)
	}
	done := make(chan struct{})
	// Owned by stopTasks; ends when the store writes in flight end (no task actor is left to
	// start one). If ctx ends first it lingers until then, which the store bounds.
	go func() { e.tasks.io.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
