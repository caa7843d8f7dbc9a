package engine

import "github.com/asynkron/protoactor-go/actor"

// The engine's own messages can reach an actor of the engine that has just stopped: a
// cancellation for a call that finished a moment earlier, a timer that fires after its request
// ended, a grace timer after its connection stopped, anything in flight at shutdown. Such a
// message is dropped as a dead letter, which is harmless; marking every message type with
// actor.IgnoreDeadLetterLogging keeps these drops out of the actor system's log, which on an
// embedding host is the host's own log.

func (*inbound) IgnoreDeadLetterLogging()           {}
func (*inputEnded) IgnoreDeadLetterLogging()        {}
func (*graceExpired) IgnoreDeadLetterLogging()      {}
func (*inputFinished) IgnoreDeadLetterLogging()     {}
func (*finishExpired) IgnoreDeadLetterLogging()     {}
func (*cancelCall) IgnoreDeadLetterLogging()        {}
func (*handlerDone) IgnoreDeadLetterLogging()       {}
func (*callTimedOut) IgnoreDeadLetterLogging()      {}
func (*acquireSlot) IgnoreDeadLetterLogging()       {}
func (*releaseSlot) IgnoreDeadLetterLogging()       {}
func (*slotGranted) IgnoreDeadLetterLogging()       {}
func (*report) IgnoreDeadLetterLogging()            {}
func (*callbackDone) IgnoreDeadLetterLogging()      {}
func (*callbackTimedOut) IgnoreDeadLetterLogging()  {}
func (*flush) IgnoreDeadLetterLogging()             {}
func (*flushed) IgnoreDeadLetterLogging()           {}
func (*spawnConnection) IgnoreDeadLetterLogging()   {}
func (*actorCrashed) IgnoreDeadLetterLogging()      {}
func (*spawnActorTools) IgnoreDeadLetterLogging()   {}
func (*actorToolsSpawned) IgnoreDeadLetterLogging() {}

var (
	_ actor.IgnoreDeadLetterLogging = (*inbound)(nil)
	_ actor.IgnoreDeadLetterLogging = (*inputEnded)(nil)
	_ actor.IgnoreDeadLetterLogging = (*graceExpired)(nil)
	_ actor.IgnoreDeadLetterLogging = (*inputFinished)(nil)
	_ actor.IgnoreDeadLetterLogging = (*finishExpired)(nil)
	_ actor.IgnoreDeadLetterLogging = (*cancelCall)(nil)
	_ actor.IgnoreDeadLetterLogging = (*handlerDone)(nil)
	_ actor.IgnoreDeadLetterLogging = (*callTimedOut)(nil)
	_ actor.IgnoreDeadLetterLogging = (*acquireSlot)(nil)
	_ actor.IgnoreDeadLetterLogging = (*releaseSlot)(nil)
	_ actor.IgnoreDeadLetterLogging = (*slotGranted)(nil)
	_ actor.IgnoreDeadLetterLogging = (*report)(nil)
	_ actor.IgnoreDeadLetterLogging = (*callbackDone)(nil)
	_ actor.IgnoreDeadLetterLogging = (*callbackTimedOut)(nil)
	_ actor.IgnoreDeadLetterLogging = (*flush)(nil)
	_ actor.IgnoreDeadLetterLogging = (*flushed)(nil)
	_ actor.IgnoreDeadLetterLogging = (*spawnConnection)(nil)
	_ actor.IgnoreDeadLetterLogging = (*actorCrashed)(nil)
	_ actor.IgnoreDeadLetterLogging = (*spawnActorTools)(nil)
	_ actor.IgnoreDeadLetterLogging = (*actorToolsSpawned)(nil)
)
