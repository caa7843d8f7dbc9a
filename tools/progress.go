package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
)

// Errors of [ReportProgress].
var (
	// ErrInvalidProgress is returned when progress does not increase over the previous report
	// of the call, or when progress or total is not a finite number.
	ErrInvalidProgress = errors.New("tools: invalid progress")

	// ErrCallFinished is returned when progress is reported after the call is over: it
	// completed, was cancelled, or [StopProgress] was called.
	ErrCallFinished = errors.New("tools: call is over")
)

// ProgressFunc sends one progress notification for the current call. The engine provides it
// with [WithProgress]; total is nil when unknown and message may be empty. It must not block for
// long and must not call [ReportProgress].
type ProgressFunc func(progress float64, total *float64, message string) error

type progressKey struct{}

// progressSink is the per-call progress state: it serialises the reports of a call, so that
// notifications leave in the order they were checked, and enforces the MCP rules (progress
// increases; nothing after the call is over).
type progressSink struct {
	done context.Context // the call's context: done when the call is over
	fn   ProgressFunc

	mu      sync.Mutex
	last    float64
	sent    bool
	stopped bool
}

// WithProgress returns a context that routes [ReportProgress] to fn for the call ctx belongs to.
// The engine calls it once per call, only when the client asked for progress (the call's
// params._meta has a progressToken); fn is then called at most once per accepted report, never
// concurrently with itself, and never after ctx is done or [StopProgress] returned. A nil fn
// returns ctx unchanged.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, &progressSink{done: ctx, fn: fn})
}

// StopProgress ends progress reporting for the call ctx belongs to: once it returns, the
// [ProgressFunc] given to [WithProgress] is not called again and [ReportProgress] returns
// [ErrCallFinished]. The engine calls it before it sends the call's response, so no progress
// notification can follow the response. It does nothing when ctx has no progress sink.
func StopProgress(ctx context.Context) {
	s, _ := ctx.Value(progressKey{}).(*progressSink)
	if s == nil {
		return
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

// ProgressRequested reports whether the client asked for progress on the call ctx belongs to
// (its params._meta has a progressToken), so that a handler can skip the work of preparing
// reports nobody will receive.
func ProgressRequested(ctx context.Context) bool {
	s, _ := ctx.Value(progressKey{}).(*progressSink)
	return s != nil
}

// ReportProgress sends a progress notification for the current call when the client asked for
// progress (the call has a progressToken); otherwise it does nothing and returns nil, so
// handlers may call it unconditionally.
//
// progress must increase with every report of a call, and progress and total (when not nil)
// must be finite; otherwise ReportProgress sends nothing and returns an error wrapping
// [ErrInvalidProgress]. After the call is over — completed or cancelled — it sends nothing and
// returns [ErrCallFinished]. Any other error comes from the engine's [ProgressFunc]. It is safe
// for concurrent use by the goroutines of one call.
func ReportProgress(ctx context.Context, progress float64, total *float64, message string) error {
	s, _ := ctx.Value(progressKey{}).(*progressSink)
	if s == nil {
		return nil
	}
	if math.IsNaN(progress) || math.IsInf(progress, 0) {
		return fmt.Errorf("%w: progress %v is not finite", ErrInvalidProgress, progress)
	}
	if total != nil && (math.IsNaN(*total) || math.IsInf(*total, 0)) {
		return fmt.Errorf("%w: total %v is not finite", ErrInvalidProgress, *total)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.done.Err() != nil {
		return ErrCallFinished
	}
	if s.sent && progress <= s.last {
		return fmt.Errorf("%w: progress %v does not increase over %v", ErrInvalidProgress, progress, s.last)
	}
	if err := s.fn(progress, total, message); err != nil {
		return err
	}
	s.last, s.sent = progress, true
	return nil
}
