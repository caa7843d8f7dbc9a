package cancel_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgrain/toolgrain/cancel"
)

// op is one step applied to a call in the transition table.
type op int

const (
	opRespond op = iota
	opCancel
	opNotify
)

func apply(c *cancel.Call, o op, sent *int) bool {
	send := func() { *sent++ }
	switch o {
	case opRespond:
		return c.Respond(send)
	case opCancel:
		return c.Cancel(cancel.ErrCancelledByClient)
	default:
		return c.Notify(send)
	}
}

func TestTransitions(t *testing.T) {
	tests := []struct {
		name      string
		give      []op
		wantOK    []bool
		wantState cancel.State
		wantSent  int
	}{
		{"respond", []op{opRespond}, []bool{true}, cancel.Responded, 1},
		{"cancel", []op{opCancel}, []bool{true}, cancel.Silenced, 0},
		{"respond twice", []op{opRespond, opRespond}, []bool{true, false}, cancel.Responded, 1},
		{"cancel after respond is ignored", []op{opRespond, opCancel}, []bool{true, false}, cancel.Responded, 1},
		{"respond after cancel is suppressed", []op{opCancel, opRespond}, []bool{true, false}, cancel.Silenced, 0},
		{"duplicate cancel", []op{opCancel, opCancel}, []bool{true, false}, cancel.Silenced, 0},
		{"notify then respond", []op{opNotify, opNotify, opRespond}, []bool{true, true, true}, cancel.Responded, 3},
		{"notify after respond", []op{opRespond, opNotify}, []bool{true, false}, cancel.Responded, 1},
		{"notify after cancel", []op{opCancel, opNotify}, []bool{true, false}, cancel.Silenced, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cancel.New(context.Background())
			defer c.Release()
			sent := 0
			for i, o := range tt.give {
				if got := apply(c, o, &sent); got != tt.wantOK[i] {
					t.Errorf("step %d: got %v, want %v", i, got, tt.wantOK[i])
				}
			}
			if got := c.State(); got != tt.wantState {
				t.Errorf("state = %v, want %v", got, tt.wantState)
			}
			if sent != tt.wantSent {
				t.Errorf("sent %d frames, want %d", sent, tt.wantSent)
			}
		})
	}
}

func TestContextCause(t *testing.T) {
	c := cancel.New(context.Background())
	if c.Context().Err() != nil {
		t.Fatal("context of a running call is done")
	}
	c.Cancel(cancel.ErrConnectionClosed)
	<-c.Context().Done()
	if got := context.Cause(c.Context()); !errors.Is(got, cancel.ErrConnectionClosed) {
		t.Errorf("cause = %v, want %v", got, cancel.ErrConnectionClosed)
	}
	if !errors.Is(c.Cause(), context.Canceled) {
		t.Errorf("cause %v does not unwrap to context.Canceled", c.Cause())
	}
	if !c.Silenced() {
		t.Error("Silenced() = false after Cancel")
	}

	r := cancel.New(context.Background())
	r.Respond(func() {})
	if got := context.Cause(r.Context()); !errors.Is(got, cancel.ErrResponded) {
		t.Errorf("cause after respond = %v, want %v", got, cancel.ErrResponded)
	}
}

func TestParentCancelDoesNotSilence(t *testing.T) {
	parent, stop := context.WithCancel(context.Background())
	c := cancel.New(parent)
	stop()
	<-c.Context().Done()
	if c.Silenced() {
		t.Fatal("parent cancellation silenced the call")
	}
	if !c.Respond(func() {}) {
		t.Fatal("a call whose parent context ended could not respond")
	}
}

// TestRespondCancelRace races a response, notifications and a cancellation many times: each call
// ends either answered or silenced, never both, and nothing is sent after a successful cancel.
func TestRespondCancelRace(t *testing.T) {
	for i := 0; i < 2000; i++ {
		c := cancel.New(context.Background())
		var (
			mu         sync.Mutex
			frames     []string
			cancelled  atomic.Bool
			afterSlnce atomic.Int32
			wg         sync.WaitGroup
		)
		send := func(s string) func() {
			return func() {
				if cancelled.Load() {
					afterSlnce.Add(1)
				}
				mu.Lock()
				frames = append(frames, s)
				mu.Unlock()
			}
		}
		wg.Add(3)
		go func() { defer wg.Done(); c.Respond(send("response")) }()
		go func() { defer wg.Done(); c.Notify(send("progress")) }()
		go func() {
			defer wg.Done()
			if c.Cancel(cancel.ErrCancelledByClient) {
				cancelled.Store(true)
			}
		}()
		wg.Wait()
		if n := afterSlnce.Load(); n != 0 {
			t.Fatalf("run %d: %d frames sent after the cancellation took effect", i, n)
		}
		responses := 0
		for _, f := range frames {
			if f == "response" {
				responses++
			}
		}
		switch c.State() {
		case cancel.Responded:
			if responses != 1 || cancelled.Load() {
				t.Fatalf("run %d: responded with %d responses, cancelled=%v", i, responses, cancelled.Load())
			}
		case cancel.Silenced:
			if responses != 0 {
				t.Fatalf("run %d: silenced call sent a response", i)
			}
		default:
			t.Fatalf("run %d: call still running", i)
		}
		c.Release()
	}
}
