package engine

import (
	"sync"
	"testing"
	"time"
)

// TestPoolCapsIdleWorkers: after a burst, at most maxIdleWorkers workers stay to wait for work,
// and the end of a burst of at least burstWorkers resets the peak (the memory release).
func TestPoolCapsIdleWorkers(t *testing.T) {
	p := newWorkerPool()
	defer p.close()
	const n = burstWorkers + 100
	var started, finished sync.WaitGroup
	release := make(chan struct{})
	started.Add(n)
	finished.Add(n)
	for range n {
		p.Go(func() {
			started.Done()
			<-release
			finished.Done()
		})
	}
	started.Wait()
	if got := p.live.Load(); got != n {
		t.Fatalf("%d workers alive during the burst, want %d", got, n)
	}
	close(release)
	finished.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for p.live.Load() > maxIdleWorkers && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := p.live.Load(); got > maxIdleWorkers {
		t.Errorf("%d workers alive after the burst, want at most %d", got, maxIdleWorkers)
	}
	if got := p.peak.Load(); got > maxIdleWorkers {
		t.Errorf("peak %d after the burst ended, want it reset to at most %d", got, maxIdleWorkers)
	}
	// The idle workers still take new work.
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
}
