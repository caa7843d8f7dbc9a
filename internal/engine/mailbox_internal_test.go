package engine

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recordingInvoker records the user messages a mailbox delivers.
type recordingInvoker struct {
	mu  sync.Mutex
	got []string
}

func (r *recordingInvoker) InvokeSystemMessage(any) {}
func (r *recordingInvoker) InvokeUserMessage(m any) {
	r.mu.Lock()
	r.got = append(r.got, m.(string))
	r.mu.Unlock()
}
func (r *recordingInvoker) EscalateFailure(reason, _ any) { panic(reason) }

func (r *recordingInvoker) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// goDispatcher runs each scheduled run on a goroutine of its own, counted.
type goDispatcher struct {
	scheduled atomic.Int32
	wg        sync.WaitGroup
}

func (d *goDispatcher) Schedule(fn func()) {
	d.scheduled.Add(1)
	d.wg.Add(1)
	go func() { // owned by the test: it ends when the run does; the test waits for it
		defer d.wg.Done()
		fn()
	}()
}
func (d *goDispatcher) Throughput() int { return 300 }

func newTestMailbox() (*requestMailbox, *recordingInvoker, *goDispatcher) {
	d := &goDispatcher{}
	m := newRequestMailbox(d)
	inv := &recordingInvoker{}
	m.RegisterHandlers(inv, nil)
	m.Start()
	return m, inv, d
}

// postHere on an idle mailbox runs it on the caller's goroutine: the message is delivered
// when postHere returns, and nothing was given to the dispatcher. Other posts still go to it.
func TestPostHereRunsAnIdleMailbox(t *testing.T) {
	m, inv, d := newTestMailbox()
	m.postHere("outcome")
	if got := inv.messages(); len(got) != 1 || got[0] != "outcome" || d.scheduled.Load() != 0 {
		t.Fatalf("after postHere: delivered %v, %d runs scheduled; want [outcome] and none", got, d.scheduled.Load())
	}
	m.PostUserMessage("later")
	d.wg.Wait()
	if got := inv.messages(); len(got) != 2 || d.scheduled.Load() != 1 {
		t.Fatalf("after a post: delivered %v, %d runs scheduled; want 2 and 1", got, d.scheduled.Load())
	}
}

// Posts of other goroutines racing with postHere: every message is delivered once, each
// sender's in order, and no run is lost (a lost run leaves messages undelivered).
func TestPostHereWithOtherPosters(t *testing.T) {
	const senders, each, rounds = 4, 200, 200
	m, inv, d := newTestMailbox()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() { // owned by the test, which waits for it
			defer wg.Done()
			for i := range each {
				m.PostUserMessage(fmt.Sprintf("s%d/%d", s, i))
			}
		}()
	}
	for i := range rounds {
		m.postHere(fmt.Sprintf("here/%d", i))
	}
	wg.Wait()
	want := senders*each + rounds
	for deadline := time.Now().Add(10 * time.Second); len(inv.messages()) < want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // the runs take microseconds: this bounds only a lost run
			t.Fatalf("delivered %d of %d messages: a run was lost", len(inv.messages()), want)
		}
	}
	d.wg.Wait()
	got := inv.messages()
	if len(got) != want {
		t.Fatalf("delivered %d messages, want %d", len(got), want)
	}
	next := map[string]int{}
	for _, msg := range got {
		who, n, _ := strings.Cut(msg, "/")
		i, _ := strconv.Atoi(n)
		if i != next[who] {
			t.Fatalf("%s delivered after %s/%d: out of order or twice", msg, who, next[who]-1)
		}
		next[who]++
	}
}

// Two postHere at once (which a call's one outcome never does) neither hang nor lose a message.
func TestPostHereTwoAtOnce(t *testing.T) {
	const each = 2000
	m, inv, d := newTestMailbox()
	var wg sync.WaitGroup
	for _, who := range []string{"a", "b"} {
		wg.Add(1)
		go func() { // owned by the test, which waits for it
			defer wg.Done()
			for i := range each {
				m.postHere(who + "/" + strconv.Itoa(i))
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }() // owned by the test: it ends with the posters
	select {
	case <-done:
	case <-time.After(20 * time.Second): // the posts take milliseconds: this bounds a hang
		t.Fatal("postHere hung")
	}
	for deadline := time.Now().Add(10 * time.Second); len(inv.messages()) < 2*each; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("delivered %d of %d messages: a run was lost", len(inv.messages()), 2*each)
		}
	}
	d.wg.Wait()
	if got := len(inv.messages()); got != 2*each {
		t.Fatalf("delivered %d messages, want %d", got, 2*each)
	}
}
