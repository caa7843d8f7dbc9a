package engine

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"
)

type (
	// startTree: engine → supervisor (RequestFuture). Spawn the diagnostics and tool actors;
	// the reply is *treeStarted.
	startTree struct{}
	// treeStarted: supervisor → engine.
	treeStarted struct {
		diag  *actor.PID
		tools map[string]*actor.PID
	}
)

// supervisorActor is the root of the engine's tree. It spawns the long-lived children and
// decides what a child's failure does: diagnostics and tool actors restart (their state lives
// outside the actor instance, so nothing queued is lost); a failed connection actor is stopped,
// which ends the stdio stream or HTTP session it served, and the failure is reported with no
// details.
type supervisorActor struct {
	eng   *Engine
	diag  *actor.PID
	tools map[string]*actor.PID
	tasks *actor.PID // the task registry, when tasks are enabled

	goneWaiters []*actor.PID // awaitConnectionsGone requesters (shutdown.go)
}

var _ actor.SupervisorStrategy = (*supervisorActor)(nil)

func (s *supervisorActor) Receive(ctx actor.Context) {
	if s.receiveEmbedding(ctx) {
		return
	}
	switch msg := ctx.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting, *actor.Terminated:
	case *startTree:
		if s.diag == nil {
			s.spawnTree(ctx)
		}
		ctx.Respond(&treeStarted{diag: s.diag, tools: s.tools})
	case *spawnConnection:
		ctx.Respond(ctx.SpawnPrefix(msg.props, "conn"))
	case *probe:
		ctx.Respond(&probeAnswered{})
	case *spawnTaskRegistry:
		s.tasks = ctx.SpawnPrefix(msg.props, "tasks")
		ctx.Respond(s.tasks)
	case *spawnTool:
		gate := newGate(msg.limit, &s.eng.slotWaiters)
		props := actor.PropsFromProducer(func() actor.Actor { return &toolActor{gate: gate} }, actor.WithDispatcher(s.eng.dispatcher))
		pid := ctx.SpawnPrefix(props, "tool")
		s.tools["\x00"+pid.Id] = pid // run-time tools are keyed apart from configured names
		ctx.Respond(pid)
	default:
		s.eng.log.Debug("supervisor: unexpected message", zap.String("type", fmt.Sprintf("%T", msg)))
	}
}

func (s *supervisorActor) spawnTree(ctx actor.Context) {
	st := s.eng.diagState
	diagProps := actor.PropsFromProducer(func() actor.Actor { return &diagnosticsActor{st: st} }, actor.WithDispatcher(s.eng.dispatcher))
	s.diag = ctx.SpawnPrefix(diagProps, "diagnostics")
	s.tools = make(map[string]*actor.PID, s.eng.cfg.Tools.Len())
	for _, t := range s.eng.cfg.Tools.List() {
		if t.Def().MaxConcurrency <= 0 {
			continue // no admission gate needed: calls run without asking the tool actor
		}
		gate := newGate(t.Def().MaxConcurrency, &s.eng.slotWaiters)
		props := actor.PropsFromProducer(func() actor.Actor { return &toolActor{gate: gate} }, actor.WithDispatcher(s.eng.dispatcher))
		s.tools[t.Name()] = ctx.SpawnPrefix(props, "tool")
	}
}

// HandleFailure implements [actor.SupervisorStrategy] for the supervisor's children.
func (s *supervisorActor) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, message interface{}) {
	if s.eng.actorTools.handleFailure(system, sup, child, reason, message, s.eng.log) {
		return
	}
	if s.eng.supervised.handleFailure(sup, child, reason, s.eng.log) {
		return
	}
	if child.Equal(s.diag) || s.isTool(child) || child.Equal(s.tasks) {
		s.eng.log.Error("engine actor panicked; restarting it", zap.String("actor", child.Id), zap.Any("reason", reason))
		sup.RestartChildren(child)
		return
	}
	s.eng.log.Error("connection actor panicked; closing the connection", zap.String("actor", child.Id), zap.Any("reason", reason))
	s.eng.Report(fmt.Errorf("internal error: connection actor panicked: %v", reason))
	sup.StopChildren(child)
}

func (s *supervisorActor) isTool(pid *actor.PID) bool {
	for _, p := range s.tools {
		if p.Equal(pid) {
			return true
		}
	}
	return false
}
