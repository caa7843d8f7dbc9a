package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClusterSSE: an HTTP+SSE (MCP 2024-11-05) session lives on the member that took its GET,
// whose id names it as home; every member takes the session's POSTs (202), forwarding them
// there, and every answer comes on the one stream.
func TestClusterSSE(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	events, backend, stop := c.stream(c.proxy.URL, request{method: http.MethodGet})
	defer stop()
	endpoint := nextData(t, events, 10*time.Second).Data
	sid, ok := strings.CutPrefix(endpoint, "/mcp?sessionId=")
	if !ok {
		t.Fatalf("endpoint event %q, want /mcp?sessionId=...", endpoint)
	}
	if home := homeOf(sid); home != sealedHome(c.members[atoi(backend)].remote) {
		t.Fatalf("session id names home %s; the stream is on member %s (%s)", home, backend, c.members[atoi(backend)].remote)
	}
	post := func(m *member, body string) {
		t.Helper()
		resp, err := http.Post(m.base+endpoint, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("member %d: POST %s: %d, want 202", m.i, short(body), resp.StatusCode)
		}
	}
	post(c.members[0], initializeBody)
	if got := nextData(t, events, 10*time.Second).Data; !strings.Contains(got, `"id":1,"result":{"protocolVersion":`) {
		t.Fatalf("initialize answered %s", got)
	}
	post(c.members[1], `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, m := range c.members {
		id := strconv.Itoa(10 + m.i)
		post(m, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"via member"}}}`)
		want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"via member"}]}}`
		if got := nextData(t, events, 10*time.Second).Data; got != want {
			t.Errorf("member %d: got %s, want %s", m.i, got, want)
		}
	}
}
