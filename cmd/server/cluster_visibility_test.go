package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClusterVisibility: three members behind the round-robin proxy, with the tokens a (scope
// mcp, subject token-1) and b (scopes mcp and admin, subject token-2), fail tagged ops (visible
// with admin only) and echo tagged base.
//
//   - Every member answers a token's tools/list alike, byte for byte: a's without fail, b's
//     with it; a's call of fail is answered on every member as a call of an unknown tool.
//   - A change of the tags made on one member (its admin listener: base disabled for token-2)
//     reaches the sessions whose view changed on every member, b's three sessions (one homed on
//     each member), and not a's: each session's GET stream then holds, up to the list change
//     the touch tool announces to everyone next, exactly what it should.
//   - Every member then answers alike again; a member that restarts gets the state of the
//     tags from the others as it joins, and answers alike too.
func TestClusterVisibility(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and starts a cluster")
	}
	c := startCluster(t, 3, "--auth-token", "a:mcp", "--auth-token", "b:mcp,admin", "--tool-tag", "fail=ops",
		"--tool-tag", "echo=base", "--tag-scope", "ops=admin", "--touch-tool")
	p := c.proxy.URL
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	list := func(token, base string) string {
		t.Helper()
		c.token = token
		status, _, body := c.call(base, request{modern: "tools/list", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`})
		if status != http.StatusOK {
			t.Fatalf("tools/list of %s at %s: %d %s", token, base, status, short(body))
		}
		return body
	}
	// alike checks that every member answers token's tools/list with the same body, whose tools
	// include those of with and none of without.
	alike := func(when, token string, with, without []string) {
		t.Helper()
		first := list(token, c.members[0].base)
		for _, m := range c.members[1:] {
			if got := list(token, m.base); got != first {
				t.Errorf("%s: member %d answers %s's tools/list differently from member 0:\n%s\n%s", when, m.i, token, short(got), short(first))
			}
		}
		names := toolNames(t, first)
		for _, n := range with {
			if !slices.Contains(names, n) {
				t.Errorf("%s: %s does not see %s: %v", when, token, n, names)
			}
		}
		for _, n := range without {
			if slices.Contains(names, n) {
				t.Errorf("%s: %s sees %s: %v", when, token, n, names)
			}
		}
	}
	alike("at start", "a", []string{"echo"}, []string{"fail"})
	alike("at start", "b", []string{"echo", "fail"}, nil)

	c.token = "a"
	for i := range c.members {
		call := func(tool string) string {
			status, backend, body := c.call(p, request{modern: "tools/call", name: tool,
				body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"mode":"result"},` + meta + `}}`})
			return fmt.Sprintf("%d %s", status, body) + "@" + backend
		}
		hidden, unknown := call("fail"), call("nope")
		hb, ub := hidden[strings.LastIndex(hidden, "@")+1:], unknown[strings.LastIndex(unknown, "@")+1:]
		hidden, unknown = hidden[:strings.LastIndex(hidden, "@")], unknown[:strings.LastIndex(unknown, "@")]
		if !strings.Contains(unknown, `unknown tool \"nope\"`) || strings.ReplaceAll(hidden, "fail", "nope") != unknown {
			t.Errorf("round %d: a's call of fail (member %s) answers differently from an unknown tool's (member %s):\n%s\n%s", i, hb, ub, hidden, unknown)
		}
	}

	// Three sessions of each token, one homed on each member, whose GET streams are opened
	// through the proxy (and so forwarded to their home by the member they reach).
	type session struct {
		token, home string
		events      <-chan event
	}
	var sessions []session
	for _, token := range []string{"a", "b"} {
		for _, m := range c.members {
			c.token = token
			sid, _ := c.initialize(m.base)
			events, _, _ := c.stream(p, request{method: http.MethodGet, session: sid})
			sessions = append(sessions, session{token: token, home: homeOf(sid), events: events})
		}
	}

	// The change, on member 0's admin listener, then the touch tool's list change, on member 0
	// too: each member gets both from member 0, in order.
	admin := func(path string) {
		t.Helper()
		resp, err := http.Post(c.members[0].admin+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	admin("/tags/disable?tag=base&subject=token-2")
	c.token = "a"
	if status, _, body := c.call(c.members[0].base, request{modern: "tools/call", name: "touch",
		body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"touch","arguments":{"list":"resources"},` + meta + `}}`}); status != http.StatusOK {
		t.Fatalf("touch: %d %s", status, body)
	}
	for _, s := range sessions {
		want := []string{"notifications/resources/list_changed"}
		if s.token == "b" {
			want = append([]string{"notifications/tools/list_changed"}, want...)
		}
		var got []string
		for range want {
			got = append(got, notifiedMethod(t, s.events, time.Now().Add(20*time.Second)))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s's session homed on %s was told %v, want %v", s.token, s.home, got, want)
		}
	}
	alike("after the change", "a", []string{"echo"}, []string{"fail"})
	alike("after the change", "b", []string{"fail"}, []string{"echo"})

	mark := c.members[2].log.Len()
	c.restart(2)
	c.waitLog(c.members[2], mark, time.Now().Add(clusterStartWait), `"msg":"tag entries merged"`)
	alike("after a restart", "a", []string{"echo"}, []string{"fail"})
	alike("after a restart", "b", []string{"fail"}, []string{"echo"})
}

// notifiedMethod returns the method of the next message of a stream, skipping events without
// data (the priming event, keep-alive comments), or fails once deadline passes.
func notifiedMethod(t *testing.T, events <-chan event, deadline time.Time) string {
	t.Helper()
	for {
		select {
		case ev, ok := <-events:
			switch {
			case !ok || ev.end != "":
				t.Fatalf("stream ended: %s", ev.end)
			case ev.Data != "":
				_, rest, found := strings.Cut(ev.Data, `"method":"`)
				if !found {
					t.Fatalf("not a notification: %s", ev.Data)
				}
				method, _, _ := strings.Cut(rest, `"`)
				return method
			}
		case <-time.After(time.Until(deadline)):
			t.Fatal("no notification by the deadline")
		}
	}
}
