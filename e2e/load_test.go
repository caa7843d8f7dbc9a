package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
)

// TestManyCallsInFlight puts 10,000 sleep calls in flight on one connection (2,000 under the
// race detector, which caps live goroutines), checks that a ping and an echo are still answered
// while they run, cancels every one, and checks that none of them answers.
func TestManyCallsInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	n := 10000
	if raceEnabled {
		n = 2000
	}
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	for i := 0; i < n; i++ {
		c.Send(call(fmt.Sprint(i), "sleep", `{"ms":600000}`))
	}
	c.Expect(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`, `{"jsonrpc":"2.0","id":"ping","result":{}}`)
	c.Expect(call(`"e1"`, "echo", `{"text":"busy"}`), `{"jsonrpc":"2.0","id":"e1","result":{"content":[{"type":"text","text":"busy"}]}}`)
	for i := 0; i < n; i++ {
		c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i))
	}
	c.Expect(call(`"e2"`, "echo", `{"text":"after"}`), `{"jsonrpc":"2.0","id":"e2","result":{"content":[{"type":"text","text":"after"}]}}`)
	deadline := time.After(500 * time.Millisecond)
	for {
		select {
		case line := <-c.Lines():
			if strings.Contains(line, `"result"`) || strings.Contains(line, `"error"`) {
				t.Fatalf("late response for a cancelled call: %s", line)
			}
		case <-deadline:
			return
		}
	}
}
