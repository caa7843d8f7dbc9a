// Package mcptest is the harness of the module's tests: clients that see exactly the bytes a
// real MCP client sees, over stdio (in process or to a child process), Streamable HTTP (legacy
// sessions and 2026-07-28 requests) and SSE streams, a recorder of OnError reports, and waits
// that end on events under one watchdog.
//
// It imports neither the root package nor streamable, so that the in-package tests of every
// package can use it; a client is given what serves it (a function that serves stdio, a URL).
// Every wait is bounded by [Watchdog], which only turns a hang into a failure: no test asserts
// how fast anything is.
package mcptest

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Watchdog bounds every wait of the harness. It is not a performance assertion: what it waits
// for takes milliseconds, and the bound only ends a stuck test, with a message that says what
// did not happen, on a loaded 2-core machine.
const Watchdog = 20 * time.Second

// DeadLetterThrottle is the goroutine protoactor starts on a dead letter (a timer's message
// that reached an actor just after it stopped) to throttle its logging; it ends by itself after
// one second, so a package's leak check ignores it.
const DeadLetterThrottle = "github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"

// VerifyTestMain runs the package's tests and then fails the run if any goroutine is left
// (goleak), apart from [DeadLetterThrottle] and those opts ignore.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	goleak.VerifyTestMain(m, append([]goleak.Option{goleak.IgnoreTopFunction(DeadLetterThrottle)}, opts...)...)
}
