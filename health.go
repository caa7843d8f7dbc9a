package toolgrain

import (
	"context"
	"errors"
	"fmt"
)

// ErrSaturated is wrapped by the error of [Server.Ready] while the calls in flight on the
// server have reached [Config].Limits.MaxCalls: a new call would be refused with "Server busy".
var ErrSaturated = errors.New("toolgrain: at the limit of calls in flight")

// Live reports whether the server is alive, for a liveness probe: nil when its actor tree
// answers a message before ctx ends (within a second when ctx has no deadline), which shows
// that its mailboxes are served and its dispatcher runs. A server that is shutting down is
// still alive; once its actors have stopped, Live returns [ErrServerClosed]. It never waits
// on calls in flight, whatever their number.
func (s *Server) Live(ctx context.Context) error {
	err := s.eng.Ping(ctx)
	if err != nil && s.eng.Closed() {
		return ErrServerClosed
	}
	return err
}

// Ready reports whether the server should be sent new work, for a readiness probe: nil while
// it serves; [ErrServerClosed] once Shutdown or Close has begun; an error wrapping
// [ErrSaturated] while the calls in flight on the server are at [Config].Limits.MaxCalls. Limits of
// one connection do not make the server unready. It only reads counters: it never blocks and
// is cheap enough to call on every probe.
func (s *Server) Ready() error {
	if s.eng.Closed() {
		return ErrServerClosed
	}
	if full, calls, limit := s.eng.Saturated(); full {
		return fmt.Errorf("%w: %d calls in flight (limit %d)", ErrSaturated, calls, limit)
	}
	return nil
}
