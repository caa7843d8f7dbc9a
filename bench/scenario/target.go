package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/internal/procstat"
)

var sprintf = fmt.Sprintf

// Target is a server under test.
type Target struct {
	// Name labels results ("toolgrain", "go-sdk", ...).
	Name string
	// Transport is "stdio" or "http".
	Transport string
	// Endpoint is the command line or URL, for the record.
	Endpoint string
	// Era is the protocol era Dial opens connections in: [client.Legacy]
	// (initialize; also the zero value) or [client.Modern] (discover).
	Era client.Era
	// Dial opens a new connection and performs the handshake of Era. A
	// server that does not serve the era makes it fail with an error that
	// wraps [client.ErrNotModern].
	Dial func(ctx context.Context) (*client.Client, error)
	// PID is the server process to sample from /proc; zero means the
	// client's child process (stdio), or none.
	PID int
	// Header holds extra headers for every HTTP request (for example
	// Authorization), for scenarios that speak HTTP without Dial (clients).
	Header http.Header
	// Pprof is the base URL of the server's net/http/pprof handlers
	// (http://HOST:PORT/debug/pprof/), for a Go server that has them; the
	// load scenarios read its runtime.MemStats at the window's edges to
	// compute allocation per call. Empty means not measured.
	Pprof string
}

// era is the target's era, Legacy when unset.
func (t Target) era() client.Era {
	if t.Era == "" {
		return client.Legacy
	}
	return t.Era
}

func (t Target) pid(c *client.Client) int {
	if t.PID != 0 {
		return t.PID
	}
	return c.PID()
}

// Config holds every scenario's knobs; each scenario reads its own.
type Config struct {
	Concurrency  int           // concurrent calls (throughput, mixed, errors load)
	Duration     time.Duration // measured time (throughput, mixed, errors load)
	Warmup       time.Duration // unmeasured time before it
	Payload      int           // bytes of echo text
	Timeout      time.Duration // per call
	Stall        time.Duration // cancel: a phase that moves nothing for this long has failed
	N            int           // cancel: sleep calls in flight
	SleepMs      int           // cancel: their duration
	Window       time.Duration // late responses are counted this long after the last cancellation
	Settle       time.Duration // cancel: wait before the last memory sample
	LoadWait     time.Duration // cancel: wait, with the calls in flight, before the loaded sample
	CancelFrac   float64       // mixed: fraction of calls that are cancelled sleeps
	MixedSleepMs int           // mixed: their duration; each is cancelled after a random delay below half of it
	MaxSleeps    int           // mixed: sleep calls in flight at most
	CancelWithin time.Duration // mixed: cancel each sleep after a random delay below this; zero means half its duration
	ReplyWait    time.Duration // errors: how long to wait for a reply to a probe
	Clients      ClientsConfig // clients: the kind of client and what to measure
	Oversize     int           // errors: bytes of the oversized message
	// Fast is the quick call of throughput and mixed, and the cancel
	// scenarios' follow-up; zero means echo with Payload bytes of text.
	Fast ToolCall
	// Slow is the long call cancel and mixed put in flight and cancel; zero
	// means sleep of SleepMs (cancel) or MixedSleepMs (mixed).
	Slow ToolCall
	// CPU is the CPU-bound call of cancel-cpu; zero means spin for
	// [DefaultCPUMs].
	CPU ToolCall
	// ProgressEvery makes every k-th slow call of cancel and cancel-cpu ask
	// for progress (a progressToken), so that progress sent after the
	// cancellation is counted; zero means none.
	ProgressEvery int
	CPUCalls      int           // cancel-cpu: CPU-bound calls in flight
	Idle          time.Duration // cancel-cpu: how long the idle CPU is measured
	// Progress receives a progress line once a second; nil means none.
	Progress io.Writer
}

// DefaultConfig returns the defaults mcpbench documents.
func DefaultConfig() Config {
	return Config{
		Concurrency:  16,
		Duration:     5 * time.Second,
		Warmup:       time.Second,
		Payload:      32,
		Timeout:      10 * time.Second,
		Stall:        5 * time.Second,
		N:            10000,
		SleepMs:      600000,
		Window:       time.Second,
		Settle:       2 * time.Second,
		LoadWait:     500 * time.Millisecond,
		CancelFrac:   0.5,
		MixedSleepMs: 50,
		MaxSleeps:    1024,
		ReplyWait:    time.Second,
		Oversize:     5 << 20,
		CPUCalls:     8,
		Idle:         time.Second,
	}
}

func newResult(scenario string, t Target, params map[string]any) *Result {
	return &Result{
		Scenario:  scenario,
		Target:    t.Name,
		Transport: t.Transport,
		Era:       string(t.era()),
		Endpoint:  t.Endpoint,
		Started:   time.Now().UTC(),
		Host:      ThisHost(),
		Params:    params,
		Metrics:   map[string]float64{},
	}
}

func (r *Result) connected(c *client.Client) {
	r.Server = c.ServerInfo()
	r.Protocol = c.Negotiated()
}

func (r *Result) finish() *Result {
	r.Elapsed = time.Since(r.Started).Seconds()
	return r
}

// sample reads the server process; a missing pid or /proc gives ok=false.
func sample(pid int) (procstat.Sample, bool) {
	if pid <= 0 {
		return procstat.Sample{}, false
	}
	s, err := procstat.Read(pid)
	return s, err == nil
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// progress writes line() to w once a second until stop is called.
type progress struct {
	stop chan struct{}
	done chan struct{}
}

func startProgress(w io.Writer, line func() string) *progress {
	p := &progress{stop: make(chan struct{}), done: make(chan struct{})}
	if w == nil {
		close(p.done)
		return p
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	// Owned by p: Stop closes p.stop and waits for p.done.
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				if tty {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-tick.C:
				if tty {
					fmt.Fprintf(w, "\r\033[K%s", line())
				} else {
					fmt.Fprintln(w, line())
				}
			}
		}
	}()
	return p
}

// Stop ends the progress line; it is safe to call more than once.
func (p *progress) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// ErrNotApplicable ends a scenario against a target that does not serve the
// era it was asked for (see [NotApplicable]).
var ErrNotApplicable = errors.New("not applicable")

// NotApplicable reports whether err says the target does not serve the era
// asked for, rather than that it failed: [client.ErrNotModern] from the
// handshake, or a first call refused with -32022 (unsupported protocol
// version) though the handshake passed.
func NotApplicable(err error) bool {
	return errors.Is(err, ErrNotApplicable) || errors.Is(err, client.ErrNotModern)
}

// NotApplicableResult is the result of a scenario that could not run because
// the target does not serve the era asked for: no metrics, and the reason.
// The load scenarios' concurrency and the cancel scenarios' size are kept,
// which reports group by.
func NotApplicableResult(scenario string, t Target, cfg Config, reason error) *Result {
	params := map[string]any{}
	switch scenario {
	case "cancel":
		params["n"] = cfg.N // the burst size, which reports group by
	case "cancel-cpu":
		params["n"] = cfg.CPUCalls
	case "clients": // its results group by kind and count
		params["kind"], params["n"] = cfg.Clients.withDefaults().Kind, cfg.N
	default:
		params["concurrency"] = cfg.Concurrency
	}
	r := newResult(scenario, t, params)
	r.NotApplicable = reason.Error()
	return r.finish()
}

// codeUnsupportedVersion is JSON-RPC error -32022, UnsupportedProtocolVersion.
const codeUnsupportedVersion = -32022

// ping checks the server still answers, with the era's request for it.
func ping(ctx context.Context, c *client.Client, timeout time.Duration) error {
	_, err := callOnce(ctx, c, timeout, c.PingMethod(), nil)
	return err
}

// errStalled ends a phase in which the client could send nothing.
var errStalled = errors.New("the server stopped reading: nothing could be sent")

// untilStalled runs f with a context that is cancelled once c has sent
// nothing for stall: a phase may take as long as it needs while the server
// keeps taking messages, and no longer.
func untilStalled(ctx context.Context, c *client.Client, stall time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	watched := make(chan struct{})
	// Owned by untilStalled: it ends when f returns (done) or when it
	// cancels ctx; untilStalled waits for it (watched).
	go func() {
		defer close(watched)
		last, lastAt := c.Progress(), time.Now()
		tick := time.NewTicker(max(stall/10, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if p := c.Progress(); p != last {
					last, lastAt = p, now
				} else if now.Sub(lastAt) >= stall {
					cancel(errStalled)
					return
				}
			}
		}
	}()
	err := f(ctx)
	close(done)
	<-watched
	if errors.Is(context.Cause(ctx), errStalled) {
		return fmt.Errorf("%w for %s", errStalled, stall)
	}
	return err
}

// clientNotes reports what the client saw that breaks the protocol: stdout
// lines that were not JSON-RPC (stdio), responses to ids never sent, and
// notifications not answered with 202 (HTTP).
func (r *Result) clientNotes(c *client.Client) {
	st := c.Stats()
	if st.Garbage > 0 {
		r.note("%d messages from the server were not JSON-RPC (stdio servers must write only MCP messages to stdout)", st.Garbage)
	}
	if st.Unknown > 0 {
		r.note("%d responses carried an id that was never sent or was already answered", st.Unknown)
	}
	if st.NotifyNot202 > 0 {
		r.note("%d notifications were answered with a 2xx status other than 202", st.NotifyNot202)
	}
}
