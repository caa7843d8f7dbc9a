package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// heapAloneEnv, set, has TestClientDataLeavesWithItsSessions measure in this process.
const heapAloneEnv = "TOOLGRAIN_TEST_HEAP_ALONE"

// initializeDeclaring is an initialize whose capabilities carry an experimental member of
// about size bytes, distinct for each tag.
func initializeDeclaring(tag string, size int) string {
	pad := strings.Repeat("x", max(size-len(tag), 0))
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{"experimental":{"` + tag + `":"` + pad + `"}},"clientInfo":{"name":"c-` + tag + `","version":"1"}}}`
}

// TestClientDeclarationLimit: what an initialize declares (capabilities and clientInfo), which
// its session keeps for its life, is bounded by Config.Limits.MaxClientDeclaration (64 KiB by
// default): over it, the initialize is refused with -32602 naming the limit, and no session is
// made.
func TestClientDeclarationLimit(t *testing.T) {
	t.Parallel()
	over := `{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Invalid params: capabilities and clientInfo take %d bytes, more than the limit of %d","data":{"limit":%d}}}`
	body := initializeDeclaring("a", 70_000)
	// The size counted: the capabilities as sent, the name and the version.
	size := len(`{"experimental":{"a":"`+strings.Repeat("x", 69_999)+`"}}`) + len("c-a") + len("1")

	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Expect(body, fmt.Sprintf(over, size, 65536, 65536))
	c.Expect(initializeDeclaring("b", 60_000), initResult)

	small := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxClientDeclaration: 100}})
	small.Expect(initializeDeclaring("c", 200), fmt.Sprintf(over, len(`{"experimental":{"c":"`+strings.Repeat("x", 199)+`"}}`)+len("c-c")+1, 100, 100))

	// Icons count too.
	icons := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},` +
		`"clientInfo":{"name":"i","version":"1","icons":[{"src":"data:image/png;base64,` + strings.Repeat("A", 200) + `","sizes":["48x48"]}]}}}`
	small.Expect(icons, fmt.Sprintf(over, len(`{}`)+len("i")+len("1")+len("data:image/png;base64,")+200+len("48x48"), 100, 100))

	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	s := e.Session()
	r := s.Post(body)
	assertReply(t, "initialize over the limit", r, http.StatusOK, fmt.Sprintf(over, size, 65536, 65536))
	if r.Header.Get("Mcp-Session-Id") != "" || e.srv.Sessions() != 0 {
		t.Errorf("a session was made: %q, %d", r.Header.Get("Mcp-Session-Id"), e.srv.Sessions())
	}
}

// TestClientDataLeavesWithItsSessions: what clients declared does not stay in memory once their
// sessions end. 128 sessions each declare capabilities of their own, half of them about 60 KiB
// (under the limit: too large to be shared with other sessions), half about 3 KiB (shared with
// any session that declares the same), then are deleted: the heap after a collection is back
// within 1 MiB of where it was (the sessions held about 4 MiB), where the engine used to keep
// every distinct value for its life.
//
// The heap is the process's: what earlier tests leave reachable for a while counts too (the
// actor systems of the actor-tool tests stay reachable from protoactor's timers for seconds
// after they are closed, up to 12 MiB under -race), and its release during the measurement
// hid the sessions' memory. So the test measures in a process of its own: it runs itself
// again, alone, in a fresh copy of the test binary.
func TestClientDataLeavesWithItsSessions(t *testing.T) {
	if os.Getenv(heapAloneEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestClientDataLeavesWithItsSessions$", "-test.count=1", "-test.v", "-test.timeout=2m")
		cmd.Env = append(os.Environ(), heapAloneEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestClientDataLeavesWithItsSessions") {
			t.Fatalf("the test alone: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "heap:") {
				t.Log(strings.TrimSpace(line))
			}
		}
		return
	}
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	open := func(tag string, size int) *mcptest.Session {
		s := e.Session()
		r := s.Post(initializeDeclaring(tag, size))
		if s.ID = r.Header.Get("Mcp-Session-Id"); r.Status != http.StatusOK || s.ID == "" {
			t.Fatalf("initialize: %d %s", r.Status, r.Body)
		}
		s.Version = "2025-11-25"
		return s
	}
	// The server's own start-up allocations settle with a first session and a ping on it.
	first := open("warm", 100)
	first.Expect(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	var sessions []*mcptest.Session
	for i := range 128 {
		size := 60_000
		if i%2 == 1 {
			size = 3_000
		}
		s := open(fmt.Sprintf("s%03d", i), size)
		// A request brings the session's actor back, which is let go again afterwards: what
		// the client declared goes through both.
		s.Expect(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		sessions = append(sessions, s)
	}
	held := heap()
	for _, s := range sessions {
		if r := s.Do(http.MethodDelete, ""); r.Status != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", r.Status, r.Body)
		}
	}
	mcptest.Eventually(t, "the deleted sessions gone", func() bool { return e.srv.Sessions() == 1 && engineOccupancy(e.srv).Connections == 1 })
	after := heap()
	t.Logf("heap: %d before, %d with the sessions, %d after they ended", before, held, after)
	if held < before+3<<20 {
		t.Fatalf("the sessions held only %d bytes: the test measures nothing", held-before)
	}
	if after > before+1<<20 {
		t.Errorf("%d bytes stayed after the sessions ended (before %d, with them %d)", after-before, before, held)
	}
}
