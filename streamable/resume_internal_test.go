package streamable

import (
	"net/http"
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

// TestKeptStreamsBound: past maxKeptStreams a session drops its oldest complete stream.
func TestKeptStreamsBound(t *testing.T) {
	ss := newStreams()
	all := make([]*postStream, maxKeptStreams+1)
	for i := range all {
		all[i] = newPostStream()
		if i < 2 {
			all[i].Close()
		}
		ss.register(all[i])
	}
	if _, _, status, _ := ss.lookup(all[0].eventID(0)); status != http.StatusGone {
		t.Errorf("oldest complete stream: status %d, want 410", status)
	}
	for _, st := range all[1:] {
		if got, _, status, msg := ss.lookup(st.eventID(0)); got != st {
			t.Errorf("stream %d: %d %s", st.num, status, msg)
		}
	}
	ss.end()
	if _, _, status, _ := ss.lookup(all[1].eventID(0)); status != http.StatusGone {
		t.Errorf("after the session's end: status %d, want 410", status)
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
