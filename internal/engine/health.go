package engine

import (
	"context"
	"fmt"
	"time"
)

type (
	// probe: anyone → supervisor (RequestFuture). Replied to with probeAnswered: the tree's
	// root takes and handles messages.
	probe struct{}
	// probeAnswered: supervisor → probe requester.
	probeAnswered struct{}
)

// defaultProbeTimeout bounds a [Engine.Ping] whose context has no deadline.
const defaultProbeTimeout = time.Second

// Ping reports whether the engine's supervisor answers a message before ctx ends (within a
// second when ctx has no deadline): its mailbox is served and the engine's dispatcher runs. A
// supervisor stopped by Shutdown never answers.
func (e *Engine) Ping(ctx context.Context) error {
	timeout := defaultProbeTimeout
	if dl, ok := ctx.Deadline(); ok {
		if timeout = time.Until(dl); timeout <= 0 {
			return ctx.Err()
		}
	}
	if _, err := e.system.Root.RequestFuture(e.supervisor, &probe{}, timeout).Result(); err != nil {
		return fmt.Errorf("actors: supervisor did not answer: %w", err)
	}
	return nil
}

// Saturated reports whether the calls in flight on the engine have reached Config.MaxCalls, so
// that a new call would be refused, with their number and the limit. An engine without a limit
// is never saturated.
func (e *Engine) Saturated() (saturated bool, calls int64, limit int) {
	limit = e.cfg.MaxCalls
	calls = e.calls.Load()
	return limit > 0 && calls >= int64(limit), calls, limit
}
