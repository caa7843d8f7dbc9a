package engine_test

import (
	"testing"

	"go.uber.org/goleak"
)

// protoactor starts this goroutine on a dead letter to throttle its logging; it ends by itself
// after one second.
const deadLetterThrottle = "github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(deadLetterThrottle)) }
