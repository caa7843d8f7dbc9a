package main

import (
	"context"
	"sync"
	"time"
)

// inflight tracks the calls in flight on one stdio connection or HTTP
// session, by id, so that a cancellation can reach them and a cancelled call
// is never answered.
type inflight struct {
	ctx       context.Context // parent of every call's context
	cancelAll context.CancelFunc

	mu    sync.Mutex
	calls map[string]context.CancelFunc
	wg    sync.WaitGroup // calls started with run

	// idle hands a call to a worker waiting for one (unbuffered: a call
	// either meets an idle worker or starts a new one).
	idle    chan func()
	stopped chan struct{} // closed by close: idle workers end
	workers sync.WaitGroup
}

// idleWorker is how long a worker waits for another call before it ends.
const idleWorker = 10 * time.Second

func newInflight() *inflight {
	ctx, cancel := context.WithCancel(context.Background())
	return &inflight{ctx: ctx, cancelAll: cancel, calls: map[string]context.CancelFunc{},
		idle: make(chan func()), stopped: make(chan struct{})}
}

// register adds the call with id key, whose context ends when parent does,
// when it is cancelled, or when the registry closes. It reports false when
// a call with that id is in flight already.
func (f *inflight) register(parent context.Context, key string) (context.Context, bool) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(f.ctx, cancel)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.calls[key]; dup {
		stop()
		cancel()
		return nil, false
	}
	f.calls[key] = func() { stop(); cancel() }
	return ctx, true
}

// finish removes the call and reports whether it was still registered: a
// call whose cancellation came first must not be answered.
func (f *inflight) finish(key string) bool {
	f.mu.Lock()
	c, ok := f.calls[key]
	delete(f.calls, key)
	f.mu.Unlock()
	if ok {
		c() // release the context
	}
	return ok
}

// cancel stops the call with id key; unknown or finished ids are ignored.
func (f *inflight) cancel(key string) {
	f.mu.Lock()
	c := f.calls[key]
	delete(f.calls, key)
	f.mu.Unlock()
	if c != nil {
		c()
	}
}

// run runs a registered call on a goroutine of its own: an idle worker if
// one waits, a new one otherwise. Workers are reused because a goroutine
// that starts afresh for every call grows its stack for every call: about a
// third of a plain server's CPU time in a profile of this one before it
// reused them.
func (f *inflight) run(ctx context.Context, call func(context.Context)) {
	f.wg.Add(1)
	task := func() {
		defer f.wg.Done()
		call(ctx)
	}
	select {
	case f.idle <- task:
		return
	default:
	}
	f.workers.Add(1)
	// Owned by the registry: a worker runs calls until none came for
	// idleWorker, or close stopped it; close waits on workers.
	go func() {
		defer f.workers.Done()
		f.work(task)
	}()
}

func (f *inflight) work(task func()) {
	t := time.NewTimer(idleWorker)
	defer t.Stop()
	for {
		task()
		t.Reset(idleWorker)
		select {
		case task = <-f.idle:
		case <-t.C:
			return
		case <-f.stopped:
			return
		}
	}
}

// close gives the calls started with run grace to finish, then cancels every
// call still in flight and waits for those started with run.
func (f *inflight) close(grace time.Duration) {
	done := make(chan struct{})
	// Owned by close: it ends when every call has, which close waits for
	// below whether or not grace ran out first.
	go func() {
		f.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	f.cancelAll()
	<-done
	close(f.stopped)
	f.workers.Wait()
}
