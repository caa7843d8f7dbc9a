// Package e2e_test drives real servers end to end, over stdio, Streamable HTTP (both eras),
// HTTP+SSE and in memory, and asserts the exact JSON-RPC exchange, with the clients of
// internal/mcptest; harness_test.go builds the servers.
package e2e_test

import (
	"testing"

	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// idleWorker is a goroutine of the engine's worker pool waiting for work: it belongs to the
// server, not to a session, and ends when the server closes.
const idleWorker = "github.com/toolgrain/toolgrain/internal/engine.(*workerPool).worker"

func TestMain(m *testing.M) { mcptest.VerifyTestMain(m) }
