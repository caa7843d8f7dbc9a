package engine

import (
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// workerIdle is how long an idle worker waits for work before it exits.
const workerIdle = 2 * time.Second

// maxIdleWorkers caps the workers waiting for work: a worker that finishes a job while that
// many wait exits at once. A burst (thousands of long calls in flight, then cancelled) would
// otherwise leave one idle goroutine with a grown stack per call for workerIdle, and the
// memory with them; the steady load of a busy server needs far fewer warm workers than this.
const maxIdleWorkers = 128

// burstWorkers is the number of live workers from which their dwindling counts as the end of a
// burst: once a sixteenth of the peak (or maxIdleWorkers) are left, the pool hands the memory of
// the exited workers' stacks back to the operating system (see releaseMemory).
const burstWorkers = 1024

// workerPool runs functions on warm goroutines. protoactor's default dispatcher starts a new
// goroutine each time an idle mailbox gets a message, and a new goroutine starts with a small
// stack that JSON decoding and schema validation then grow by copying, several times per call:
// measured, that copying was about 40 % of the CPU of a tools/call. A worker keeps its grown
// stack across jobs.
//
// Go never blocks: a job goes to an idle worker if one is waiting, or to a new worker. Workers
// exit after workerIdle without work, at close, or when maxIdleWorkers others already wait.
type workerPool struct {
	jobs   chan func() // unbuffered: a send succeeds only when a worker is waiting
	quit   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool
	idle   atomic.Int32 // workers waiting for a job (approximately)
	live   atomic.Int64 // workers alive
	peak   atomic.Int64 // most workers alive since the last release of memory
	mu     sync.RWMutex // orders wg.Add against close
}

func newWorkerPool() *workerPool {
	return &workerPool{jobs: make(chan func()), quit: make(chan struct{})}
}

// Go runs fn on a worker.
func (p *workerPool) Go(fn func()) {
	select {
	case p.jobs <- fn:
		return
	default:
	}
	p.mu.RLock()
	if p.closed.Load() {
		p.mu.RUnlock()
		// Only a message to an engine actor after Shutdown gets here; it still runs.
		go fn()
		return
	}
	p.wg.Add(1)
	p.mu.RUnlock()
	// Owned by the pool: it ends after workerIdle without work, or when close is called; close
	// waits for it.
	go p.worker(fn)
}

func (p *workerPool) worker(fn func()) {
	defer p.wg.Done()
	p.started()
	defer p.exited()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		fn()
		if p.idle.Add(1) > maxIdleWorkers {
			p.idle.Add(-1)
			return
		}
		idle.Reset(workerIdle)
		select {
		case fn = <-p.jobs:
			p.idle.Add(-1)
		case <-idle.C:
			p.idle.Add(-1)
			return
		case <-p.quit:
			p.idle.Add(-1)
			return
		}
	}
}

func (p *workerPool) started() {
	n := p.live.Add(1)
	for {
		peak := p.peak.Load()
		if n <= peak || p.peak.CompareAndSwap(peak, n) {
			return
		}
	}
}

// exited notices the end of a burst: when the live workers fall to a sixteenth of a peak of at
// least burstWorkers (or to maxIdleWorkers, which may be more), the memory is released once, and
// the peak starts again from here.
func (p *workerPool) exited() {
	n := p.live.Add(-1)
	peak := p.peak.Load()
	if peak >= burstWorkers && n <= max(peak/16, maxIdleWorkers) && p.peak.CompareAndSwap(peak, n) {
		time.AfterFunc(releaseDelay, releaseMemory)
	}
}

// releaseDelay lets the last workers of a burst exit before the memory is released.
const releaseDelay = 500 * time.Millisecond

// releaseMemory returns the free memory to the operating system. Go gives freed goroutine stacks
// back only gradually: after 10,000 calls in flight, the server's resident memory stayed at
// seven times its level before for as long as it was watched. It costs one garbage collection,
// once per burst.
func releaseMemory() { debug.FreeOSMemory() }

// close stops the idle workers and waits for the busy ones to finish their job.
func (p *workerPool) close() {
	p.mu.Lock()
	if p.closed.Swap(true) {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	close(p.quit)
	p.wg.Wait()
}

// poolDispatcher is a protoactor Dispatcher that runs mailboxes on a workerPool.
type poolDispatcher struct {
	pool *workerPool
	// throughput is the number of messages a mailbox processes before yielding (calling
	// runtime.Gosched); 0 stands for protoactor's default, 300.
	throughput int
}

var _ actor.Dispatcher = poolDispatcher{}

func (d poolDispatcher) Schedule(fn func()) { d.pool.Go(fn) }

// Throughput is the number of messages a mailbox processes before yielding.
func (d poolDispatcher) Throughput() int {
	if d.throughput > 0 {
		return d.throughput
	}
	return 300
}

// connectionThroughput is the throughput of a connection actor's dispatcher: it never yields
// of its own accord. Each mailbox runs on a worker goroutine of its own, so the yield buys no
// fairness that the Go scheduler's preemption does not already give; but a yield puts the
// connection's goroutine behind every runnable goroutine, and after a burst of cancellations
// thousands of handler goroutines and request actors are runnable at once: with a yield every
// 300 messages, a call that followed 10,000 cancellations waited tens of milliseconds behind
// them in the connection's mailbox.
const connectionThroughput = math.MaxInt32
