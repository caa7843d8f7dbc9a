package cluster

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

// TestForwardToHomeNotSeen: a member that has never seen a session's home in its topology (it
// joined a moment ago, or the home's topology event is late: here, the two members share a
// secret but not a member list, so neither ever sees the other) forwards the session's
// requests to the home, which its id names, rather than answering 404. An id naming a member
// that is not there (it left before this one joined) answers 404 once the connection to it
// fails.
func TestForwardToHomeNotSeen(t *testing.T) {
	a, b := startTwo(t, false)
	b.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "served by the home: "+string(body))
	}), 0)
	edge := httptest.NewServer(a.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the edge served a request of a session homed on the other member")
		w.WriteHeader(http.StatusTeapot)
	}), 0))
	defer edge.Close()
	post := func(sid string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, edge.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set(protocol.HeaderSessionID, sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if status, body := post(b.newSessionID()); status != http.StatusOK || body != `served by the home: {"jsonrpc":"2.0","id":1,"method":"ping"}` {
		t.Fatalf("session homed on a member not seen: %d %q, want 200 and the home's answer", status, body)
	}
	if slices.Contains(a.Members(), b.addr) {
		t.Fatalf("the edge has the home in its topology %v: the test shows nothing", a.Members())
	}

	// A member that is not there: a free port on loopback, nothing listening.
	dead, err := a.ids.sealHome("127.0.0.1:" + strconv.Itoa(freePorts(t, 1)[0]))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Found: session not found"}}`
	if status, body := post(a.ids.mint(dead)); status != http.StatusNotFound || body != want {
		t.Fatalf("session homed on a member not there: %d %q, want 404 %s", status, body, want)
	}
}
