package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/cancel"
)

// BenchmarkLogToken measures the rate limiter one log message of a call passes: the
// allowed path (refilled at once) and the refused path (an empty bucket).
func BenchmarkLogToken(b *testing.B) {
	b.Run("allowed", func(b *testing.B) {
		p := newCallPeer(nil, nil, nil)
		b.ReportAllocs()
		for b.Loop() {
			if !p.takeLogToken() {
				p = newCallPeer(nil, nil, nil)
			}
		}
	})
	b.Run("refused", func(b *testing.B) {
		p := newCallPeer(nil, nil, nil)
		for p.takeLogToken() {
		}
		b.ReportAllocs()
		for b.Loop() {
			p.takeLogToken()
		}
	})
}

type discardStream struct{}

func (discardStream) Send([]byte) {}
func (discardStream) Close()      {}

// BenchmarkProgressLimit measures the rate limit of progress notifications when every report
// is over the limit (dropped before it is encoded).
func BenchmarkProgressLimit(b *testing.B) {
	call := cancel.New(b.Context())
	send := progressSender(discardStream{}, call, json.RawMessage(`1`), time.Hour, false)
	total := 1e9
	for i := range progressBurst {
		_ = send(float64(i), &total, "")
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = send(1, &total, "")
	}
}

// BenchmarkProgressSend measures one progress notification that goes out: the limiter, the
// encoding and the send under the call's lock.
func BenchmarkProgressSend(b *testing.B) {
	call := cancel.New(b.Context())
	send := progressSender(discardStream{}, call, json.RawMessage(`1`), time.Nanosecond, false)
	total := 1e9
	b.ReportAllocs()
	for b.Loop() {
		_ = send(1, &total, "")
	}
}

func TestLogTokensBurstThenRefused(t *testing.T) {
	p := newCallPeer(nil, nil, nil)
	for i := range logBurst {
		if !p.takeLogToken() {
			t.Fatalf("message %d of the burst refused", i+1)
		}
	}
	if p.takeLogToken() {
		t.Fatal("message past the burst allowed at once")
	}
}
