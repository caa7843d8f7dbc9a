package metrics_test

import (
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/metrics"
)

func TestMemory(t *testing.T) {
	m := metrics.NewMemory(0.01, 0.001, 0.1, 0.01) // unsorted, with a duplicate
	m.CallStarted("a")
	m.CallStarted("a")
	m.CallStarted("b")
	m.CallEnded("a", metrics.OK, 500*time.Microsecond)
	m.CallEnded("a", metrics.Timeout, 2*time.Second)
	m.LateResponseSuppressed("a")
	m.ReportDropped()
	s := m.Snapshot()

	if s.InFlight != 1 || s.Tools["b"].InFlight != 1 || s.Tools["a"].InFlight != 0 {
		t.Errorf("in flight: total %d, a %d, b %d", s.InFlight, s.Tools["a"].InFlight, s.Tools["b"].InFlight)
	}
	if s.Calls("a", metrics.OK) != 1 || s.Calls("a", metrics.Timeout) != 1 || s.Calls("b", metrics.OK) != 0 || s.Calls("none", metrics.OK) != 0 {
		t.Errorf("calls: %+v", s.Tools)
	}
	if s.LateResponsesSuppressed() != 1 || s.ReportsDropped != 1 || s.Cancellations() != 0 {
		t.Errorf("late %d, dropped %d, cancellations %d", s.LateResponsesSuppressed(), s.ReportsDropped, s.Cancellations())
	}
	h := s.Tools["a"].Latency
	wantBounds := []float64{0.001, 0.01, 0.1}
	wantCounts := []uint64{1, 0, 0, 1} // 0.5 ms in the first bucket, 2 s above every bound
	if len(h.Bounds) != len(wantBounds) || len(h.Counts) != len(wantCounts) {
		t.Fatalf("histogram = %+v", h)
	}
	for i := range wantBounds {
		if h.Bounds[i] != wantBounds[i] {
			t.Errorf("bounds = %v, want %v", h.Bounds, wantBounds)
		}
	}
	for i := range wantCounts {
		if h.Counts[i] != wantCounts[i] {
			t.Errorf("counts = %v, want %v", h.Counts, wantCounts)
		}
	}
	if h.Count != 2 || h.Sum < 2.0004 || h.Sum > 2.0006 {
		t.Errorf("count %d, sum %v", h.Count, h.Sum)
	}

	// A snapshot does not change afterwards.
	m.CallEnded("b", metrics.Cancelled, time.Millisecond)
	if s.Tools["b"].Calls[metrics.Cancelled] != 0 || m.Snapshot().Cancellations() != 1 {
		t.Error("snapshot shares state with the recorder")
	}
}

func TestMemoryBoundaryAndDefaults(t *testing.T) {
	m := metrics.NewMemory()
	m.CallStarted("t")
	m.CallEnded("t", metrics.OK, time.Millisecond) // exactly on a bound: counted in that bucket
	h := m.Snapshot().Tools["t"].Latency
	if len(h.Bounds) != len(metrics.DefaultBuckets) {
		t.Fatalf("bounds = %v", h.Bounds)
	}
	for i, b := range h.Bounds {
		if b == 0.001 && h.Counts[i] != 1 {
			t.Errorf("1 ms not counted in the 1 ms bucket: %v", h.Counts)
		}
	}
}

func TestMemoryConcurrent(t *testing.T) {
	m := metrics.NewMemory()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				m.CallStarted("t")
				m.CallEnded("t", metrics.OK, time.Microsecond)
				_ = m.Snapshot()
			}
		})
	}
	wg.Wait()
	if s := m.Snapshot(); s.Calls("t", metrics.OK) != 8000 || s.InFlight != 0 {
		t.Errorf("snapshot = %+v", s)
	}
}

func TestNop(t *testing.T) {
	var r metrics.Recorder = metrics.Nop{}
	r.CallStarted("t")
	r.CallEnded("t", metrics.Failed, time.Second)
	r.LateResponseSuppressed("t")
	r.ReportDropped()
}
