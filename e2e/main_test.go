package e2e_test

import (
	"testing"

	"go.uber.org/goleak"
)

// protoactor starts this goroutine on a dead letter (a timer's message that reached a request
// actor just after it stopped) to throttle its logging; it ends by itself after one second.
const deadLetterThrottle = "github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"

// idleWorker is a goroutine of the engine's worker pool waiting for work: it belongs to the
// server, not to a session, and ends when the server closes.
const idleWorker = "github.com/toolgrain/toolgrain/internal/engine.(*workerPool).worker"

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(deadLetterThrottle)) }
