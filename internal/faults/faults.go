// Package faults lets tests make the engine's own code fail at chosen points, to check that a
// bug in the engine (not in a tool) is contained. Production code never sets a hook; checking
// one costs an atomic load.
package faults

import "sync/atomic"

// Points where the engine calls [Check].
const (
	RequestStart  = "request.start"  // a request actor starts, before validation
	RequestAnswer = "request.answer" // a request actor got its handler's outcome, before answering
)

var hook atomic.Pointer[func(point, tool string)]

// Set installs fn, which is called at every point with the name of the tool concerned and may
// panic, and returns a function that removes it. Tests that use it must not run in parallel
// with tests that do not expect it.
func Set(fn func(point, tool string)) (restore func()) {
	hook.Store(&fn)
	return func() { hook.Store(nil) }
}

// Check calls the hook, if one is set.
func Check(point, tool string) {
	if fn := hook.Load(); fn != nil {
		(*fn)(point, tool)
	}
}
