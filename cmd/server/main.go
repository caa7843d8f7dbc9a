// Command server runs a Toolgrain MCP server with the demonstration tool set (echo, greet,
// sleep, fail, spin). docs/server.md is its guide, with every flag.
//
// Usage:
//
//	server [--transport stdio|http] [--addr HOST:PORT] [--auth-token TOKEN]... [--diagnostics-file PATH]
//	       [--log-level LEVEL] [--max-message-size N] [--max-calls-per-connection N] [--max-calls N]
//	       [--tool-timeout D] [--handler-grace D] [--end-of-input-grace D] [--output-grace D]
//	       [--fixtures conformance] [--task-store memory|bolt:PATH]
//	       [--admin-addr HOST:PORT] [--pprof HOST:PORT] [--touch-tool] [more HTTP and task flags: see --help]
//	       [--cluster-local N | --cluster-addr HOST:PORT (--cluster-member HOST:PORT,... --cluster-health-port PORT | --cluster-etcd URL,...) ...]
//
// With --fixtures conformance it also serves the fixtures of the official MCP conformance suite:
// its test_* tools, test:// resources and templates, and test_* prompts.
//
// With --touch-tool it also serves the demonstration tool touch, which announces a change on
// demand (a list changed, a resource updated), for measuring how fast a change reaches every
// connected client.
//
// With --task-store it offers the tasks extension of MCP 2026-07-28 (io.modelcontextprotocol/tasks)
// and serves the demonstration task tool sleep_task; bolt:PATH keeps the tasks in a file, so that
// finished tasks are readable after a restart and those that were running are reported failed.
//
// Over stdio it reads newline-delimited JSON-RPC on stdin and answers on stdout; logs go to
// stderr only. When stdin reaches EOF it answers the calls it received (those still running
// after --end-of-input-grace are cancelled) and exits 0; on SIGINT/SIGTERM it cancels the calls in
// flight and exits 0; either way after flushing the diagnostics. A stdout that breaks (the
// client went away) is reported to the diagnostics, and the server shuts down and exits 1.
//
// Over HTTP it serves MCP's Streamable HTTP transport at http://ADDR/mcp (127.0.0.1:8080 by
// default) and the protected-resource metadata at /.well-known/oauth-protected-resource[/mcp].
// With --auth-token it requires one of the given bearer tokens (a static-token demo verifier);
// the token auth-outage makes the verifier fail unexpectedly, with an internal error whose text
// contains SECRET-internal-detail, to show the auth row of the error model. On SIGINT/SIGTERM it
// cancels the calls in flight, ends the sessions, stops the listener and exits 0.
//
// With --cluster-local N (HTTP) it starts N member processes of one cluster on loopback, serving
// /mcp on the --addr port and the N-1 after it; with --cluster-addr it is one member of a fixed
// fleet. Any member serves any request: a legacy session's requests are forwarded to the member
// that holds it (see package cluster, and docs/cluster.md).
//
// With --admin-addr it serves /healthz, /readyz, /metrics (Prometheus) and /debug/pprof/ on a
// listener of their own. OpenTelemetry traces and metrics are configured by the standard OTEL_*
// environment variables (OTEL_TRACES_EXPORTER=otlp|console|none, OTEL_METRICS_EXPORTER,
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, ...; see otel.go); the console exporters write
// to stderr over stdio, never to the protocol's stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/internal/conformance"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/metrics/prom"
	"github.com/toolgrain/toolgrain/tools"
)

func main() {
	// A write to a closed stdout fails with EPIPE instead of killing the process, so that the
	// failure is reported and the diagnostics flushed.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// options are the command-line settings.
type options struct {
	transport       string
	diagnosticsFile string
	logLevel        zapcore.Level
	maxMessageSize  int
	maxCallsPerConn int
	maxCalls        int
	maxDeclaration  int
	toolTimeout     time.Duration
	handlerGrace    time.Duration
	endOfInputGrace time.Duration
	outputGrace     time.Duration
	pprofAddr       string
	adminAddr       string
	http            httpOptions
	visibility      visibilityOptions
	cluster         clusterOptions
	tasks           taskOptions
	fixtures        string
	touchTool       bool
	stateKeyFile    string
	stateTTL        time.Duration
	cacheTTL        time.Duration
	mounts          listFlag
	mountWait       time.Duration
	demoTools       bool
	instructions    *string
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// newFlagSet returns the command's flags, set into o. docs/server.md's flag reference is
// generated from it (TestFlagReference).
func newFlagSet(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.transport, "transport", "stdio", "serve over `stdio|http`: stdin and stdout, or Streamable HTTP at --addr (endpoint /mcp)")
	fs.StringVar(&o.diagnosticsFile, "diagnostics-file", "", "append onError reports to `PATH` as JSON lines (error text, tool name, request id; never arguments)")
	fs.Var(&o.logLevel, "log-level", "log `level` on stderr: debug, info, warn, error")
	fs.IntVar(&o.maxMessageSize, "max-message-size", 0, "largest accepted message (HTTP: request body) in `bytes` (0: 4 MiB)")
	fs.IntVar(&o.maxCallsPerConn, "max-calls-per-connection", 0, "calls in flight on one connection or session before new ones are refused (0: 20000, -1: no limit)")
	fs.IntVar(&o.maxCalls, "max-calls", 0, "calls in flight on the server before new ones are refused (0: 100000, -1: no limit)")
	fs.IntVar(&o.maxDeclaration, "max-client-declaration", 0, "largest capabilities and clientInfo an initialize may declare, which its session keeps, in `bytes` (0: 64 KiB, -1: no limit)")
	fs.DurationVar(&o.toolTimeout, "tool-timeout", 0, "timeout of each tool call, for tools without their own (0: none)")
	fs.DurationVar(&o.handlerGrace, "handler-grace", 5*time.Second, "how long the handlers of cancelled calls get to return, on SIGINT/SIGTERM and when a connection or session ends")
	fs.DurationVar(&o.endOfInputGrace, "end-of-input-grace", 5*time.Second, "at stdin EOF, how long the calls in flight get to answer before they are cancelled")
	fs.DurationVar(&o.outputGrace, "output-grace", 5*time.Second, "at exit, how long a stdio client's last unread answers, open HTTP responses and telemetry not yet exported get to go out")
	fs.Func("shutdown-grace", "deprecated: sets --handler-grace, --end-of-input-grace and --output-grace to one `duration`", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		o.handlerGrace, o.endOfInputGrace, o.outputGrace = d, d, d
		return nil
	})
	fs.StringVar(&o.fixtures, "fixtures", "", "also serve a fixture `set`: conformance (the MCP conformance suite's test_* tools, test:// resources and test_* prompts)")
	fs.StringVar(&o.stateKeyFile, "request-state-key-file", "", "read the key that protects the requestState of MCP 2026-07-28 input_required rounds from `PATH` (at least 32 bytes; share it between servers that must accept each other's states; default: a random key per process)")
	fs.DurationVar(&o.stateTTL, "request-state-ttl", 0, "how long a requestState is accepted (0: 10m)")
	fs.DurationVar(&o.cacheTTL, "cache-ttl", 0, "ttlMs of the MCP 2026-07-28 results a client may cache: server/discover, the lists, resources/read (0: stale at once)")
	fs.BoolVar(&o.touchTool, "touch-tool", false, `also serve the demonstration tool touch, which changes a list ({"list":"tools"}) or announces a resource update ({"uri":U}) on demand: for measuring how fast a change reaches every client`)
	fs.StringVar(&o.pprofAddr, "pprof", "", "serve net/http/pprof on `HOST:PORT` (a separate listener, for profiling; off by default)")
	fs.Var(&o.mounts, "mount", "mount the MCP servers of the mcpServers JSON `FILE` (command/args/env/cwd, url/headers/transport, and prefix, include, exclude, tools, tags, timeout: see docs/gateway.md), each under its key (repeatable)")
	fs.DurationVar(&o.mountWait, "mount-wait", 5*time.Second, "with --mount, how long the server waits at start for the mounted upstreams to be listed before it serves (one still not listed is served once it answers)")
	fs.Func("instructions", "the server's instructions for the client's model, in the initialize result and server/discover (default: the demonstration tools' when they are served, none otherwise)", func(v string) error {
		o.instructions = &v
		return nil
	})
	fs.BoolVar(&o.demoTools, "demo-tools", true, "serve the demonstration tools (echo, greet, sleep, fail, spin); false serves only what --mount, --fixtures and the other flags add")
	fs.StringVar(&o.adminAddr, "admin-addr", "", "serve /healthz, /readyz, /metrics (Prometheus) and /debug/pprof/ on `HOST:PORT` (a separate listener; off by default)")
	o.http.register(fs)
	o.visibility.register(fs)
	o.cluster.register(fs)
	o.tasks.register(fs)
	return fs
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{logLevel: zapcore.InfoLevel, demoTools: true}
	fs := newFlagSet(o, stderr)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	switch o.transport {
	case "stdio":
		if o.http.allowBound {
			return nil, errors.New("--auth-allow-sender-constrained needs --auth-issuer or --auth-introspection-url (and --transport http)")
		}
		if o.http.authOn() || len(o.http.toolScopes) > 0 || o.http.hideForbidden {
			return nil, errors.New("--auth-token, --auth-issuer, --auth-introspection-url, --tool-scope and --hide-forbidden-tools need --transport http (stdio takes no auth)")
		}
	case "http":
		if err := o.http.check(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown transport %q (want stdio or http)", o.transport)
	}
	if err := o.tasks.check(); err != nil {
		return nil, err
	}
	if err := o.visibility.check(); err != nil {
		return nil, err
	}
	if err := o.cluster.check(o.transport, o.stateKeyFile); err != nil {
		return nil, err
	}
	if o.fixtures != "" && o.fixtures != "conformance" {
		return nil, fmt.Errorf("unknown fixture set %q (want conformance)", o.fixtures)
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.cluster.local > 0 {
		return runLocalCluster(ctx, o, args, stderr)
	}
	mounts, err := loadMounts(o.mounts)
	if err != nil {
		return err
	}
	log := newLogger(stderr, o.logLevel)
	defer func() { _ = log.Sync() }()
	if o.pprofAddr != "" {
		_, stopPprof, err := servePprof(o.pprofAddr, log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}

	onError := diagnostics.ZapSink(log)
	if o.diagnosticsFile != "" {
		f, err := os.OpenFile(o.diagnosticsFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("diagnostics file: %w", err)
		}
		defer f.Close()
		toFile, toLog := diagnostics.JSONLinesSink(f), onError
		onError = func(err error, d *diagnostics.ToolErrorDetails) {
			toFile(err, d)
			toLog(err, d)
		}
	}

	cfg := toolgrain.Config{
		Name:         "toolgrain-demo",
		Instructions: "Demonstration tools: echo, greet, sleep, fail and spin.",
		Tools:        demo.Tools(),
		OnError:      onError,
		Logger:       log,
		Limits: toolgrain.LimitsConfig{
			MaxMessageSize:        o.maxMessageSize,
			MaxCallsPerConnection: o.maxCallsPerConn,
			MaxCalls:              o.maxCalls,
			MaxClientDeclaration:  o.maxDeclaration,
			ToolTimeout:           o.toolTimeout,
			HandlerGrace:          o.handlerGrace,
			EndOfInputGrace:       o.endOfInputGrace,
			OutputGrace:           o.outputGrace,
		},

		RequestState: toolgrain.RequestStateConfig{TTL: o.stateTTL},
		CacheTTL:     o.cacheTTL,
	}
	if !o.demoTools {
		cfg.Tools, cfg.Instructions = nil, ""
	}
	if o.instructions != nil {
		cfg.Instructions = *o.instructions
	}
	if o.stateKeyFile != "" {
		key, err := os.ReadFile(o.stateKeyFile)
		if err != nil {
			return fmt.Errorf("request state key: %w", err)
		}
		cfg.RequestState.Key = key
	}

	// Metrics for the admin listener's /metrics, and OpenTelemetry from the OTEL_* variables.
	var reg *prometheus.Registry
	var registerer prometheus.Registerer
	if o.adminAddr != "" {
		reg = prometheus.NewRegistry()
		registerer = reg
		col := prom.New(prom.Options{})
		reg.MustRegister(col, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		cfg.Telemetry.Metrics = col
	}
	console := stdout
	if o.transport == "stdio" {
		console = stderr // stdout is the protocol's channel
	}
	tel, err := setupTelemetry(ctx, console, registerer)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), o.outputGrace)
		defer cancel()
		if err := tel.shutdown(sctx); err != nil {
			log.Warn("telemetry shutdown", zap.Error(err))
		}
	}()
	if tel.tp != nil {
		cfg.Telemetry.TracerProvider, cfg.Telemetry.Propagator = tel.tp, tel.prop
	}
	if tel.mp != nil {
		cfg.Telemetry.MeterProvider = tel.mp
	}
	if o.transport == "http" {
		o.http.log = log.Named("auth")
		if cfg.HTTP, err = o.http.config(); err != nil {
			return err
		}
		cfg.HideForbiddenTools = o.http.hideForbidden
	}
	// The store is closed after the server has shut down: this defer runs after every later one.
	taskCfg, store, err := o.tasks.config()
	if err != nil {
		return err
	}
	defer store.Close()
	cfg.Tasks = taskCfg
	if o.tasks.on() {
		cfg.Tools = append(cfg.Tools, demo.TaskTools()...)
	}
	var touched demo.Touched
	if o.touchTool {
		cfg.Tools = append(cfg.Tools, demo.TouchTools(&touched)...)
	}
	var triggers conformance.Triggers
	if o.fixtures == "conformance" {
		cfg.Instructions += " Conformance fixtures: test_* tools, test:// resources, test_* prompts."
		cfg.Tools = append(withoutTool(cfg.Tools, "greet"), conformance.Tools()...) // TaskTools has its own greet
		cfg.Tools = append(cfg.Tools, conformance.ModernTools(&triggers)...)
		cfg.Tools = append(cfg.Tools, conformance.TaskTools()...)
		cfg.Resources = conformance.Resources()
		cfg.ResourceTemplates = conformance.Templates()
		cfg.Prompts = append(conformance.Prompts(), conformance.ModernPrompts()...)
	}
	if o.cluster.addr != "" {
		node, err := o.cluster.startMember(o.stateKeyFile, log)
		if err != nil {
			return err
		}
		// Leaves the cluster after serveHTTP (or srv.Close below) has shut the server down.
		defer node.Close()
		cfg.Cluster = node
		if o.cluster.worker {
			stopWorker, err := startWorker(node, log)
			if err != nil {
				return err
			}
			defer stopWorker()
		}
		if o.cluster.remoteTool != "" {
			cfg.Tools = append(cfg.Tools, remoteSleepTool(node, strings.Split(o.cluster.remoteTool, ",")))
		}
	}
	var mountScopes map[string][]string
	if o.http.toolScopes, mountScopes, err = mountedScopes(o.http.toolScopes, cfg.Tools, len(mounts) > 0); err != nil {
		return err
	}
	if cfg.Tools, err = o.http.applyToolScopes(cfg.Tools); err != nil {
		return err
	}
	if cfg.Tools, err = o.visibility.applyToolTags(cfg.Tools); err != nil {
		return err
	}
	if cfg.Visibility, err = o.visibility.config(); err != nil {
		return err
	}
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		return err
	}
	gw, err := startGateway(srv, mounts, mountScopes, log)
	if err != nil {
		_ = srv.Close()
		return err
	}
	waitMounts(gw, o.mountWait, log)
	if gw != nil {
		// After the server has shut down (serveHTTP, or srv.Close below): the upstreams end last.
		defer gw.Close()
	}
	if o.adminAddr != "" {
		_, stopAdmin, err := serveAdmin(o.adminAddr, srv, readiness(srv, gw), cfg.Cluster, reg, log)
		if err != nil {
			_ = srv.Close()
			return err
		}
		defer stopAdmin()
	}
	touched.Set(srv)
	if o.fixtures == "conformance" {
		triggers.Set(srv)
		stopWatch := watchResource(srv, conformance.WatchedResource, watchInterval)
		defer stopWatch()
	}
	// Hand the garbage of start-up back to the OS before serving: compiling the schemas and
	// the actor system's registry before NewServer shrinks it leave a few MiB of freed heap that
	// the runtime would otherwise keep resident for the life of the process.
	debug.FreeOSMemory()
	if o.transport == "http" {
		return serveHTTP(ctx, srv, o, tel, log)
	}
	log.Info("serving", zap.String("transport", o.transport))
	serveErr := srv.ServeStdio(ctx, stdin, stdout)
	if errors.Is(serveErr, context.Canceled) {
		serveErr = nil // a signal is a normal way to stop
	}
	if err := srv.Close(); err != nil {
		log.Warn("shutdown", zap.Error(err))
	}
	log.Info("stopped")
	return serveErr
}

// withoutTool returns defs without the tool name.
func withoutTool(defs []tools.Tool, name string) []tools.Tool {
	out := defs[:0:0]
	for _, d := range defs {
		if d.Name != name {
			out = append(out, d)
		}
	}
	return out
}

// watchInterval is how often the conformance fixtures' watched resource is announced as updated.
const watchInterval = 3 * time.Second

// watchResource announces an update of uri every interval, to the clients subscribed to it,
// until the returned function is called; that function waits for the goroutine to end.
func watchResource(srv *toolgrain.Server, uri string, interval time.Duration) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	// Owned by run, which calls stop (closing done and waiting on stopped) before it returns.
	go func() {
		defer close(stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				srv.NotifyResourceUpdated(uri)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func newLogger(w io.Writer, level zapcore.Level) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), level)
	return zap.New(core)
}
