package toolgrain_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The root's tests are its Examples, which godoc shows; the end-to-end tests are in package
// e2e and the documentation checks in internal/doccheck.

// protoactor starts this goroutine on a dead letter (a timer's message that reached a request
// actor just after it stopped) to throttle its logging; it ends by itself after one second.
const deadLetterThrottle = "github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(deadLetterThrottle)) }
