package tools_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgrain/toolgrain/tools"
)

// progressRecorder is a ProgressFunc that records what it was asked to send.
type progressRecorder struct {
	mu   sync.Mutex
	sent []float64
	err  error
}

func (r *progressRecorder) send(progress float64, _ *float64, _ string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.sent = append(r.sent, progress)
	return nil
}

func (r *progressRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent)
}

func TestReportProgressWithoutSink(t *testing.T) {
	if err := tools.ReportProgress(context.Background(), 1, nil, "x"); err != nil {
		t.Errorf("got %v, want nil when the client did not ask for progress", err)
	}
	if err := tools.ReportProgress(context.Background(), 0, nil, ""); err != nil {
		t.Errorf("got %v, want nil", err)
	}
	if ctx := context.Background(); tools.WithProgress(ctx, nil) != ctx {
		t.Error("WithProgress with a nil func must return ctx unchanged")
	}
	tools.StopProgress(context.Background())
}

func TestReportProgress(t *testing.T) {
	half := 0.5
	inf := math.Inf(1)
	tests := []struct {
		name      string
		progress  float64
		total     *float64
		wantErr   error
		wantCount int // notifications sent so far
	}{
		{"first", 1, nil, nil, 1},
		{"increase", 1.5, &half, nil, 2},
		{"same", 1.5, nil, tools.ErrInvalidProgress, 2},
		{"decrease", 1, nil, tools.ErrInvalidProgress, 2},
		{"nan", math.NaN(), nil, tools.ErrInvalidProgress, 2},
		{"infinite", math.Inf(1), nil, tools.ErrInvalidProgress, 2},
		{"infinite_total", 3, &inf, tools.ErrInvalidProgress, 2},
		{"after_rejections", 2, nil, nil, 3},
	}
	rec := &progressRecorder{}
	ctx := tools.WithProgress(context.Background(), rec.send)
	for _, tt := range tests {
		err := tools.ReportProgress(ctx, tt.progress, tt.total, tt.name)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.wantErr)
		}
		if got := rec.count(); got != tt.wantCount {
			t.Errorf("%s: %d notifications sent, want %d", tt.name, got, tt.wantCount)
		}
	}
}

func TestReportProgressAfterCall(t *testing.T) {
	tests := []struct {
		name string
		end  func(ctx context.Context, cancel context.CancelFunc)
	}{
		{"stopped", func(ctx context.Context, _ context.CancelFunc) { tools.StopProgress(ctx) }},
		{"cancelled", func(_ context.Context, cancel context.CancelFunc) { cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			rec := &progressRecorder{}
			ctx := tools.WithProgress(parent, rec.send)
			if err := tools.ReportProgress(ctx, 1, nil, ""); err != nil {
				t.Fatal(err)
			}
			tt.end(ctx, cancel)
			if err := tools.ReportProgress(ctx, 2, nil, ""); !errors.Is(err, tools.ErrCallFinished) {
				t.Errorf("got %v, want ErrCallFinished", err)
			}
			if rec.count() != 1 {
				t.Errorf("%d notifications sent, want 1", rec.count())
			}
		})
	}
}

// A handler's own shorter deadline does not end the call's progress.
func TestReportProgressHandlerDeadline(t *testing.T) {
	rec := &progressRecorder{}
	ctx := tools.WithProgress(context.Background(), rec.send)
	inner, cancel := context.WithCancel(ctx)
	cancel()
	if err := tools.ReportProgress(inner, 1, nil, ""); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

func TestReportProgressSinkError(t *testing.T) {
	errClosed := errors.New("stream closed")
	rec := &progressRecorder{err: errClosed}
	ctx := tools.WithProgress(context.Background(), rec.send)
	if err := tools.ReportProgress(ctx, 1, nil, ""); err != errClosed {
		t.Errorf("got %v, want the sink's error", err)
	}
	rec.mu.Lock()
	rec.err = nil
	rec.mu.Unlock()
	// The failed report did not count: the same progress may be reported again.
	if err := tools.ReportProgress(ctx, 1, nil, ""); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

// Reports from several goroutines of one call reach the sink strictly increasing.
func TestReportProgressConcurrent(t *testing.T) {
	rec := &progressRecorder{}
	ctx := tools.WithProgress(context.Background(), rec.send)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_ = tools.ReportProgress(ctx, float64(next.Add(1)), nil, "")
			}
		})
	}
	wg.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i := 1; i < len(rec.sent); i++ {
		if rec.sent[i] <= rec.sent[i-1] {
			t.Fatalf("notification %d (%v) does not increase over %v", i, rec.sent[i], rec.sent[i-1])
		}
	}
	if len(rec.sent) == 0 {
		t.Error("nothing was sent")
	}
}

func TestProgressRequested(t *testing.T) {
	ctx := context.Background()
	if tools.ProgressRequested(ctx) {
		t.Error("ProgressRequested without a sink = true")
	}
	fn := func(float64, *float64, string) error { return nil }
	if !tools.ProgressRequested(tools.WithProgress(ctx, fn)) {
		t.Error("ProgressRequested with a sink = false")
	}
}
