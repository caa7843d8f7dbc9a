package mcptest

import (
	"testing"
	"time"
)

// Await returns the next value sent on ch, failing the test after [Watchdog] with what it
// waited for, or when ch is closed.
func Await[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(Watchdog)
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("waiting for %s: the channel was closed", what)
		}
		return v
	case <-timer.C:
		t.Fatalf("waiting for %s: nothing within %v (the harness's watchdog)", what, Watchdog)
	}
	var zero T
	return zero
}

// Eventually waits until cond holds, for state that changes without an event the test could
// wait on (a count another goroutine keeps: sessions, tasks, a gauge). It checks cond at once,
// then after 1 ms, doubling the interval up to 20 ms so that a long wait does not spin, and
// fails the test with what it waited for after [Watchdog]. Where the code under test announces
// the change (a report, a line, an event), wait for that instead.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Watchdog)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v (the harness's watchdog)", what, Watchdog)
		}
		time.Sleep(pause)
	}
}
