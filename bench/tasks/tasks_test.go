package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/taskstore"
	"github.com/toolgrain/toolgrain/tools"
)

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// figures are what one run measures.
type figures struct {
	create        time.Duration // to create every task
	bytesRunning  float64       // heap and stacks per running task
	getP50        time.Duration // tasks/get of a running task
	getP99        time.Duration
	cancelToIdle  time.Duration // from the first tasks/cancel until no task runs
	leftRunning   int64
	bytesFinished float64 // heap per finished task held by the store
}

// wait is a task tool that waits for its context or ms.
var wait = tools.Tool{
	Name: "wait", TaskSupport: tools.TaskOptional,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}},"required":["ms"]}`),
	Handler: tools.Func(func(ctx context.Context, in struct {
		MS int `json:"ms"`
	}) (*tools.Result, error) {
		t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return tools.TextResult("done"), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}),
}

func call(ctx context.Context, c *toolgrain.InMemoryClient, method, params string) (map[string]any, error) {
	raw, err := c.Call(ctx, method, json.RawMessage("{"+params+","+meta+"}"))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(raw, &m)
	return m, err
}

// parallel runs fn(i) for i in [0, n) on workers goroutines, and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := first.Load().(error); ok {
		return err
	}
	return nil
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// measure runs n tasks at once on a fresh server with store, gets each, cancels each, then
// creates n tasks that finish at once, and returns the figures.
func measure(tb testing.TB, n int, store taskstore.Store) figures {
	ctx := context.Background()
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{wait},
		Tasks: toolgrain.TaskConfig{Store: store, MaxTasks: 4 * n}})
	if err != nil {
		tb.Fatal(err)
	}
	defer srv.Close()
	c, err := srv.ConnectInMemory()
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	var f figures
	ids := make([]string, n)
	before := heap()
	start := time.Now()
	err = parallel(n, 64, func(i int) error {
		m, err := call(ctx, c, "tools/call", `"name":"wait","arguments":{"ms":600000}`)
		if err == nil && m["resultType"] != "task" {
			err = fmt.Errorf("not a task: %v", m)
		}
		if err == nil {
			ids[i] = m["taskId"].(string)
		}
		return err
	})
	f.create = time.Since(start)
	if err != nil {
		tb.Fatal(err)
	}
	if got := srv.Stats().RunningTasks; got != int64(n) {
		tb.Fatalf("%d tasks running, want %d", got, n)
	}
	f.bytesRunning = float64(heap()-before) / float64(n)

	lat := make([]time.Duration, n)
	err = parallel(n, 16, func(i int) error {
		t0 := time.Now()
		m, err := call(ctx, c, "tasks/get", fmt.Sprintf(`"taskId":%q`, ids[i]))
		lat[i] = time.Since(t0)
		if err == nil && m["status"] != "working" {
			err = fmt.Errorf("task %s: %v", ids[i], m)
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(lat)
	f.getP50, f.getP99 = lat[n/2], lat[n*99/100]

	start = time.Now()
	err = parallel(n, 64, func(i int) error {
		_, err := call(ctx, c, "tasks/cancel", fmt.Sprintf(`"taskId":%q`, ids[i]))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	for srv.Stats().RunningTasks > 0 && time.Since(start) < time.Minute {
		time.Sleep(time.Millisecond)
	}
	f.cancelToIdle = time.Since(start)
	f.leftRunning = srv.Stats().RunningTasks
	for _, id := range []string{ids[0], ids[n-1]} {
		m, err := call(ctx, c, "tasks/get", fmt.Sprintf(`"taskId":%q`, id))
		if err != nil || m["status"] != "cancelled" {
			tb.Fatalf("task %s after cancel: %v %v", id, m, err)
		}
	}

	before = heap()
	err = parallel(n, 64, func(i int) error {
		_, err := call(ctx, c, "tools/call", `"name":"wait","arguments":{"ms":0}`)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	for srv.Stats().RunningTasks > 0 {
		time.Sleep(time.Millisecond)
	}
	f.bytesFinished = float64(heap()-before) / float64(n)
	return f
}

// TestTasksAtScale is the benchmark's scenario, small: every task is created, read, cancelled
// and none is left running.
func TestTasksAtScale(t *testing.T) {
	f := measure(t, 200, taskstore.NewMemory())
	if f.leftRunning != 0 {
		t.Errorf("%d tasks left running after cancelling every one", f.leftRunning)
	}
}

// BenchmarkTasks10k: 10,000 tasks at once. Run it with -benchtime 1x.
func BenchmarkTasks10k(b *testing.B) {
	const n = 10000
	stores := []struct {
		name string
		open func(b *testing.B) taskstore.Store
	}{
		{"memory", func(*testing.B) taskstore.Store { return taskstore.NewMemory() }},
		{"bolt", func(b *testing.B) taskstore.Store {
			s, err := taskstore.OpenBolt(filepath.Join(b.TempDir(), "tasks.db"), taskstore.BoltOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			b.Logf("%d tasks created at once (64 clients), each tasks/get once (16 clients), each cancelled, then %d that finish at once", n, n)
			for b.Loop() {
				f := measure(b, n, st.open(b))
				b.ReportMetric(float64(f.create.Microseconds())/n, "µs/create")
				b.ReportMetric(f.bytesRunning, "B/running-task")
				b.ReportMetric(float64(f.getP50.Microseconds()), "µs-get-p50")
				b.ReportMetric(float64(f.getP99.Microseconds()), "µs-get-p99")
				b.ReportMetric(float64(f.cancelToIdle.Milliseconds()), "ms-cancel-all")
				b.ReportMetric(float64(f.leftRunning), "left-running")
				b.ReportMetric(f.bytesFinished, "B/finished-task")
			}
		})
	}
}
