// Command service is an example of a Go service that embeds the Toolgrain MCP engine next to
// its own actors and HTTP routes.
//
// The service keeps an inventory in an actor of its own and exposes it twice: as JSON routes
// for its usual clients (GET /inventory, GET /healthz, GET /metrics), and as MCP tools for
// models (stock, reserve, restock) at /mcp, in the same mux and behind the same middleware. The
// MCP server runs on the service's actor system; its tools are backed by the service's actors
// rather than Go functions, and its metrics go to the service's own Prometheus registry.
//
// Usage:
//
//	go run ./examples/service [--addr 127.0.0.1:8090] [--stdio] [--log-level info]
//
// MCP clients connect to http://127.0.0.1:8090/mcp (Streamable HTTP). With --stdio the service
// also serves one MCP connection on stdin and stdout, at the same time and on the same server,
// and exits when stdin ends; without it, it runs until SIGINT or SIGTERM. On the way out it
// closes the MCP server first, which stops the server's actors and goroutines and leaves the
// service's own running, and then stops the rest.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/metrics/prom"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/tools/middleware"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "service:", err)
		os.Exit(1)
	}
}

// options are the service's settings.
type options struct {
	addr     string
	stdio    bool
	logLevel zapcore.Level
	// restockTimeout bounds a restock order (the "restock" tool's Timeout).
	restockTimeout time.Duration
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o := options{logLevel: zapcore.InfoLevel, restockTimeout: 2 * time.Second}
	fs := flag.NewFlagSet("service", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8090", "HTTP listen `address`")
	fs.BoolVar(&o.stdio, "stdio", false, "also serve MCP on stdin/stdout, and exit when stdin ends")
	fs.Var(&o.logLevel, "log-level", "log `level` on stderr: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.Lock(zapcore.AddSync(stderr)), o.logLevel))
	defer func() { _ = log.Sync() }()

	h := newHost(log)
	defer h.close()
	if err := h.startMCP(o); err != nil {
		return err
	}
	defer func() { _ = h.stopMCP() }()

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h.routes(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	// Owned by run, which shuts the HTTP server down before returning and waits for this.
	go func() { served <- hs.Serve(ln) }()
	log.Info("serving", zap.String("http", "http://"+ln.Addr().String()), zap.String("mcp", "http://"+ln.Addr().String()+"/mcp"), zap.Bool("stdio", o.stdio))

	var runErr error
	if o.stdio {
		runErr = h.mcp.ServeStdio(ctx, stdin, stdout)
	} else {
		<-ctx.Done()
	}
	if errors.Is(runErr, context.Canceled) {
		runErr = nil // a signal is a normal way to stop
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		log.Warn("http shutdown", zap.Error(err))
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		log.Warn("http", zap.Error(err))
	}
	log.Info("stopped")
	return runErr
}

// host is the service: its actor system and actors, its metrics registry, its routes, and the
// MCP server embedded in them.
type host struct {
	log       *zap.Logger
	system    *actor.ActorSystem
	inventory *actor.PID
	registry  *prometheus.Registry

	mcp             *toolgrain.Server
	mcpHTTP         atomic.Pointer[http.Handler] // the MCP server's handler while it runs
	ordersCancelled atomic.Int64                 // restock orders dropped because their call ended
}

// newHost starts the service's own actor system and actors. Its protoactor log lines go to the
// service's zap logger, as the service chooses.
func newHost(log *zap.Logger) *host {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(s *actor.ActorSystem) *slog.Logger {
		return slog.New(zapslog.NewHandler(log.Core(), zapslog.WithName("protoactor"))).With("system", s.ID)
	}))
	h := &host{log: log, system: system, registry: prometheus.NewRegistry()}
	h.inventory = system.Root.Spawn(actor.PropsFromProducer(newInventory(map[string]int{"bolts": 120, "nuts": 80, "washers": 0})))
	return h
}

// The tools' arguments and structured output. Their JSON Schemas are inferred from these types
// when the server starts (Tool.InputType, Tool.OutputType); the actors decode the arguments
// into them.
type (
	stockIn struct {
		Item string `json:"item" jsonschema:"description=The item: bolts, nuts or washers"`
	}
	reserveIn struct {
		Item string `json:"item"`
		Qty  int    `json:"qty" jsonschema:"minimum=1"`
	}
	restockIn struct {
		Item     string `json:"item"`
		Qty      int    `json:"qty" jsonschema:"minimum=1,maximum=10000"`
		Supplier string `json:"supplier"`
	}
	stockOut struct {
		Item string `json:"item"`
		Qty  int    `json:"qty"`
	}
)

// startMCP embeds the MCP server: on the host's actor system, with tools backed by the host's
// actors, the host's logger, and metrics on the host's registry.
func (h *host) startMCP(o options) error {
	col := prom.New(prom.Options{})
	if err := h.registry.Register(col); err != nil {
		return err
	}
	log := h.log.Named("mcp")
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Name:         "inventory",
		Instructions: "Look up stock, reserve items and restock them from a supplier.",
		ActorSystem:  h.system,
		Logger:       log,
		Telemetry:    toolgrain.TelemetryConfig{Metrics: col},
		OnError:      diagnostics.ZapSink(log),
		// One line per tool call on the service's log: tool, duration, outcome.
		Middleware: []tools.Middleware{middleware.Log(log)},
		Tools: []tools.Tool{
			{
				Name:        "stock",
				Description: "How many of an item are in stock.",
				InputType:   reflect.TypeFor[stockIn](),
				OutputType:  reflect.TypeFor[stockOut](),
				Annotations: readOnly(),
				Timeout:     time.Second,
				Handler:     tools.NewActorHandler(h.system, h.inventory),
			},
			{
				Name:        "reserve",
				Description: "Reserves qty of an item, taking them out of stock.",
				InputType:   reflect.TypeFor[reserveIn](),
				Timeout:     time.Second,
				Handler:     tools.NewActorHandler(h.system, h.inventory),
			},
			{
				Name: "restock",
				Description: "Orders qty of an item from a supplier and adds them to the stock on delivery. " +
					"Suppliers: acme (fast), slowpoke (slower than the timeout), offline (down), glitchy (buggy).",
				InputType: reflect.TypeFor[restockIn](),
				Timeout:   o.restockTimeout,
				Handler:   tools.NewActorPropsHandler(actor.PropsFromProducer(newSupplier(h.inventory, &h.ordersCancelled))),
			},
		},
	})
	if err != nil {
		h.registry.Unregister(col)
		return err
	}
	h.mcp = srv
	handler := srv.Handler()
	h.mcpHTTP.Store(&handler)
	return nil
}

func readOnly() *protocol.ToolAnnotations {
	t := true
	return &protocol.ToolAnnotations{ReadOnlyHint: &t}
}

// stopMCP closes the MCP server: its connections, calls, actors and goroutines. The host's
// actor system and actors keep running.
func (h *host) stopMCP() error {
	if h.mcp == nil {
		return nil
	}
	h.mcpHTTP.Store(nil)
	return h.mcp.Close()
}

// close stops the host's own actors. Shutdown on a protoactor system stops none, so the host
// stops what it spawned.
func (h *host) close() {
	_ = h.system.Root.StopFuture(h.inventory).Wait()
	h.system.Shutdown()
}

// routes are the service's HTTP routes, behind its own middleware.
func (h *host) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /inventory", h.serveInventory)
	mux.Handle("GET /metrics", promhttp.HandlerFor(h.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/mcp", h.serveMCP)
	return h.logRequests(mux)
}

// serveMCP hands /mcp to the MCP server's Streamable HTTP handler, and answers 503 while the
// MCP server is not running: the mux outlives it.
func (h *host) serveMCP(w http.ResponseWriter, r *http.Request) {
	handler := h.mcpHTTP.Load()
	if handler == nil {
		http.Error(w, "MCP server not running", http.StatusServiceUnavailable)
		return
	}
	(*handler).ServeHTTP(w, r)
}

// serveInventory asks the inventory actor for its stock. The HTTP handler's goroutine may wait
// for the reply; an actor never would.
func (h *host) serveInventory(w http.ResponseWriter, r *http.Request) {
	res, err := h.system.Root.RequestFuture(h.inventory, &getStock{}, 2*time.Second).Result()
	levels, ok := res.(stockLevels)
	if err != nil || !ok {
		h.log.Error("inventory", zap.Error(err))
		http.Error(w, "inventory unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(levels)
}

// logRequests is the service's own middleware, in front of every route.
func (h *host) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		next.ServeHTTP(w, r)
		h.log.Debug("http", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Duration("took", time.Since(start)))
	})
}
