// Package toolgrain is an actor-based, high-concurrency MCP (Model Context Protocol) server
// engine.
//
// A [Server] serves a set of tools (package tools) to MCP clients. Every tools/call runs in its
// own request actor on protoactor-go, which owns the call's cancellation state: a cancelled call
// gets no response at all, not even a late one, and thousands of calls can be in flight on one
// connection while pings and cancellations are still answered at once.
//
// # Serving
//
// [NewServer] checks and compiles the tool definitions and starts the actor tree; a bad
// definition is an error, never a panic. A server then serves any number of connections at
// once, each with its own connection actor:
//
//   - [Server.ServeStdio]: newline-delimited JSON-RPC on any reader and writer (os.Stdin and
//     os.Stdout for a local client, a pipe, a net.Conn);
//   - [Server.Handler]: Streamable HTTP (package streamable), an http.Handler to mount in any
//     mux next to other routes, with the older HTTP+SSE transport of MCP 2024-11-05 beside it,
//     CORS for the allowed browser origins and optional bearer auth ([AuthConfig]); each HTTP
//     session is one connection;
//   - [Server.ConnectInMemory]: a client in the same process, for tests and in-process callers.
//
// Serving stdio and HTTP at once is a matter of mounting the handler and calling ServeStdio
// from its own goroutine, on the one server. [Server.Shutdown] (or [Server.Close]) ends every
// connection, HTTP sessions included, cancelling the calls in flight, delivers the pending
// OnError reports and stops the actors.
//
// # Protocol eras
//
// Every transport serves MCP 2026-07-28 and the revisions from 2024-11-05 to 2025-11-25 at once,
// deciding per message: a request whose params._meta carries the 2026-07-28 envelope is served
// on its own, statelessly (server/discover, annotated results, input_required rounds instead of
// requests to the client, subscriptions/listen), while initialize opens a legacy session of the
// revision the client asks for, answered in that revision's shape (no structuredContent before
// 2025-06-18, JSON-RPC batches in 2025-03-26, ...). The tools, the handler API (package client)
// and the error model are the same in all of them.
//
// # Tools
//
// A tool is a [tools.Tool]: a name, JSON Schemas (input, output, _meta) compiled once, and a
// handler. A typed handler ([tools.Func], [tools.Structured]) needs no schema text: its schemas
// are inferred from its Go types. [Config].Middleware wraps every call (rate limits, logging,
// authorisation: see [tools.Middleware] and package tools/middleware). A Go handler
// ([tools.HandlerFunc], [tools.Func], [tools.Structured]) runs on a
// goroutine of its own with a context cancelled by the client, a closed connection, the tool's
// timeout or shutdown. An actor-backed tool ([tools.NewActorHandler] for an actor of the host's,
// [tools.NewActorPropsHandler] for one the server spawns) receives each call as a
// [tools.ActorCall] message and replies with [tools.ActorResult] or [tools.ActorError]; see
// [tools.ActorHandler] for the contract.
//
// It also serves resources and resource templates (package resources), prompts (package
// prompts), logging and completions; handlers reach their client through package client (log
// messages, sampling, elicitation, roots). Tools, resources and prompts can change while the
// server runs ([Server.AddTools] and the like).
//
// # Error model
//
// Clients get useful feedback for what they can fix, and nothing else:
//
//   - an unknown tool or an invalid protocol message is a JSON-RPC error (-32602, -32600, ...);
//   - arguments or _meta that fail the tool's schema give an isError result whose text names
//     each field and rule, for example "invalid arguments: ms: must be <= 600000";
//   - an explicit public error result from a handler ([tools.ErrorResult]), or from a tool
//     actor's reply, reaches the client unchanged;
//   - every unexpected failure (a handler error or panic, a typed-input parse failure, an output
//     that fails its schema or cannot be encoded, a failing provider, a timeout, a tool actor
//     that replies with a failure, never replies, crashes or is gone) gives an isError result
//     with the text "Tool execution failed" ([FailedText]) and no structuredContent. The
//     original error (for a timeout, one wrapping [ErrToolTimeout]) reaches the operator
//     privately through [Config].OnError, with the tool name and the request (id, method, tool
//     name, client-supplied _meta), never the arguments;
//   - a call over a limit on calls in flight is refused, unprocessed, with the JSON-RPC error
//     -31000 "Server busy: ..." (see [Config].Limits.MaxCallsPerConnection);
//   - nothing at all is sent, and nothing reported, for a call after it was cancelled;
//   - over HTTP, a missing, rejected or under-scoped bearer token gets 401 or 403 and is not
//     reported; a token verifier that fails unexpectedly gets 503 with no detail, and OnError
//     receives the original error with nil details.
//
// The limits, the slow-consumer policy and the security promises are listed, each with the test
// that backs it, in RELIABILITY.md.
//
// OnError runs on a supervised diagnostics actor after the response was sent: a callback that
// panics, is slow or blocks forever changes no response.
//
// # Embedding
//
// A server fits inside a larger Go service and touches nothing global:
//
//   - Actors: [Config].ActorSystem puts the server on the host's protoactor system. Its actors
//     live under one top-level actor ([Server.RootPID]) whose name is checked to be free, and
//     Close stops exactly those, leaving the system and the host's actors running. Tools can
//     be backed by the host's actors.
//   - Logging: [Config].Logger is the host's *zap.Logger, used as given; nothing is logged
//     through a global logger. On a server-made actor system, protoactor's own lines go to it
//     too; on the host's system they go wherever the host sent them.
//   - Metrics: [Config].Telemetry.Metrics receives calls by tool and outcome, calls in flight,
//     cancellations, late responses suppressed, dropped reports and latency (package
//     metrics); package metrics/prom turns them into Prometheus collectors for the host's own
//     registry. No default registry, no default HTTP mux.
//   - OpenTelemetry: the TracerProvider, MeterProvider and Propagator of [Config].Telemetry
//     are the host's (the API only; nil records nothing and costs nothing). Every request gets
//     a SERVER span named and attributed by the MCP semantic conventions, parented on the
//     trace context of its params._meta and linked to the transport's span; the handler's
//     context carries it. The mcp.server.operation.duration and mcp.server.session.duration
//     histograms and the engine's toolgrain.* load metrics go to the MeterProvider.
//     Arguments, results and the text of unexpected failures stay out of spans unless the
//     operator opts in.
//   - Health: [Server.Live] and [Server.Ready] are functions for the host's probes.
//   - Tests: [Server.ConnectInMemory] gives the host's tests a real MCP connection with no I/O.
//
// The runnable example in examples/service embeds a server next to a service's own actors,
// routes and metrics.
//
// # Guides
//
// This documentation is the reference. The guides in the module's docs directory are the
// narrative, one topic each, with runnable examples:
//
//   - [The error model and diagnostics]: what a client sees and what OnError gets
//   - [The two protocol eras]: 2026-07-28 requests beside 2025-11-25 sessions, and asking the
//     client for input in both
//   - [Writing tools]: typed tools, schemas from Go types, middleware, actor tools, progress,
//     resources, prompts and completion
//   - [Embedding]: the host's actor system, mounting, the in-memory client, logging and metrics
//   - [Streamable HTTP] and [Authentication]
//   - [Tasks], [Running a cluster], [Observability], [Limits and reliability]
//   - [Serving other MCP servers] (the gateway), [Visibility] (tags, rules and toolsets) and
//     [Security]
//   - [The server binary], with every flag, and [Benchmarking with mcpbench]
//   - [Internals]: one tools/call from the transports to the answer and to OnError
//
// The README is where to start: https://github.com/toolgrain/toolgrain#readme.
//
// [The error model and diagnostics]: https://github.com/toolgrain/toolgrain/blob/main/docs/errors.md
// [The two protocol eras]: https://github.com/toolgrain/toolgrain/blob/main/docs/eras.md
// [Writing tools]: https://github.com/toolgrain/toolgrain/blob/main/docs/tools.md
// [Embedding]: https://github.com/toolgrain/toolgrain/blob/main/docs/embedding.md
// [Streamable HTTP]: https://github.com/toolgrain/toolgrain/blob/main/docs/http.md
// [Authentication]: https://github.com/toolgrain/toolgrain/blob/main/docs/auth.md
// [Tasks]: https://github.com/toolgrain/toolgrain/blob/main/docs/tasks.md
// [Running a cluster]: https://github.com/toolgrain/toolgrain/blob/main/docs/cluster.md
// [Observability]: https://github.com/toolgrain/toolgrain/blob/main/docs/observability.md
// [Limits and reliability]: https://github.com/toolgrain/toolgrain/blob/main/docs/limits.md
// [The server binary]: https://github.com/toolgrain/toolgrain/blob/main/docs/server.md
// [Benchmarking with mcpbench]: https://github.com/toolgrain/toolgrain/blob/main/docs/mcpbench.md
// [Serving other MCP servers]: https://github.com/toolgrain/toolgrain/blob/main/docs/gateway.md
// [Visibility]: https://github.com/toolgrain/toolgrain/blob/main/docs/visibility.md
// [Security]: https://github.com/toolgrain/toolgrain/blob/main/docs/security.md
// [Internals]: https://github.com/toolgrain/toolgrain/blob/main/docs/internals.md
package toolgrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/cluster"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/internal/clusterhook"
	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/httpserve"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// Version is the engine's version, reported as serverInfo.version when Config.Version is empty.
const Version = "0.1.0"

// FailedText is the text of the generic result that stands for every unexpected failure.
const FailedText = engine.FailedText

// ErrToolTimeout is wrapped by the error [Config].OnError receives for a call that ran past its
// timeout (tools.Tool.Timeout, or [Config].Limits.ToolTimeout), whose client got the generic
// [FailedText] result: errors.Is(err, ErrToolTimeout) tells a timeout from the handler's own
// failures.
var ErrToolTimeout = engine.ErrTimeout

// ErrServerClosed is returned by the Serve methods after [Server.Close].
var ErrServerClosed = errors.New("toolgrain: server closed")

// OnError receives unexpected failures; see [diagnostics.OnError].
type OnError = diagnostics.OnError

// ToolErrorDetails identifies the tool call an unexpected failure belongs to.
type ToolErrorDetails = diagnostics.ToolErrorDetails

// Config configures a [Server]. Only Tools is required; every other zero value is usable.
// The settings of one concern are grouped, each group documented on its type: Limits,
// Diagnostics, Telemetry, RequestState, HTTP and Tasks.
type Config struct {
	// Name and Version are reported as serverInfo. Empty means "toolgrain" and [Version].
	Name    string
	Version string
	// Title is the optional human-readable serverInfo.title.
	Title string
	// Icons are the server's icons, serverInfo.icons: sent to the clients of MCP 2025-11-25
	// and 2026-07-28, left out for older revisions. Each must pass protocol.CheckIcons: an
	// https: URL or a data: URI of base64 image data, an image MIME type, sizes "48x48" or
	// "any", theme "light" or "dark"; one that does not is an error from NewServer that wraps
	// a *protocol.IconError. Nil means none.
	Icons []protocol.Icon
	// Instructions are returned in the initialize result, for the client's model.
	Instructions string

	// Tools are the tools to serve, listed in this order. Names must follow MCP's rules and be
	// unique; schemas are compiled once, here. See package tools.
	Tools []tools.Tool
	// Middleware wraps every tool call's handler, in order: the first is the outermost. It runs
	// after the call's arguments were validated, in both protocol eras and on every transport,
	// for Go handlers and actor-backed tools alike, calls that run as tasks and tools added
	// later (AddTools) included; see tools.Middleware for what it sees and how its outcomes
	// reach the client (an error or a panic is an unexpected failure, a tools.ErrorResult
	// reaches the client unchanged, nothing is sent after a cancellation). Package
	// tools/middleware has a per-caller rate limit and a call log. Nil means none, and costs
	// nothing per call. A nil entry is an error from NewServer.
	Middleware []tools.Middleware
	// Resources and ResourceTemplates are the resources to serve, listed in this order; see
	// package resources. Prompts are the prompts; see package prompts. Nil means none. All
	// three, and Tools, can also change while the server runs ([Server.AddTools] and the
	// like).
	Resources         []resources.Resource
	ResourceTemplates []resources.Template
	Prompts           []prompts.Prompt
	// Methods are JSON-RPC methods beyond the MCP specification's ("acme/reindex"), served in
	// both protocol eras and over every transport with the error model, cancellation and the
	// limits on calls in flight of a tools/call; see [Method] and [TypedMethod]. A name that
	// is a method of the specification, in one of its namespaces or without a namespace
	// prefix, a name given twice and a Method without a handler are errors from NewServer.
	// Nil means none.
	Methods []Method
	// Extensions are the extensions (SEP-2133) the server declares, by identifier
	// ("com.example/search", a _meta key with a mandatory prefix), each with its settings, a
	// JSON object (nil means {}): in server/discover's capabilities.extensions (MCP
	// 2026-07-28), and in the initialize result's capabilities.experimental for the legacy
	// revisions, whose schemas have no extensions member. A malformed identifier, settings
	// that are not an object, and io.modelcontextprotocol/tasks (declared by Tasks) are
	// errors from NewServer. Nil means none.
	Extensions map[string]json.RawMessage

	// HideForbiddenTools hides from each caller the tools it may not call: those whose
	// tools.Tool.Scopes its identity lacks (for a caller without identity, every tool that has
	// scopes). A hidden tool is one that does not exist, on every transport and in both eras:
	// tools/list leaves it out; a tools/call of it gets exactly the answer of a call of an
	// unknown tool (the JSON-RPC error -32602 "unknown tool" naming the name requested, with
	// that error's HTTP status), before anything of the tool is checked (over HTTP in MCP
	// 2026-07-28 its Mcp-Param headers are not looked at); and its tasks answer tasks/get,
	// tasks/update and tasks/cancel as tasks that do not exist, and are not followed by the
	// caller's subscriptions/listen streams. False lists every tool, and a call of one the
	// caller may not make is refused (403 with the step-up challenge over HTTP with auth, the
	// JSON-RPC error -31001 otherwise), which tells a client which scopes to ask for.
	HideForbiddenTools bool
	// Visibility decides which tools, resources, resource templates and prompts each caller
	// sees, from their tags and the caller's identity (its scopes, its claims, or a Go
	// predicate), and which tags are disabled at start (see package visibility and
	// docs/visibility.md). An invisible component is one that does not exist, as a tool hidden
	// by HideForbiddenTools is: lists leave it out, and a call, read, get, completion or
	// subscription of it is answered as one of a component nobody serves. The rules apply to
	// every component the server serves, those added later and those of mounted servers
	// included. Give every member of a cluster the same. The zero value shows everything to
	// everyone.
	Visibility visibility.Config

	// OnError receives unexpected failures privately, one at a time, after the response was
	// sent (docs/errors.md). Nil logs them on Logger. A callback that only needs the
	// error can be written as diagnostics.ErrorOnly(func(err error) {...}).
	OnError OnError
	// Logger is used as given. Nil means no logging (zap.NewNop()).
	Logger *zap.Logger

	// ActorSystem is the protoactor system to run on. Nil means the server makes its own and
	// shuts it down in Close. A given system (the host's) is shared: the server's actors live
	// under one top-level actor named "toolgrain$<n>", a name checked to be free, and Close
	// stops exactly those actors and leaves the system and the host's actors running. Tools
	// backed by the host's actors (tools.NewActorHandler) need the server on their system.
	ActorSystem *actor.ActorSystem
	// Cluster makes the server a member of a cluster (package cluster): new legacy sessions get
	// ids that name this member, [Server.Handler] forwards the requests of sessions homed on
	// other members to them and serves the ones they forward here, and list changes and
	// resource updates reach every member's clients. Nil ActorSystem then means the cluster's
	// system. Give every member the same RequestState.Key so that any member accepts a
	// requestState another minted. Nil means a single server.
	Cluster *cluster.Node

	// LogLevel is the lowest level of the log messages handlers send (package client) that a
	// client gets before it calls logging/setLevel: "debug" (everything, the meaning of ""),
	// "info", "notice", "warning", "error", "critical", "alert" or "emergency".
	LogLevel string
	// CacheTTL is the ttlMs of the modern results a client may cache: server/discover, the
	// lists and resources/read. The lists can change while the server runs (their listChanged
	// notifications say when); 0, the default, says they may be stale at once.
	CacheTTL time.Duration

	// Limits bounds what a client can make the server hold or wait for: message sizes,
	// calls in flight, a call's time, the answers queued for a slow client, and the grace
	// periods of closing and of the end of input; see [LimitsConfig].
	Limits LimitsConfig
	// Diagnostics bounds the reports waiting for OnError and the time of one call; see
	// [DiagnosticsConfig].
	Diagnostics DiagnosticsConfig
	// Telemetry receives the server's measurements and traces: a metrics.Recorder, and the
	// host's OpenTelemetry providers; see [TelemetryConfig].
	Telemetry TelemetryConfig
	// RequestState protects the requestState of modern multi-round-trip requests; see
	// [RequestStateConfig].
	RequestState RequestStateConfig
	// HTTP configures the Streamable HTTP transport ([Server.Handler], package streamable):
	// session expiry, allowed origins (and their CORS) and hosts, bearer auth, the HTTP+SSE
	// transport. The zero value is usable.
	HTTP HTTPConfig
	// Tasks configures the tasks extension (MCP 2026-07-28): its store, TTL, caps. The zero
	// value keeps tasks in memory; see [TaskConfig].
	Tasks TaskConfig
}

// DefaultMaxOutputBacklog is the [LimitsConfig].MaxOutputBacklog of a zero Config: 16 MiB.
const DefaultMaxOutputBacklog = 16 << 20

// defaultGrace is each grace period of a zero [LimitsConfig].
const defaultGrace = 5 * time.Second

// DefaultCallbackTimeout is the [DiagnosticsConfig].CallbackTimeout of a zero Config: 5 s.
const DefaultCallbackTimeout = engine.DefaultCallbackTimeout

// Server is an MCP server. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	eng     *engine.Engine
	http    *httpserve.Handler
	handler http.Handler // http, or its cluster wrapper

	outputPauses atomic.Uint64 // times a connection stopped reading for a slow consumer
}

// NewServer checks and compiles the tool definitions and starts the actor tree. Construction
// problems are returned, never panicked: a bad or duplicate tool name is a *tools.ToolNameError,
// a schema that does not compile (or whose root is not an object), or a Go type from which no
// schema can be inferred, a *tools.ToolSchemaError, a nil middleware an error, a
// bad resource or template a *resources.DefinitionError, a bad prompt a
// *prompts.DefinitionError, a bad icon of the server (Config.Icons) or of a tool an error
// wrapping a *protocol.IconError, a bad custom method or extension (Config.Methods,
// Config.Extensions) an error naming it.
func NewServer(cfg Config) (*Server, error) {
	if err := protocol.CheckIcons(cfg.Icons); err != nil {
		return nil, fmt.Errorf("toolgrain: server %w", err)
	}
	cfg.Icons = protocol.CloneIcons(cfg.Icons)
	methods, extensions, err := engineMethods(&cfg)
	if err != nil {
		return nil, err
	}
	set, err := tools.Compile(cfg.Tools, cfg.Middleware...)
	if err != nil {
		return nil, err
	}
	res, err := resources.Compile(cfg.Resources, cfg.ResourceTemplates)
	if err != nil {
		return nil, err
	}
	prm, err := prompts.Compile(cfg.Prompts)
	if err != nil {
		return nil, err
	}
	if err := cfg.Visibility.Check(); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = "toolgrain"
	}
	if cfg.Version == "" {
		cfg.Version = Version
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Limits.MaxMessageSize <= 0 {
		cfg.Limits.MaxMessageSize = protocol.DefaultMaxMessageSize
	}
	if cfg.Limits.MaxOutputBacklog == 0 {
		cfg.Limits.MaxOutputBacklog = DefaultMaxOutputBacklog
	}
	for _, g := range []*time.Duration{&cfg.Limits.HandlerGrace, &cfg.Limits.EndOfInputGrace, &cfg.Limits.OutputGrace} {
		if *g <= 0 {
			*g = defaultGrace
		}
	}
	if cfg.Diagnostics.CallbackTimeout <= 0 {
		cfg.Diagnostics.CallbackTimeout = DefaultCallbackTimeout
	}
	var relay func(method, uri string)
	var tagSync engine.TagSync
	var newSessionID func() string
	member, clustered := clusterhook.Of(cfg.Cluster)
	if clustered {
		if cfg.ActorSystem == nil {
			cfg.ActorSystem = cfg.Cluster.System()
		}
		relay = member.Relay
		tagSync = engine.TagSync{Origin: cfg.Cluster.Address(), Relay: member.RelayTags}
		newSessionID = member.NewSessionID
	}
	tasksCfg := engineTasks(&cfg)
	if clustered {
		// A task lives on its home member: its id names that member (signed), and a task
		// whose home is gone is reported failed.
		tasksCfg.Home = member.TaskHome
		tasksCfg.Gone = member.TaskGone
	}
	eng, err := engine.Start(engine.Config{
		Relay:              relay,
		System:             cfg.ActorSystem,
		Tools:              set,
		ServerInfo:         protocol.Implementation{Name: cfg.Name, Title: cfg.Title, Version: cfg.Version, Icons: cfg.Icons},
		Instructions:       cfg.Instructions,
		OnError:            cfg.OnError,
		Logger:             cfg.Logger,
		Metrics:            cfg.Telemetry.Metrics,
		PageSize:           cfg.Limits.PageSize,
		HideForbiddenTools: cfg.HideForbiddenTools,
		Visibility:         cfg.Visibility,
		TagSync:            tagSync,
		DiagnosticsQueue:   cfg.Diagnostics.Queue,
		CallbackTimeout:    cfg.Diagnostics.CallbackTimeout,
		HandlerGrace:       cfg.Limits.HandlerGrace,
		EndOfInputGrace:    cfg.Limits.EndOfInputGrace,
		Resources:          res,
		Prompts:            prm,
		LogLevel:           cfg.LogLevel,
		ProgressInterval:   cfg.Limits.ProgressInterval,

		MaxCallsPerConnection: cfg.Limits.MaxCallsPerConnection,
		MaxCalls:              cfg.Limits.MaxCalls,
		MaxClientDeclaration:  cfg.Limits.MaxClientDeclaration,
		ToolTimeout:           cfg.Limits.ToolTimeout,

		RequestStateKey: cfg.RequestState.Key,
		RequestStateTTL: cfg.RequestState.TTL,
		CacheTTL:        cfg.CacheTTL,

		Telemetry: engine.Telemetry{
			TracerProvider: cfg.Telemetry.TracerProvider,
			MeterProvider:  cfg.Telemetry.MeterProvider,
			Propagator:     cfg.Telemetry.Propagator,
			Version:        Version,
			TraceArguments: cfg.Telemetry.TraceArguments,
			TraceResults:   cfg.Telemetry.TraceResults,
			TraceFailures:  cfg.Telemetry.TraceFailures,
		},

		Tasks: tasksCfg,

		Methods:    methods,
		Extensions: extensions,
	})
	if err != nil {
		return nil, err
	}
	h, err := httpserve.New(eng, cfg.HTTP, httpserve.Options{Logger: cfg.Logger, MaxMessageSize: cfg.Limits.MaxMessageSize,
		NewSessionID: newSessionID})
	if err != nil {
		_ = eng.Shutdown(context.Background())
		return nil, err
	}
	srv := &Server{cfg: cfg, eng: eng, http: h, handler: h}
	if clustered {
		if err := member.SetTelemetry(clusterhook.Telemetry{TracerProvider: cfg.Telemetry.TracerProvider,
			MeterProvider: cfg.Telemetry.MeterProvider, Propagator: cfg.Telemetry.Propagator, Version: Version}); err != nil {
			_ = eng.Shutdown(context.Background())
			return nil, err
		}
		member.SetDeliver(eng.Deliver)
		member.SetTagSync(eng.MergeTags, eng.TagState)
		srv.handler = member.Wrap(h, cfg.Limits.MaxMessageSize)
	}
	return srv, nil
}

// RootPID returns the server's top-level actor on its actor system: every actor of the server
// is it or a descendant of it, with an id that starts with its id and a slash. A host can watch
// it to learn that the server stopped; it must not send it anything.
func (s *Server) RootPID() *actor.PID { return s.eng.Root() }

// Stats is a snapshot of the server's diagnostics counters.
type Stats struct {
	DroppedReports     uint64 // reports dropped because the diagnostics queue was full
	AbandonedCallbacks uint64 // OnError calls abandoned after Diagnostics.CallbackTimeout
	CallbackPanics     uint64 // OnError calls that panicked
	RefusedCalls       uint64 // calls refused with -31000 because a limit on calls in flight was reached
	OutputPauses       uint64 // times a connection stopped reading because its client read too slowly
	LiveTasks          int64  // tasks held: running, or finished and not yet expired
	RunningTasks       int64  // tasks whose handler has not ended
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	st, ts := s.eng.Stats(), s.eng.TaskStats()
	return Stats{
		DroppedReports:     st.DroppedReports.Load(),
		AbandonedCallbacks: st.AbandonedCallbacks.Load(),
		CallbackPanics:     st.CallbackPanics.Load(),
		RefusedCalls:       st.RefusedCalls.Load(),
		OutputPauses:       s.outputPauses.Load(),
		LiveTasks:          ts.Live,
		RunningTasks:       ts.Running,
	}
}

// Shutdown stops the server gracefully: every connection is closed and its calls in flight are
// cancelled (they get no response), handlers are given until ctx ends to return, the pending
// OnError reports are delivered, and the actors stop. It returns ctx.Err() if ctx ended first.
//
// HTTP sessions end first: new requests get 503, open SSE streams end, and each cancelled
// call's stream ends with no response. The SSE streams the transport took from net/http (see
// "What a connected client costs" in package streamable) are then given until ctx ends to
// write their end, and closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.http.Shutdown()
	err := s.eng.Shutdown(ctx)
	s.http.Drain(ctx)
	return err
}

// Close is Shutdown bounded by the HandlerGrace plus the Diagnostics.CallbackTimeout.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Limits.HandlerGrace+s.cfg.Diagnostics.CallbackTimeout)
	defer cancel()
	return s.Shutdown(ctx)
}
