// Package e2e_test drives real servers end to end, over stdio, Streamable HTTP (both eras),
// HTTP+SSE and in memory, and asserts the exact JSON-RPC exchange, with the clients of
// internal/mcptest; harness_test.go builds the servers.
//
// Most tests run in parallel. Those that must run alone do not call t.Parallel, and so run
// before the parallel ones start: they set the engine's fault hook (a process-wide hook), count
// the process's goroutines or measure its heap, drive loads sized to the race detector's limit
// on live goroutines, or set a process-wide default.
package e2e_test

import (
	"flag"
	"strconv"
	"testing"

	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// idleWorker is a goroutine of the engine's worker pool waiting for work: it belongs to the
// server, not to a session, and ends when the server closes.
const idleWorker = "github.com/toolgrain/toolgrain/internal/engine.(*workerPool).worker"

// testParallel is how many of this package's parallel tests run at once unless -parallel says
// otherwise. Most of their time is spent waiting (a silence window, a timeout, a handler's
// sleep), so more of them than the two cores overlap well: measured with -race on a shared
// 2-core machine, the package took 44-47 s at 2 and 32-38 s at 4.
const testParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(testParallel))
	}
	mcptest.VerifyTestMain(m)
}
