// Package engine is the server's actor tree on protoactor-go (package actors draws it for the
// hosts that run it on their own actor system):
//
//	server supervisor
//	├── diagnostics actor   runs onError; its failures never reach a client
//	├── tool actors         one per tool; the admission gate for tools with a concurrency limit
//	├── tool-<name>         one per actor-backed tool defined by Props, running the host's actor
//	├── task registry       the tasks extension: one task actor per task
//	└── connection actors   one per stdio stream, in-memory client or legacy HTTP session, and
//	    │                   the HTTP transport's stateless one
//	    ├── request actors  one per tools/call; each owns its call's cancellation state
//	    └── operations      one per resources/read, prompts/get, completion/complete, custom
//	                        method and tasks/* request, owning theirs alike
//
// No Receive ever blocks: handlers run on goroutines owned by their request actor, onError
// callbacks on goroutines owned by the diagnostics actor, and every wait is a message. A call of
// an actor-backed tool is a message to the tool's actor (the host's, or a tool-<name> child),
// whose reply comes back as a message too.
//
// On an actor system shared with a host, the supervisor's name is checked to be free (see
// actors.RootPrefix) and Shutdown stops exactly the tree below it.
//
// # A call's path
//
// A tools/call goes through four files of the package (docs/internals.md walks it from the
// transports, with the actor messages in order):
//
//   - handle.go: the [Connection] a transport holds; its Deliver functions hand each decoded
//     message to the connection actor as an *inbound.
//   - dispatch.go: the connection actor's Receive, and the JSON-RPC methods of both eras side by
//     side: handle for a legacy session, handleModern for a 2026-07-28 request.
//   - request.go: callTool, the connection actor's side of a call, and the request actor that
//     validates it, runs its handler (runHandler), answers (respondAs) and reports an
//     unexpected failure (fail).
//   - diagnostics.go: the diagnostics actor, which runs onError.
//
// The rest, by role: engine.go (the Engine, its Config, Start and Shutdown), connection.go (the
// connection actor's state and life: initialize, its flights and children, its end),
// messages.go (every message between the actors); the other methods (lists.go, resources.go,
// prompts.go, completion.go, listen.go, methods.go; operation.go runs their handlers) and the
// modern era's annotations and input rounds (modern.go, input.go); requests to the client
// (peer.go, outgoing.go); the tasks extension (taskregistry.go, the registry and the tasks'
// service; taskactor.go, one task; taskrequests.go, the requests that reach a task;
// taskpeer.go, the client a task's handler sees); actor-backed tools (actortool.go, tool.go);
// limits (limits.go), batches (batch.go), passivation (passivate.go), visibility
// (visibility.go, tags.go), telemetry (telemetry.go, trace.go, metrics.go).
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/actors"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/internal/mrtr"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// Defaults for the zero values of [Config].
const (
	DefaultPageSize          = 100
	DefaultDiagnosticsQueue  = 1024
	DefaultCallbackTimeout   = 5 * time.Second
	DefaultMaxAbandoned      = 16
	DefaultGrace             = 5 * time.Second // of HandlerGrace and EndOfInputGrace
	defaultActorReplyTimeout = 10 * time.Second
	// DefaultMaxClientDeclaration bounds what one initialize declares: 64 KiB, far beyond
	// what real clients declare.
	DefaultMaxClientDeclaration = 64 << 10
)

// ErrClosed is returned when a connection is opened on an engine that is shutting down.
var ErrClosed = errors.New("engine closed")

// Config configures an [Engine]. The zero value of every field but Tools is usable.
type Config struct {
	// Relay, when set, is called with every list change (method
	// notifications/{tools,resources,prompts}/list_changed, uri "") and resource update (method
	// notifications/resources/updated and its uri) that happens on this engine, after its own
	// connections were told, so that other engines (the members of a cluster) can tell theirs
	// with [Engine.Deliver]. It must not block. Nil means none.
	Relay func(method, uri string)
	// System is the actor system to spawn the engine's actors on. Nil means the engine makes its
	// own and shuts it down in [Engine.Shutdown]; a given system is left running.
	System *actor.ActorSystem
	// Tools are the compiled tool definitions.
	Tools *tools.Set
	// ServerInfo and Instructions go into the initialize result.
	ServerInfo   protocol.Implementation
	Instructions string
	// OnError receives unexpected failures. Nil logs them on Logger at error level.
	OnError diagnostics.OnError
	// Logger is the engine's logger. Nil means zap.NewNop().
	Logger *zap.Logger
	// Metrics receives the engine's measurements. Nil means metrics.Nop{}.
	Metrics metrics.Recorder
	// PageSize is the number of tools per tools/list page; 0 means DefaultPageSize.
	PageSize int
	// HideForbiddenTools hides from a caller the tools whose Scopes its identity lacks (all
	// tools with scopes, for a caller without identity): a hidden tool answers as a tool that
	// does not exist (visibility.go).
	HideForbiddenTools bool
	// Visibility are the rules that decide which components each caller sees, and the tags
	// disabled at start (package visibility; visibility.go). It must have passed its Check.
	Visibility visibility.Config
	// TagSync keeps the state of the tags the same on every member of a cluster (tags.go). The
	// zero value is a single engine.
	TagSync TagSync
	// DiagnosticsQueue bounds the reports waiting for onError; further ones are dropped and
	// counted. 0 means DefaultDiagnosticsQueue.
	DiagnosticsQueue int
	// CallbackTimeout is how long one onError call may run before it is abandoned and the next
	// report starts. 0 means DefaultCallbackTimeout.
	CallbackTimeout time.Duration
	// MaxAbandonedCallbacks caps abandoned onError calls still running; while the cap is
	// reached, reports wait in the queue. 0 means DefaultMaxAbandoned.
	MaxAbandonedCallbacks int
	// HandlerGrace is how long a closing connection waits for the handlers of the calls it
	// cancelled to return; it then stops without them. 0 means DefaultGrace.
	HandlerGrace time.Duration
	// EndOfInputGrace is how long the requests in flight on a connection whose input ended
	// ([Connection.Finish]) get to answer; those still running then are cancelled as by
	// [Connection.Close]. 0 means DefaultGrace.
	EndOfInputGrace time.Duration

	// Resources and Prompts are the compiled resources, resource templates and prompts. Nil
	// means none (until added at run time).
	Resources *resources.Set
	Prompts   *prompts.Set
	// LogLevel is the lowest level of log messages sent to a client that has not called
	// logging/setLevel. "" means protocol.LevelDebug: everything.
	LogLevel string
	// ProgressInterval rate-limits the progress notifications of one call: after a burst, one
	// per interval. 0 means DefaultProgressInterval; negative means no limit.
	ProgressInterval time.Duration
	// MaxCallsPerConnection and MaxCalls bound the tools/call requests in flight on one
	// connection and on the whole engine: a call counts from its acceptance until it is
	// answered or cancelled, and one over a limit is refused with [protocol.ErrServerBusy].
	// 0 means DefaultMaxCallsPerConnection and DefaultMaxCalls; negative means no limit.
	MaxCallsPerConnection int
	MaxCalls              int
	// ToolTimeout is the timeout of the calls of tools whose own Timeout is zero. 0 means none.
	ToolTimeout time.Duration
	// MaxClientDeclaration bounds, in bytes, what an initialize declares and its connection
	// keeps for its life: its capabilities as sent, and the strings of its clientInfo (name,
	// title, version, icons). Over it the initialize is refused with -32602 naming the limit. 0 means
	// DefaultMaxClientDeclaration; negative means no limit.
	MaxClientDeclaration int

	// RequestStateKey protects the requestState of modern multi-round-trip requests
	// (HMAC-SHA256); it needs at least 32 bytes. Engines that share it accept each other's
	// states. Nil means a random key of this engine's own.
	RequestStateKey []byte
	// RequestStateTTL is how long a requestState stays valid. 0 means 10 minutes.
	RequestStateTTL time.Duration
	// CacheTTL is the ttlMs of the modern results a client may cache (server/discover, the
	// lists, resources/read). 0 means 0: stale at once.
	CacheTTL time.Duration

	// Tasks configures the tasks extension (taskregistry.go). The zero value disables it.
	Tasks TaskConfig

	// Methods are the custom methods served, by name (methods.go); the names are checked by
	// the caller (protocol.CheckMethodName). Nil means none.
	Methods map[string]*Method
	// Extensions are the extensions declared in the capabilities, by identifier, each with
	// its settings object: under experimental at initialize, under extensions in
	// server/discover. Nil means none (the tasks extension is declared by Tasks).
	Extensions map[string]json.RawMessage

	// Telemetry is the OpenTelemetry instrumentation (spans, metrics). The zero value records
	// nothing.
	Telemetry Telemetry
}

// Engine is a running actor tree. Its methods are safe for concurrent use.
type Engine struct {
	cfg       Config
	log       *zap.Logger
	system    *actor.ActorSystem
	ownSystem bool

	supervisor *actor.PID
	diag       *actor.PID
	diagState  *diagState
	toolPIDs   map[string]*actor.PID
	actorTools actorTools
	supervised supervisedActors // the actors of mounted sources (mount.go)
	metrics    metrics.Recorder

	// handlers counts handler goroutines still running; Shutdown waits for it.
	handlers sync.WaitGroup
	// calls counts the calls in flight on every connection, for Config.MaxCalls.
	calls atomic.Int64
	// pool runs the engine's mailboxes and handlers on warm goroutines.
	pool       *workerPool
	dispatcher actor.Dispatcher

	mu     sync.Mutex
	conns  map[*Connection]struct{}
	closed bool

	stats Stats

	reg      registry // tools, resources and prompts, changeable at run time
	vis      visState // who sees which of them (visibility.go)
	logLevel int      // severity of cfg.LogLevel

	sealer     *mrtr.Sealer // seals and opens the requestState of modern requests
	serverMeta []byte       // the serverInfo member of every modern result's _meta
	// plainAnn annotates every modern result that carries no cache hint; shared, never changed.
	plainAnn  *protocol.Annotation
	listeners listeners // the open subscriptions/listen streams of every connection
	interned  interned  // what passive connections share (passivate.go)
	// noCaps and noInfo are what a connection that started passive holds before initialize.
	noCaps *protocol.ClientCapabilities
	noInfo *protocol.Implementation
	tasks  *taskService // the tasks extension; nil when disabled (taskregistry.go)

	tel         *telemetry   // OpenTelemetry; nil when it records nothing
	slotWaiters atomic.Int64 // calls waiting for a run slot of a tool with MaxConcurrency
}

// Stats are the engine's running counters.
type Stats struct {
	// DroppedReports counts reports dropped because the diagnostics queue was full.
	DroppedReports atomic.Uint64
	// AbandonedCallbacks counts onError calls abandoned after their timeout.
	AbandonedCallbacks atomic.Uint64
	// CallbackPanics counts onError calls that panicked.
	CallbackPanics atomic.Uint64
	// RefusedCalls counts calls refused because a limit on calls in flight was reached.
	RefusedCalls atomic.Uint64
}

// Start builds the actor tree.
func Start(cfg Config) (*Engine, error) {
	if cfg.Tools == nil {
		return nil, errors.New("actors: Config.Tools is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.DiagnosticsQueue <= 0 {
		cfg.DiagnosticsQueue = DefaultDiagnosticsQueue
	}
	if cfg.CallbackTimeout <= 0 {
		cfg.CallbackTimeout = DefaultCallbackTimeout
	}
	if cfg.MaxAbandonedCallbacks <= 0 {
		cfg.MaxAbandonedCallbacks = DefaultMaxAbandoned
	}
	if cfg.HandlerGrace <= 0 {
		cfg.HandlerGrace = DefaultGrace
	}
	if cfg.EndOfInputGrace <= 0 {
		cfg.EndOfInputGrace = DefaultGrace
	}
	if cfg.OnError == nil {
		cfg.OnError = diagnostics.ZapSink(cfg.Logger)
	}
	if cfg.MaxCallsPerConnection == 0 {
		cfg.MaxCallsPerConnection = DefaultMaxCallsPerConnection
	}
	if cfg.MaxCalls == 0 {
		cfg.MaxCalls = DefaultMaxCalls
	}
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	if cfg.MaxClientDeclaration == 0 {
		cfg.MaxClientDeclaration = DefaultMaxClientDeclaration
	}
	level := 0
	if cfg.LogLevel != "" {
		var ok bool
		if level, ok = protocol.LogSeverity(cfg.LogLevel); !ok {
			return nil, fmt.Errorf("actors: invalid log level %q", cfg.LogLevel)
		}
	}
	key := cfg.RequestStateKey
	if key == nil {
		key = mrtr.NewKey()
	}
	sealer, err := mrtr.NewSealer(key, cfg.RequestStateTTL)
	if err != nil {
		return nil, fmt.Errorf("actors: %w", err)
	}
	e := &Engine{cfg: cfg, log: cfg.Logger, conns: make(map[*Connection]struct{}), pool: newWorkerPool(), logLevel: level,
		sealer: sealer, serverMeta: protocol.MetaMembers(cfg.ServerInfo)}
	e.plainAnn = &protocol.Annotation{Meta: e.serverMeta}
	e.noCaps, e.noInfo = &protocol.ClientCapabilities{}, &protocol.Implementation{}
	e.listeners.init()
	e.initVisibility()
	e.dispatcher = poolDispatcher{pool: e.pool}
	e.system = cfg.System
	if e.system == nil {
		e.system = actors.NewSystem(cfg.Logger)
		e.ownSystem = true
	}
	e.diagState = newDiagState(e)
	if err := e.prepareEmbedding(); err != nil {
		return nil, err
	}
	if err := e.startTasks(); err != nil {
		e.pool.close()
		return nil, err
	}
	if e.tel, err = newTelemetry(cfg.Telemetry, e); err != nil {
		e.pool.close()
		return nil, err
	}

	props := actor.PropsFromProducer(func() actor.Actor { return &supervisorActor{eng: e} },
		actor.WithGuardian(actor.NewRestartingStrategy()), actor.WithDispatcher(e.dispatcher))
	sup, err := spawnRoot(e.system, props)
	if err != nil {
		e.tel.stop()
		return nil, err
	}
	e.supervisor = sup
	res, err := e.system.Root.RequestFuture(e.supervisor, &startTree{}, defaultActorReplyTimeout).Result()
	if err == nil {
		err = e.startActorTools(e.cfg.Tools)
	}
	if err == nil {
		err = e.spawnTaskRegistry()
	}
	if err != nil {
		_ = e.system.Root.StopFuture(e.supervisor).Wait()
		if e.ownSystem {
			e.system.Shutdown()
		}
		e.tel.stop()
		e.pool.close()
		return nil, fmt.Errorf("actors: start supervisor: %w", err)
	}
	tree := res.(*treeStarted)
	e.diag = tree.diag
	e.toolPIDs = tree.tools
	e.initRegistry(tree.tools)
	return e, nil
}

// Occupancy is what an engine holds at one moment.
type Occupancy struct {
	Connections int   // connections: stdio streams, legacy HTTP sessions (passive ones too), stateless ones
	Calls       int64 // tools/call requests in flight, over every connection
	Listeners   int   // open subscriptions/listen streams
}

// Occupancy returns what the engine holds now.
func (e *Engine) Occupancy() Occupancy {
	e.mu.Lock()
	conns := len(e.conns)
	e.mu.Unlock()
	return Occupancy{Connections: conns, Calls: e.calls.Load(), Listeners: e.listeners.Len()}
}

// Closed reports whether the engine is shutting down or shut down.
func (e *Engine) Closed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// System returns the actor system the engine runs on.
func (e *Engine) System() *actor.ActorSystem { return e.system }

// Stats returns the engine's counters.
func (e *Engine) Stats() *Stats { return &e.stats }

// Report hands a failure outside any tool call (transport, internal) to onError with no details.
// It never blocks.
func (e *Engine) Report(err error) { e.report(err, nil) }

func (e *Engine) report(err error, d *diagnostics.ToolErrorDetails) {
	e.system.Root.Send(e.diag, &report{err: err, details: d})
}

// Shutdown stops the engine: it closes every connection (cancelling the calls in flight), stops
// the running tasks and waits for their store writes, waits for the connections, waits for
// handler goroutines, flushes the diagnostics queue through onError,
// then stops the engine's actors, and the actor system if the engine made it. It returns
// ctx.Err() if ctx ends first; the actors are stopped in any case. Calling it twice is safe.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	conns := make([]*Connection, 0, len(e.conns))
	for c := range e.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	e.endListeners()

	for _, c := range conns {
		c.Close()
	}
	err := e.stopTasks(ctx)
	for _, c := range conns {
		if err != nil {
			break
		}
		select {
		case <-c.Done():
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil {
		err = e.waitHandlers(ctx)
	}
	if err == nil {
		err = e.flushDiagnostics(ctx)
	}
	if err == nil {
		err = e.awaitConnectionsGone(ctx)
	}
	// Stopping the supervisor stops its children first: diagnostics, tools and any connection
	// left over after ctx ended.
	if werr := e.system.Root.StopFuture(e.supervisor).Wait(); werr != nil && err == nil {
		err = fmt.Errorf("actors: stop supervisor: %w", werr)
	}
	if e.ownSystem {
		e.system.Shutdown()
	}
	e.tel.stop()
	if err == nil {
		e.pool.close()
	}
	return err
}

func (e *Engine) waitHandlers(ctx context.Context) error {
	done := make(chan struct{})
	// Owned by waitHandlers; ends when every handler goroutine has returned. If ctx ends first
	// it lingers until then, which is bounded by the handlers themselves.
	go func() { e.handlers.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) flushDiagnostics(ctx context.Context) error {
	timeout := defaultActorReplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return ctx.Err()
		}
	}
	if _, err := e.system.Root.RequestFuture(e.diag, &flush{}, timeout).Result(); err != nil {
		return fmt.Errorf("actors: flush diagnostics: %w", err)
	}
	return nil
}
