package upstream

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Frames written from many goroutines at once reach the pipe whole, one per line, each
// goroutine's in order, although the pipe fills; no caller waits (the pipe's reader starts only
// once every caller has returned, after queuing far more than the pipe holds: a caller that
// waited would hang the test); after close every queued frame is written, done is closed and
// the writer's goroutine has ended (the package's leak check).
func TestLineWriterFramesWhole(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	lw := newLineWriter(w, &wg)

	const writers, each = 8, 400
	pad := strings.Repeat("x", 300) // 8 × 400 frames of about 330 B: far more than a pipe holds
	var callers sync.WaitGroup
	start := time.Now()
	for g := range writers {
		callers.Add(1)
		go func() { // owned by the test, which waits for it
			defer callers.Done()
			for i := range each {
				lw.write(&Outgoing{Frame: fmt.Appendf(nil, `{"g":%d,"i":%d,"pad":%q}`, g, i, pad)})
			}
		}()
	}
	callers.Wait()
	queued := time.Since(start)

	got := map[int]int{}
	lines := 0
	read := make(chan error, 1)
	go func() { // owned by the test: it ends at the pipe's end, which close and the writer bring
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 4096), 4096)
		for sc.Scan() {
			var g, i int
			var p string
			if _, err := fmt.Sscanf(sc.Text(), `{"g":%d,"i":%d,"pad":%q}`, &g, &i, &p); err != nil || p != pad {
				read <- fmt.Errorf("line %d %.60q: not a whole frame (%v)", lines, sc.Text(), err)
				return
			}
			if i != got[g] {
				read <- fmt.Errorf("writer %d: frame %d after %d", g, i, got[g]-1)
				return
			}
			got[g]++
			lines++
			if lines%500 == 0 {
				time.Sleep(time.Millisecond) // a slow reader: the pipe stays full
			}
		}
		read <- sc.Err()
	}()
	lw.close()
	select {
	case <-lw.done:
	case <-time.After(30 * time.Second): // the writes take milliseconds: this bounds a hang
		t.Fatal("the writer did not finish after close")
	}
	wg.Wait()
	_ = w.Close()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if lines != writers*each {
		t.Fatalf("%d lines, want %d", lines, writers*each)
	}
	t.Logf("%d frames queued in %v by callers that never waited", lines, queued)
}

// A write that fails ends the writer: later frames are dropped, done closes at close.
func TestLineWriterFailure(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Close() // every write fails (EPIPE)
	defer w.Close()
	var wg sync.WaitGroup
	lw := newLineWriter(w, &wg)
	lw.write(&Outgoing{Frame: []byte(`{"a":1}`)})
	wg.Wait()
	lw.mu.Lock()
	failed := lw.failed
	lw.mu.Unlock()
	if !failed {
		t.Fatal("the writer did not fail on a closed pipe")
	}
	lw.write(&Outgoing{Frame: []byte(`{"a":2}`)})
	lw.mu.Lock()
	pending := len(lw.pending)
	lw.mu.Unlock()
	if pending != 0 {
		t.Fatalf("%d bytes queued after the failure", pending)
	}
	lw.close()
	select {
	case <-lw.done:
	case <-time.After(10 * time.Second):
		t.Fatal("done not closed")
	}
}
