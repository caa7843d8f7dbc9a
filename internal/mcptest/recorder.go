package mcptest

import (
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/diagnostics"
)

// Recorder is an OnError callback that keeps every report.
type Recorder struct {
	mu      sync.Mutex
	reports []Report
	signal  chan struct{}
}

// Report is one call of OnError.
type Report struct {
	Err     error
	Details *diagnostics.ToolErrorDetails
}

// NewRecorder returns an empty recorder; pass its OnError as the server's.
func NewRecorder() *Recorder { return &Recorder{signal: make(chan struct{}, 1)} }

// OnError records one report.
func (r *Recorder) OnError(err error, d *diagnostics.ToolErrorDetails) {
	r.mu.Lock()
	r.reports = append(r.reports, Report{err, d})
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// Wait returns the reports once n arrived.
func (r *Recorder) Wait(t testing.TB, n int) []Report {
	t.Helper()
	timer := time.NewTimer(Watchdog)
	defer timer.Stop()
	for {
		got := r.Snapshot()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.signal:
		case <-timer.C:
			t.Fatalf("%d reports arrived within %v (the harness's watchdog), want %d", len(got), Watchdog, n)
		}
	}
}

// Snapshot returns the reports so far.
func (r *Recorder) Snapshot() []Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Report(nil), r.reports...)
}
