package scenario

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/internal/procstat"
)

// outcome is how one operation of a load loop ended.
type outcome int

const (
	outOK    outcome = iota // answered as expected
	outError                // failed
)

// tally is what one worker saw in the measured window.
type tally struct {
	ok, errors int64 // in the window
	// Of the errors in the window: isError results and JSON-RPC errors.
	errTool, errRPC int64
	all             int64 // outOK over the whole run, warm-up included
	// Counted by the op itself, over the whole run.
	leaks, rpcErrors int64
	lat              []time.Duration // of outOK operations
	firstErr         string          // what the first failure was, warm-up included
}

func (t *tally) add(o *tally) {
	if t.firstErr == "" {
		t.firstErr = o.firstErr
	}
	t.ok += o.ok
	t.all += o.all
	t.errors += o.errors
	t.errTool += o.errTool
	t.errRPC += o.errRPC
	t.leaks += o.leaks
	t.rpcErrors += o.rpcErrors
	t.lat = append(t.lat, o.lat...)
}

// load runs op on several workers for warmup+duration and counts what
// finishes inside the measured window [from, to).
type load struct {
	from, to time.Time
	// Whole-run counters for the progress line.
	total, failed atomic.Int64
}

type worker struct {
	l   *load
	rng *rand.Rand
	t   tally
}

// record counts one finished operation if it ended inside the window.
func (w *worker) record(o outcome, start, end time.Time) {
	w.l.total.Add(1)
	switch o {
	case outOK:
		w.t.all++
	case outError:
		w.l.failed.Add(1)
	}
	if !w.l.inWindow(end) {
		return
	}
	switch o {
	case outOK:
		w.t.ok++
		w.t.lat = append(w.t.lat, end.Sub(start))
	case outError:
		w.t.errors++
	}
}

// fail records a failed operation and remembers the first failure's
// description.
func (w *worker) fail(start, end time.Time, msg *client.Message, err error) {
	if w.t.firstErr == "" {
		w.t.firstErr = describe(msg, err)
	}
	if w.l.inWindow(end) {
		switch errorKind(msg, err) {
		case "tool":
			w.t.errTool++
		case "rpc":
			w.t.errRPC++
		}
	}
	w.record(outError, start, end)
}

// noteErrors adds a note naming the first failure, if there were any.
func noteErrors(r *Result, sum tally) {
	if sum.errors > 0 && sum.firstErr != "" {
		r.note("%d calls failed in the window; the first failure of the run: %s", sum.errors, sum.firstErr)
	}
}

// inWindow reports whether t lies in the measured window.
func (l *load) inWindow(t time.Time) bool { return !t.Before(l.from) && t.Before(l.to) }

// loadHooks are called by runLoad's own goroutine at the window's edges.
type loadHooks struct {
	windowStart, windowEnd func()
	progress               func(l *load, now time.Time) string
}

// runLoad runs op on workers goroutines until the window ends or an op
// returns an error (the connection is gone), which it returns.
func runLoad(ctx context.Context, cfg Config, workers int, op func(context.Context, *worker) error, h loadHooks) (tally, error) {
	start := time.Now()
	l := &load{from: start.Add(cfg.Warmup)}
	l.to = l.from.Add(cfg.Duration)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		sum   tally
		fatal error
	)
	for i := range workers {
		wg.Add(1)
		// Owned by runLoad, which waits on wg; each ends when the window
		// closes, ctx is cancelled or its op reports a lost connection.
		go func() {
			defer wg.Done()
			w := &worker{l: l, rng: rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(i)))}
			// At least one op each, however late the worker gets to run.
			err := op(ctx, w)
			for err == nil && ctx.Err() == nil && time.Now().Before(l.to) {
				err = op(ctx, w)
			}
			mu.Lock()
			defer mu.Unlock()
			sum.add(&w.t)
			if err != nil && fatal == nil {
				fatal = err
				cancel()
			}
		}()
	}
	var prog *progress
	if h.progress != nil {
		prog = startProgress(cfg.Progress, func() string { return h.progress(l, time.Now()) })
	} else {
		prog = startProgress(nil, nil)
	}
	if sleepCtx(ctx, time.Until(l.from)) == nil && h.windowStart != nil {
		h.windowStart()
	}
	if sleepCtx(ctx, time.Until(l.to)) == nil && h.windowEnd != nil {
		h.windowEnd()
	}
	wg.Wait()
	prog.Stop()
	return sum, fatal
}

// latencyMetrics sets p50/p90/p99/max (ms) with the given prefix.
func latencyMetrics(r *Result, prefix string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	r.set(prefix+"p50_ms", ms(percentile(lat, 50)))
	r.set(prefix+"p90_ms", ms(percentile(lat, 90)))
	r.set(prefix+"p99_ms", ms(percentile(lat, 99)))
	r.set(prefix+"max_ms", ms(lat[len(lat)-1]))
}

// percentile returns the nearest-rank percentile p of sorted samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// toolParams pre-encodes tools/call params once per run.
func toolParams(name string, args any) json.RawMessage {
	b, err := json.Marshal(map[string]any{"name": name, "arguments": args})
	if err != nil {
		panic(err) // only ever called with maps of strings and numbers
	}
	return b
}

// callOnce sends one request and waits for it, bounded by timeout.
func callOnce(ctx context.Context, c *client.Client, timeout time.Duration, method string, params any) (*client.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.Call(ctx, method, params)
}

// window samples the server at the measured window's edges: its CPU time
// and memory from /proc, and, when the target has a pprof URL, its Go
// runtime's allocation counters. The pprof reads happen outside the CPU
// span (before its start, after its end), since the server spends CPU
// building the profile.
type window struct {
	pid        int
	heapURL    string // empty: no allocation counters
	start, end procstat.Sample
	ok         bool
	memStart   procstat.GoMem
	memEnd     procstat.GoMem
	memErr     error
}

func newWindow(t Target, pid int) *window {
	w := &window{pid: pid}
	if t.Pprof != "" {
		w.heapURL, w.memErr = procstat.PprofHeapURL(t.Pprof)
	}
	return w
}

// readGoMem reads the allocation counters, keeping the first error.
func (w *window) readGoMem() procstat.GoMem {
	if w.heapURL == "" || w.memErr != nil {
		return procstat.GoMem{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := procstat.ReadGoMem(ctx, http.DefaultClient, w.heapURL)
	if err != nil {
		w.memErr = err
	}
	return m
}

func (w *window) hooks() (func(), func()) {
	return func() {
			w.memStart = w.readGoMem()
			s, ok := sample(w.pid)
			w.start, w.ok = s, ok
		}, func() {
			s, ok := sample(w.pid)
			w.end, w.ok = s, w.ok && ok
			w.memEnd = w.readGoMem()
		}
}

// perCall sets server_cpu_us_per_call, the allocation per call when the
// counters were read, and rss_load_kb, for calls finished in the window.
func (w *window) perCall(r *Result, calls int64) {
	if w.ok {
		r.set("rss_load_kb", float64(w.end.RSSKB))
		setAnon(r, "rss_load_anon_kb", w.end)
	}
	if w.ok && calls > 0 {
		r.set("server_cpu_us_per_call", float64((w.end.CPU-w.start.CPU).Microseconds())/float64(calls))
	}
	switch {
	case w.heapURL == "" && w.memErr == nil:
	case w.memErr != nil:
		r.note("allocation per call not measured: %v", w.memErr)
	case calls > 0:
		r.set("server_alloc_bytes_per_call", float64(w.memEnd.TotalAlloc-w.memStart.TotalAlloc)/float64(calls))
		r.set("server_allocs_per_call", float64(w.memEnd.Mallocs-w.memStart.Mallocs)/float64(calls))
	}
}

// setAnon records the anonymous part of a sample's RSS (heap, stacks: what the server itself
// allocated, without the pages of its executable) under metric, when the kernel reports it.
func setAnon(r *Result, metric string, s procstat.Sample) {
	if s.AnonKB > 0 {
		r.set(metric, float64(s.AnonKB))
	}
}

// endSample records the server's memory and threads at the end of a run.
func endSample(r *Result, pid int) {
	if s, ok := sample(pid); ok {
		r.set("rss_kb", float64(s.RSSKB))
		r.set("threads", float64(s.Threads))
	}
}
