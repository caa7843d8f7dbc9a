// Package demo holds what the peer servers share: the demonstration tool
// contract (names, limits, public and private texts, the spin tool's CPU
// loop) and the process plumbing
// every peer needs (flags, signal handling, the HTTP listener).
//
// The tools' behaviour itself lives in each peer's main package, written with
// that SDK's own idioms, so a reader can judge each SDK by its natural use.
package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// Marker appears in every internal failure message of the fail tool. A client
// that ever sees it has been shown a private detail.
const Marker = "SECRET-internal-detail"

// Texts and limits of the demonstration tool set (DESIGN.md).
const (
	PublicFailure = "public failure message"
	MaxSleepMs    = 600000
	SleptText     = "slept"
	SpunText      = "spun"
	EndpointPath  = "/mcp"
)

// Modes are the values of the fail tool's mode argument.
var Modes = []string{"result", "error", "panic", "bad-output", "provider"}

// ErrInternal is what the fail tool's handler returns in mode "error".
var ErrInternal = errors.New("database rejected query: " + Marker + " password=hunter2")

// PanicValue is what the fail tool panics with in mode "panic".
const PanicValue = "nil map write in handler: " + Marker

// BadOutput is structured content that violates the fail tool's output schema
// (value must be a number).
func BadOutput() map[string]any { return map[string]any{"value": Marker} }

// FailOutputSchema is the fail tool's output schema.
const FailOutputSchema = `{"type":"object","properties":{"value":{"type":"number"}},"required":["value"]}`

// Provider stands for a dependency the fail tool needs (a credentials store,
// a database pool); in mode "provider" it is down.
func Provider(_ context.Context) error {
	return fmt.Errorf("credentials provider unreachable at 10.0.0.7:5432: %s", Marker)
}

// Spin keeps a CPU busy for d, as the spin tool does, and returns ctx's
// error as soon as ctx is done: it looks at ctx between slices of work of
// about 50 µs, the way a CPU-bound Go handler honours cancellation.
func Spin(ctx context.Context, d time.Duration) error {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 10000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	spun.Add(x & 1)
	return nil
}

// spun keeps Spin's result alive, so that the compiler keeps its loop.
var spun atomic.Uint64

// Greeting is the greet tool's text.
func Greeting(name string) string { return "Hello, " + name + "!" }

// Options are the flags every peer takes.
type Options struct {
	Transport string
	Addr      string
	// Pprof is the address of a separate listener for net/http/pprof;
	// empty means none.
	Pprof string
}

// Register adds --transport, --addr and --pprof to fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Transport, "transport", "stdio", "transport: stdio or http")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "HTTP listen address (endpoint "+EndpointPath+")")
	fs.StringVar(&o.Pprof, "pprof", "", "serve net/http/pprof on this `HOST:PORT`, a listener of its own (for mcpbench --pprof)")
}

// StartPprof serves net/http/pprof at http://addr/debug/pprof/ on a listener
// of its own when addr is not empty, and returns the function that stops it
// and waits for it (a no-op when addr is empty).
func StartPprof(addr string, stderr io.Writer) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "pprof on %s\n", ln.Addr())
	served := make(chan struct{})
	// Owned by the caller: stop closes the server and waits for this.
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return func() { _ = srv.Close(); <-served }, nil
}

// Parse parses args into fs, with the options registered, and checks
// them.
func (o *Options) Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	return o.Check()
}

// Check reports a bad flag combination.
func (o *Options) Check() error {
	switch o.Transport {
	case "stdio", "http":
		return nil
	}
	return fmt.Errorf("unknown --transport %q (want stdio or http)", o.Transport)
}

// SignalContext is cancelled on SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// ServeHTTP serves h at addr until ctx is done, then shuts the listener down.
// It prints "listening on ADDR" to stderr once the socket accepts.
func ServeHTTP(ctx context.Context, addr string, h http.Handler, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "listening on %s\n", ln.Addr())
	// Owned by this function: Shutdown below ends it, and we wait for its
	// result before returning.
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
