package httpserve

import (
	"net/http"
	"strconv"
	"testing"
)

// TestStreamBufferBound: a stream keeps its last maxStreamEvents events; resuming from before
// them is refused with 410, and a reader that fell behind them stops.
func TestStreamBufferBound(t *testing.T) {
	st := newPostStream()
	gen, _ := st.attach()
	const sent = maxStreamEvents + 10
	for range sent {
		st.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/message"}`))
	}
	if rd := st.read(gen, 0); !rd.lost {
		t.Errorf("read from 0 after %d events: not lost", sent)
	}
	if rd := st.read(gen, 10); rd.lost || len(rd.frames) != maxStreamEvents {
		t.Errorf("read from 10: lost %v, %d frames, want %d", rd.lost, len(rd.frames), maxStreamEvents)
	}
	for _, tt := range []struct {
		cursor uint64
		status int
	}{{0, http.StatusGone}, {9, http.StatusGone}, {10, 0}, {sent, 0}, {sent + 1, http.StatusBadRequest}} {
		if status, _ := st.resumable(tt.cursor); status != tt.status {
			t.Errorf("resumable(%d) = %d, want %d", tt.cursor, status, tt.status)
		}
	}
	// A newer reader supersedes the older one.
	gen2, _ := st.attach()
	if rd := st.read(gen, 10); !rd.superseded {
		t.Error("the first reader was not superseded")
	}
	st.detach(gen2)
}

// answered makes a registered stream whose POST reader is attached and whose answer is queued,
// as when a call ends before its POST's goroutine wakes up to write the answer.
func answered(t testing.TB, ss *streams) (*postStream, uint64) {
	t.Helper()
	st := newPostStream()
	gen, _ := st.attach()
	ss.register(st)
	st.Send([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	st.Close()
	return st, gen
}

// TestAnsweredStreamKeptForItsReaderRace pins a lost answer: the bound on kept streams dropped
// the oldest complete stream even while its POST, already attached, had not yet written its
// answer, and that POST's stream then ended without it. A stream a reader holds is never
// dropped, however many there are.
func TestAnsweredStreamKeptForItsReaderRace(t *testing.T) {
	ss := newStreams()
	type held struct {
		st  *postStream
		gen uint64
	}
	all := make([]held, 4*maxKeptStreams)
	for i := range all {
		all[i].st, all[i].gen = answered(t, ss)
	}
	for _, h := range all {
		if rd := h.st.read(h.gen, 0); rd.lost || len(rd.frames) != 1 || !rd.closed {
			t.Fatalf("stream %d: lost %v, %d frames, closed %v: its reader cannot deliver its answer", h.st.num, rd.lost, len(rd.frames), rd.closed)
		}
	}
}

// TestKeptStreamsBound: a session keeps maxKeptStreams complete streams that no reader holds;
// past that it drops the one that became idle first, whatever its number. A reader that
// attaches takes its stream out of the reckoning; the session's end drops the idle streams and
// leaves the held ones to their readers.
func TestKeptStreamsBound(t *testing.T) {
	ss := newStreams()
	sts := make([]*postStream, maxKeptStreams+2)
	gens := make([]uint64, len(sts))
	for i := range sts {
		sts[i], gens[i] = answered(t, ss)
	}
	// Their readers leave in reverse order: the last stream is the first to become idle.
	for i := len(sts) - 1; i >= 1; i-- {
		sts[i].detach(gens[i])
	}
	if got, _, status, msg := ss.lookup(sts[len(sts)-1].eventID(0)); got != nil || status != http.StatusGone {
		t.Errorf("the stream idle longest: %d %s, want 410", status, msg)
	}
	for _, st := range sts[:len(sts)-1] {
		if got, _, status, msg := ss.lookup(st.eventID(0)); got != st {
			t.Errorf("stream %d: %d %s, want it kept", st.num, status, msg)
		}
	}
	// A resuming reader holds sts[1] and sts[0] becomes idle: still at the bound. One more idle
	// stream drops the one idle longest, not the lowest-numbered ones.
	gen1, _ := sts[1].attach()
	sts[0].detach(gens[0])
	extra, gen := answered(t, ss)
	extra.detach(gen)
	if _, _, status, _ := ss.lookup(sts[len(sts)-2].eventID(0)); status != http.StatusGone {
		t.Errorf("the next stream idle longest: status %d, want 410", status)
	}
	for _, st := range []*postStream{sts[0], sts[1], extra} {
		if got, _, status, msg := ss.lookup(st.eventID(0)); got != st {
			t.Errorf("stream %d: %d %s, want it kept", st.num, status, msg)
		}
	}
	ss.end()
	if _, _, status, _ := ss.lookup(sts[2].eventID(0)); status != http.StatusGone {
		t.Errorf("after the session's end: status %d, want 410", status)
	}
	if rd := sts[1].read(gen1, 0); rd.lost || len(rd.frames) != 1 {
		t.Errorf("after the session's end, the reader of stream %d lost its answer", sts[1].num)
	}
	if rd := sts[2].read(0, 0); !rd.lost {
		t.Errorf("after the session's end, idle stream %d still holds its frames", sts[2].num)
	}
}

// BenchmarkKeptStreams: a session with many calls in flight on SSE streams (held by their
// POSTs) and a churn of streams that end with no reader. Finding which stream the bound drops
// costs the same however many streams are in flight.
func BenchmarkKeptStreams(b *testing.B) {
	for _, inFlight := range []int{100, 10000} {
		b.Run(strconv.Itoa(inFlight), func(b *testing.B) {
			ss := newStreams()
			for range inFlight {
				st := newPostStream()
				st.attach()
				ss.register(st)
			}
			frame := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
			b.ReportAllocs()
			for b.Loop() {
				st := newPostStream()
				gen, _ := st.attach()
				ss.register(st)
				st.Send(frame)
				st.Close()
				st.detach(gen)
			}
		})
	}
}

// TestDisconnectBeforeFirstReader: a handler may ask to close its stream's connection before the
// POST's goroutine has attached as reader; that reader must still see the request, and a later
// (resuming) reader must not.
func TestDisconnectBeforeFirstReader(t *testing.T) {
	st := newPostStream()
	if !st.Disconnect() {
		t.Fatal("Disconnect refused on an open stream")
	}
	gen, _ := st.attach()
	if !st.takeDisconnect(gen) {
		t.Error("the first reader lost the disconnect asked before it attached")
	}
	st.Disconnect()
	st.detach(gen)
	gen2, _ := st.attach()
	if st.takeDisconnect(gen2) {
		t.Error("a resuming reader inherited an earlier connection's disconnect")
	}
	st.detach(gen2)
}
