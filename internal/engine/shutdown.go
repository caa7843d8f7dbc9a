package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

type (
	// awaitConnectionsGone: engine → supervisor (RequestFuture). Reply with connectionsGone
	// once the supervisor has no connection child left.
	awaitConnectionsGone struct{}
	// connectionsGone: supervisor → engine.
	connectionsGone struct{}
)

func (*awaitConnectionsGone) IgnoreDeadLetterLogging() {}
func (*connectionsGone) IgnoreDeadLetterLogging()      {}

// receiveEmbedding handles the supervisor's messages that serve embedding (actor-backed tools,
// a shutdown that leaves the host's actor system clean) and reports whether it consumed the
// message. It runs before the supervisor's own switch.
func (s *supervisorActor) receiveEmbedding(ctx actor.Context) bool {
	switch m := ctx.Message().(type) {
	case *spawnActorTools:
		return s.eng.actorTools.receive(ctx)
	case *spawnSupervised:
		return s.eng.supervised.receive(ctx)
	case *awaitConnectionsGone:
		s.goneWaiters = append(s.goneWaiters, ctx.Sender())
		s.replyIfConnectionsGone(ctx)
		return true
	case *actor.Terminated:
		// protoactor has already removed the child; the supervisor's own case still runs.
		clearVacatedChild(ctx)
		s.eng.supervised.forget(m.Who)
		s.replyIfConnectionsGone(ctx)
	}
	return false
}

// replyIfConnectionsGone answers the waiters once no connection actor is a child any more.
func (s *supervisorActor) replyIfConnectionsGone(ctx actor.Context) {
	if len(s.goneWaiters) == 0 {
		return
	}
	prefix := ctx.Self().Id + "/conn"
	for _, c := range ctx.Children() {
		if strings.HasPrefix(c.Id, prefix) {
			return
		}
	}
	for _, w := range s.goneWaiters {
		ctx.Send(w, &connectionsGone{})
	}
	s.goneWaiters = nil
}

// awaitConnectionsGone waits until the supervisor has seen every connection actor stop. A
// connection's Done closes while the actor stops, a moment before its parent learns of it; a
// supervisor stopped in that moment would send a stop to a child already gone, a dead letter
// in the (host's) actor system's log.
func (e *Engine) awaitConnectionsGone(ctx context.Context) error {
	timeout := defaultActorReplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return ctx.Err()
		}
	}
	if _, err := e.system.Root.RequestFuture(e.supervisor, &awaitConnectionsGone{}, timeout).Result(); err != nil {
		return fmt.Errorf("actors: wait for connections: %w", err)
	}
	return nil
}
