package scenario_test

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/internal/fakemcp"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

// stdioTarget dials a fresh fake over io.Pipe for every connection, as a
// stdio target starts a fresh process.
func stdioTarget(tb testing.TB, opts fakemcp.Options) scenario.Target {
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
		Name: "fake", Transport: "stdio", Endpoint: "in-process", PID: os.Getpid(),
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
			if err := c.Initialize(ctx); err != nil {
				return nil, err
			}
			return c, nil
		},
	}
}

func httpTarget(tb testing.TB, opts fakemcp.Options) scenario.Target {
	tb.Helper()
	opts.Session = "s"
	srv := fakemcp.New(opts)
	hs := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() { srv.Close(); hs.Close() })
	return scenario.Target{
		Name: "fake", Transport: "http", Endpoint: hs.URL, PID: os.Getpid(),
		Dial: func(ctx context.Context) (*client.Client, error) {
			c, err := client.DialHTTP(hs.URL, client.HTTPOptions{})
			if err != nil {
				return nil, err
			}
			if err := c.Initialize(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
	}
}

var targets = []struct {
	name string
	make func(testing.TB, fakemcp.Options) scenario.Target
}{
	{"stdio", stdioTarget},
	{"http", httpTarget},
	{"http_sse", func(tb testing.TB, o fakemcp.Options) scenario.Target {
		o.SSE = true
		return httpTarget(tb, o)
	}},
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
	cfg.ReplyWait = 2 * time.Second // only the probe that gets no reply waits this long
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
			if r.Scenario != "throughput" || r.Target != "fake" || r.Protocol != "2025-11-25" || len(r.Server) == 0 {
				t.Errorf("result header = %+v", r)
			}
		})
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
				if tt.name == "stdio" {
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
				case answer && tt.name == "stdio" && late != sent:
					t.Errorf("late_responses = %v, want every one of the %v cancelled calls", late, sent)
				case tt.name != "stdio":
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
