package scenario_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/internal/fakemcp"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

// handshake opens a connection in the target's era.
func handshake(ctx context.Context, c *client.Client, era client.Era) error {
	if era == client.Modern {
		return c.Discover(ctx)
	}
	return c.Initialize(ctx)
}

// stdioTarget dials a fresh fake over io.Pipe for every connection, as a
// stdio target starts a fresh process.
func stdioTarget(tb testing.TB, opts fakemcp.Options) scenario.Target {
	return stdioTargetIn(tb, client.Legacy, opts)
}

func stdioTargetIn(tb testing.TB, era client.Era, opts fakemcp.Options) scenario.Target {
	tb.Helper()
	var mu sync.Mutex
	var cleanups []func()
	tb.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range cleanups {
			f()
		}
	})
	return scenario.Target{
		Name: "fake", Transport: "stdio", Endpoint: "in-process", PID: os.Getpid(), Era: era,
		Dial: func(ctx context.Context) (*client.Client, error) {
			srv := fakemcp.New(opts)
			toSrvR, toSrvW := io.Pipe()
			fromSrvR, fromSrvW := io.Pipe()
			served := make(chan struct{})
			go func() {
				defer close(served)
				srv.Serve(toSrvR, fromSrvW)
				fromSrvW.Close()
			}()
			c := client.Connect(fromSrvR, toSrvW)
			mu.Lock()
			// The scenario closes c; after that the fake's input ends.
			cleanups = append(cleanups, func() { c.Close(); srv.Close(); <-served })
			mu.Unlock()
			if err := handshake(ctx, c, era); err != nil {
				return nil, err
			}
			return c, nil
		},
	}
}

func httpTarget(tb testing.TB, opts fakemcp.Options) scenario.Target {
	return httpTargetIn(tb, client.Legacy, opts)
}

func httpTargetIn(tb testing.TB, era client.Era, opts fakemcp.Options) scenario.Target {
	tb.Helper()
	opts.Session = "s"
	srv := fakemcp.New(opts)
	hs := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() { srv.Close(); hs.Close() })
	return scenario.Target{
		Name: "fake", Transport: "http", Endpoint: hs.URL, PID: os.Getpid(), Era: era,
		Dial: func(ctx context.Context) (*client.Client, error) {
			c, err := client.DialHTTP(hs.URL, client.HTTPOptions{})
			if err != nil {
				return nil, err
			}
			if err := handshake(ctx, c, era); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
	}
}

// targets are the ways a scenario can reach a fake, in both eras; the name
// starts with the transport and ends with the era.
var targets = []struct {
	name string
	era  client.Era
	make func(testing.TB, fakemcp.Options) scenario.Target
}{
	{"stdio/legacy", client.Legacy, stdioTarget},
	{"http/legacy", client.Legacy, httpTarget},
	{"http_sse/legacy", client.Legacy, func(tb testing.TB, o fakemcp.Options) scenario.Target {
		o.SSE = true
		return httpTarget(tb, o)
	}},
	{"stdio/modern", client.Modern, func(tb testing.TB, o fakemcp.Options) scenario.Target {
		return stdioTargetIn(tb, client.Modern, o)
	}},
	{"http/modern", client.Modern, func(tb testing.TB, o fakemcp.Options) scenario.Target {
		return httpTargetIn(tb, client.Modern, o)
	}},
	{"http_sse/modern", client.Modern, func(tb testing.TB, o fakemcp.Options) scenario.Target {
		o.SSE = true
		return httpTargetIn(tb, client.Modern, o)
	}},
}

func isStdio(name string) bool { return strings.HasPrefix(name, "stdio") }

// protocol is the revision a result of the era names.
func protocol(era client.Era) string {
	if era == client.Modern {
		return client.ModernVersion
	}
	return client.ProtocolVersion
}

// quick is a configuration small enough for tests; nothing asserts on time.
func quick() scenario.Config {
	cfg := scenario.DefaultConfig()
	cfg.Concurrency = 4
	cfg.Duration = 200 * time.Millisecond
	cfg.Warmup = 50 * time.Millisecond
	cfg.N = 30
	cfg.Window = 50 * time.Millisecond
	cfg.Settle = 0
	cfg.LoadWait = 0
	cfg.ReplyWait = time.Second // only the probes that get no reply wait this long
	cfg.Oversize = 100 << 10
	return cfg
}

func metric(t *testing.T, r *scenario.Result, name string) float64 {
	t.Helper()
	v, ok := r.Metrics[name]
	if !ok {
		t.Fatalf("%s: no metric %q in %v (notes %q)", r.Scenario, name, r.Metrics, r.Notes)
	}
	return v
}

func TestThroughput(t *testing.T) {
	for _, tt := range targets {
		t.Run(tt.name, func(t *testing.T) {
			r, err := scenario.Throughput(context.Background(), tt.make(t, fakemcp.Options{}), quick())
			if err != nil {
				t.Fatal(err)
			}
			// Every worker makes at least one call; the window may hold
			// none on a starved machine, so only whole-run counts are
			// asserted.
			if metric(t, r, "calls_total") < float64(quick().Concurrency) || metric(t, r, "errors") != 0 {
				t.Errorf("metrics = %v, want calls and no errors", r.Metrics)
			}
			metric(t, r, "calls_per_sec")
			if p50, ok := r.Metrics["p50_ms"]; ok && (p50 > r.Metrics["p99_ms"] || r.Metrics["p99_ms"] > r.Metrics["max_ms"]) {
				t.Errorf("percentiles out of order: %v", r.Metrics)
			}
			if r.Scenario != "throughput" || r.Target != "fake" || r.Protocol != protocol(tt.era) || r.Era != string(tt.era) || len(r.Server) == 0 {
				t.Errorf("result header = %+v", r)
			}
		})
	}
}

// TestThroughputServerMemory: with the server's pid, memory idle and under
// load; with its pprof URL (here this process's own, as the fake runs in
// it), allocation per call.
func TestThroughputServerMemory(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	ps := httptest.NewServer(mux)
	defer ps.Close()
	target := stdioTarget(t, fakemcp.Options{})
	target.Pprof = ps.URL + "/debug/pprof/"
	r, err := scenario.Throughput(context.Background(), target, quick())
	if err != nil {
		t.Fatal(err)
	}
	if metric(t, r, "server_alloc_bytes_per_call") <= 0 || metric(t, r, "server_allocs_per_call") <= 0 ||
		metric(t, r, "rss_idle_kb") <= 0 || metric(t, r, "rss_load_kb") <= 0 {
		t.Errorf("metrics = %v", r.Metrics)
	}
	for _, m := range []string{"rss_idle", "rss_load"} {
		if anon := metric(t, r, m+"_anon_kb"); anon <= 0 || anon > metric(t, r, m+"_kb") {
			t.Errorf("%s_anon_kb = %v, not a part of %s_kb %v", m, anon, m, metric(t, r, m+"_kb"))
		}
	}
	// A pprof URL that does not answer is a note, not a failed run.
	ps.Close()
	r, err = scenario.Throughput(context.Background(), target, quick())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Metrics["server_alloc_bytes_per_call"]; ok || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "allocation per call not measured") {
		t.Errorf("metrics %v, notes %q; want a note instead of an allocation figure", r.Metrics, r.Notes)
	}
}

func TestCancel(t *testing.T) {
	for _, tt := range targets {
		for _, answer := range []bool{true, false} {
			name := tt.name + "/silent"
			if answer {
				name = tt.name + "/answers_cancelled"
			}
			t.Run(name, func(t *testing.T) {
				cfg := quick()
				r, err := scenario.Cancel(context.Background(), tt.make(t, fakemcp.Options{AnswerCancelled: answer}), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if len(r.Notes) > 0 {
					t.Errorf("notes: %q", r.Notes)
				}
				n := float64(cfg.N)
				if metric(t, r, "sent") != n || metric(t, r, "cancels_sent") != n || metric(t, r, "answered_before_cancel") != 0 {
					t.Errorf("metrics = %v, want %v calls sent and cancelled", r.Metrics, n)
				}
				metric(t, r, "echo_after_first_cancel_ms")
				metric(t, r, "echo_after_last_cancel_ms")
				late := metric(t, r, "late_responses")
				if isStdio(tt.name) {
					// The fake answers in the order it reads, so the
					// follow-up echo comes after every late response.
					want := 0.0
					if answer {
						want = n
					}
					if late != want {
						t.Errorf("late_responses = %v, want %v", late, want)
					}
					return
				}
				open := metric(t, r, "streams_open_after_window")
				if tt.era == client.Modern {
					// The client closed every stream itself and waited
					// for it: nothing can come back.
					closed := metric(t, r, "streams_closed_by_client")
					if late != 0 || open != 0 || closed != n {
						t.Errorf("late %v, open %v, closed by the client %v; want 0, 0, %v", late, open, closed, n)
					}
					return
				}
				quiet := metric(t, r, "quiet_closes")
				if late+open+quiet != n {
					t.Errorf("late %v + open %v + quiet %v != %v cancelled", late, open, quiet, n)
				}
				if !answer && late != 0 {
					t.Errorf("late_responses = %v from a silent server", late)
				}
			})
		}
	}
}

// TestCancelLateProgress: progress notifications for cancelled calls are
// counted, those after the follow-up call as late; a server that keeps
// sending them is told from one that stops.
func TestCancelLateProgress(t *testing.T) {
	for _, tt := range targets {
		if !isStdio(tt.name) {
			continue // the fake sends progress over stdio only
		}
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/keeps_sending=%v", tt.name, keep), func(t *testing.T) {
				cfg := quick()
				cfg.ProgressEvery = 2
				cfg.LoadWait = 100 * time.Millisecond
				cfg.Window = 200 * time.Millisecond
				opts := fakemcp.Options{ProgressEvery: 10 * time.Millisecond, ProgressAfterCancel: keep}
				r, err := scenario.Cancel(context.Background(), tt.make(t, opts), cfg)
				if err != nil {
					t.Fatal(err)
				}
				received, late := metric(t, r, "progress_received"), metric(t, r, "late_progress")
				if received == 0 || metric(t, r, "progress_after_cancel") < late {
					t.Errorf("metrics %v", r.Metrics)
				}
				if keep && late == 0 || !keep && late != 0 {
					t.Errorf("late_progress = %v from a server that keeps sending: %v", late, keep)
				}
				if r.Params["progress_every"] != 2 {
					t.Errorf("params = %v", r.Params)
				}
			})
		}
	}
	// Without -progress-every no call asks for progress, and nothing is
	// reported about it.
	r, err := scenario.Cancel(context.Background(), stdioTarget(t, fakemcp.Options{ProgressEvery: time.Millisecond}), quick())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Metrics["late_progress"]; ok {
		t.Errorf("metrics %v: late_progress without progress tokens", r.Metrics)
	}
}

func TestMixed(t *testing.T) {
	for _, tt := range targets {
		for _, answer := range []bool{true, false} {
			name := tt.name + "/silent"
			if answer {
				name = tt.name + "/answers_cancelled"
			}
			t.Run(name, func(t *testing.T) {
				cfg := quick()
				cfg.CancelFrac = 0.5
				// Sleeps that cannot finish before their cancellation, so
				// that every count below is exact.
				cfg.MixedSleepMs = 600000
				cfg.CancelWithin = 5 * time.Millisecond
				r, err := scenario.Mixed(context.Background(), tt.make(t, fakemcp.Options{AnswerCancelled: answer}), cfg)
				if err != nil {
					t.Fatal(err)
				}
				sent := metric(t, r, "cancels_sent")
				late := metric(t, r, "late_responses")
				if metric(t, r, "calls_total") <= 0 || metric(t, r, "errors") != 0 {
					t.Errorf("metrics = %v, want completed calls and no errors (notes %q)", r.Metrics, r.Notes)
				}
				switch {
				case !answer && late != 0:
					t.Errorf("late_responses = %v from a silent server", late)
				case answer && isStdio(tt.name) && late != sent:
					t.Errorf("late_responses = %v, want every one of the %v cancelled calls", late, sent)
				case !isStdio(tt.name) && tt.era == client.Modern:
					open := metric(t, r, "streams_open_after_window")
					closed := metric(t, r, "streams_closed_by_client")
					if late != 0 || open+closed != sent {
						t.Errorf("late %v, open %v + closed by the client %v != %v cancelled", late, open, closed, sent)
					}
				case !isStdio(tt.name):
					open := metric(t, r, "streams_open_after_window")
					quiet := metric(t, r, "quiet_closes")
					if late+open+quiet != sent {
						t.Errorf("late %v + open %v + quiet %v != %v cancelled", late, open, quiet, sent)
					}
				}
				if metric(t, r, "late_ok") != 0 {
					t.Errorf("late_ok = %v; the fake answers cancelled calls with an error", r.Metrics["late_ok"])
				}
			})
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tt := range targets {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each target is a fake server of its own; the probes mostly wait
			r, err := scenario.Errors(context.Background(), tt.make(t, fakemcp.Options{}), quick())
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]scenario.Probe{}
			for _, p := range r.Probes {
				byName[p.Name] = p
			}
			if len(r.Probes) != int(metric(t, r, "probes")) || metric(t, r, "probes_survived") != metric(t, r, "probes") {
				t.Errorf("probes: %v", r.Metrics)
			}
			if p := byName["malformed JSON"]; p.Code == nil || *p.Code != -32700 || p.ID != "null" || !p.IDOK {
				t.Errorf("malformed JSON probe = %+v, want -32700 with id null", p)
			}
			if p := byName["string id"]; p.ID != "exact" {
				t.Errorf("string id probe = %+v, want the id echoed exactly", p)
			}
			if p := byName["fail error"]; !p.Leak {
				t.Errorf("fail error probe = %+v: the fake leaks the marker, the probe must say so", p)
			}
			if p := byName["fail result"]; p.Leak {
				t.Errorf("fail result probe = %+v flagged as a leak", p)
			}
			if metric(t, r, "calls_total") <= 0 || metric(t, r, "fail_leaks") <= 0 {
				t.Errorf("fail load: %v, want calls and leaks counted", r.Metrics)
			}
			if metric(t, r, "battery_leaks") < 1 {
				t.Errorf("battery_leaks = %v, want at least the fail probes", r.Metrics["battery_leaks"])
			}
		})
	}
}

// TestNotApplicable: a target that does not serve the modern era is not
// applicable to a modern scenario, whether it says so at the handshake or
// at the first call; a legacy scenario runs as before.
func TestNotApplicable(t *testing.T) {
	tests := []struct {
		name   string
		target func(testing.TB, client.Era, fakemcp.Options) scenario.Target
		opts   fakemcp.Options
	}{
		{"stdio/legacy only", stdioTargetIn, fakemcp.Options{LegacyOnly: true}},
		{"http/legacy only", httpTargetIn, fakemcp.Options{LegacyOnly: true}},
		{"http/discover without 2026-07-28", httpTargetIn, fakemcp.Options{DiscoverVersions: []string{"2025-11-25"}}},
		{"stdio/calls refused", stdioTargetIn, fakemcp.Options{RefuseModernCalls: true}},
		{"http/calls refused", httpTargetIn, fakemcp.Options{RefuseModernCalls: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, run := range []func(context.Context, scenario.Target, scenario.Config) (*scenario.Result, error){
				scenario.Throughput, scenario.Cancel, scenario.Mixed,
			} {
				_, err := run(context.Background(), tt.target(t, client.Modern, tt.opts), quick())
				if !scenario.NotApplicable(err) {
					t.Errorf("modern run = %v, want not applicable", err)
				}
			}
			if r, err := scenario.Throughput(context.Background(), tt.target(t, client.Legacy, tt.opts), quick()); err != nil || r.Era != "legacy" {
				t.Errorf("legacy run = %+v, %v", r, err)
			}
		})
	}
	// A failure is not a verdict on the era.
	if scenario.NotApplicable(errors.New("connection refused")) {
		t.Error("any error counts as not applicable")
	}
	r := scenario.NotApplicableResult("cancel", scenario.Target{Name: "x", Transport: "http", Era: client.Modern}, quick(), client.ErrNotModern)
	if r.NotApplicable == "" || len(r.Metrics) != 0 || r.Era != "modern" || r.Scenario != "cancel" {
		t.Errorf("NotApplicableResult = %+v", r)
	}
}

// TestCancelServerStopsReading pins what the cancel scenario reports for a
// server whose reader gets stuck: notes, and no late-response count that
// would flatter it.
func TestCancelServerStopsReading(t *testing.T) {
	cfg := quick()
	cfg.N = 2000 // far more than the pipe holds
	cfg.Stall = 100 * time.Millisecond
	cfg.Timeout = 100 * time.Millisecond
	r, err := scenario.Cancel(context.Background(), stdioTarget(t, fakemcp.Options{StopReadingAfter: 50}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Metrics["late_responses"]; ok {
		t.Errorf("late_responses reported though the cancellations never arrived: %v", r.Metrics)
	}
	if _, ok := r.Metrics["written"]; ok {
		t.Errorf("written reported though the server stopped reading: %v", r.Metrics)
	}
	if len(r.Notes) < 2 {
		t.Errorf("notes = %q, want the stuck reader and the failed cancellations explained", r.Notes)
	}
}
