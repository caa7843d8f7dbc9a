package cluster

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
)

// testNode is a Node with a key and a member list, enough for the task-id routing (no actor
// system: nothing here is forwarded).
func testNode(self string, others ...string) *Node {
	key := sessionKey(bytes.Repeat([]byte{7}, 32))
	n := &Node{key: key, addr: self, ref: taskHome(key, self), dead: map[string]time.Time{}}
	n.members = map[string]bool{self: true}
	n.seenLocked(self)
	for _, o := range others {
		n.members[o] = true
		n.seenLocked(o)
	}
	return n
}

func TestTaskIDNamesItsHome(t *testing.T) {
	a := testNode("127.0.0.1:7001", "127.0.0.1:7002")
	b := testNode("127.0.0.1:7002", "127.0.0.1:7001")
	id, err := taskstore.NewID(a.TaskHome())
	if err != nil {
		t.Fatal(err)
	}
	if home, ok := b.TaskHomeOf(id); !ok || home != "127.0.0.1:7001" {
		t.Fatalf("TaskHomeOf(%q) on another member = %q, %v; want 127.0.0.1:7001", id, home, ok)
	}
	if b.TaskGone(id) {
		t.Fatal("a live home is reported gone")
	}
	b.markDead("127.0.0.1:7001")
	if b.TaskGone(id) {
		t.Fatal("a home still in the member list is reported gone while its connection is down")
	}
	b.mu.Lock()
	delete(b.members, "127.0.0.1:7001")
	b.mu.Unlock()
	if !b.TaskGone(id) {
		t.Fatal("a home that left the member list is not reported gone")
	}
	if a.TaskGone(id) {
		t.Fatal("a member reports its own task's home gone")
	}
}

func TestTaskIDForgeriesNameNoHome(t *testing.T) {
	b := testNode("127.0.0.1:7002", "127.0.0.1:7001")
	real, _ := taskstore.NewID(taskHome(b.key, "127.0.0.1:7001"))
	other := testNode("127.0.0.1:7001") // another cluster: another secret
	other.key = sessionKey(bytes.Repeat([]byte{8}, 32))
	foreign, _ := taskstore.NewID(other.TaskHome())
	secret := strings.SplitN(real, ".", 2)[1]
	for _, id := range []string{
		foreign, // signed with another key
		"m" + strings.Repeat("a", 24) + "." + secret, // a made-up home
		"127-0-0-1-7001." + secret,                   // an address in clear
		secret,                                       // no home
		"",
	} {
		if home, ok := b.TaskHomeOf(id); ok {
			t.Errorf("TaskHomeOf(%q) = %q, want none", id, home)
		}
		if b.TaskGone(id) {
			t.Errorf("TaskGone(%q) = true", id)
		}
	}
}

// A forged id is served by the local handler, never forwarded (forwarding would need an actor
// system, which this node does not have: the test would panic).
func TestTaskRequestWithForgedIDServedLocally(t *testing.T) {
	b := testNode("127.0.0.1:7002", "127.0.0.1:7001")
	served := 0
	var bodies []string
	h := b.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
		got, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(got))
	}), 0)
	forged := "m" + strings.Repeat("b", 24) + ".abcdefghijklmnopqrstuvwxyz"
	for _, viaHeader := range []bool{true, false} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + forged + `"}}`
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set(protocol.HeaderProtocolVersion, protocol.ModernVersion)
		r.Header.Set(protocol.HeaderMethod, protocol.MethodTasksGet)
		if viaHeader {
			r.Header.Set(protocol.HeaderName, forged)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if served != 2 {
		t.Fatalf("served locally %d times, want 2", served)
	}
	for _, got := range bodies { // the body read for the task id reaches the handler whole
		if !strings.Contains(got, `"params":{"taskId":"`+forged+`"}}`) {
			t.Errorf("local handler read %q", got)
		}
	}
}

// A tasks/* request whose task's home is still a member but cannot be reached is refused as one
// to send again (503, Retry-After, -31000), not served locally, where the task would be
// reported failed; once the home has left the member list it is served locally.
func TestTaskRequestForUnreachableHome(t *testing.T) {
	b := testNode("127.0.0.1:7002", "127.0.0.1:7001")
	id, err := taskstore.NewID(taskHome(b.key, "127.0.0.1:7001"))
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	h := b.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }), 0)
	get := func() *httptest.ResponseRecorder {
		body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + id + `"}}`
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set(protocol.HeaderProtocolVersion, protocol.ModernVersion)
		r.Header.Set(protocol.HeaderMethod, protocol.MethodTasksGet)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	b.markDead("127.0.0.1:7001")
	w := get()
	const want = `{"jsonrpc":"2.0","id":null,"error":{"code":-31000,"message":"Server busy: the cluster member holding this task cannot be reached now","data":{"scope":"task-home"}}}`
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || w.Body.String() != want || served != 0 {
		t.Fatalf("home unreachable: %d, Retry-After %q, %s, served locally %d times; want 503, 1, %s, 0",
			w.Code, w.Header().Get("Retry-After"), w.Body.String(), served, want)
	}
	b.mu.Lock()
	delete(b.members, "127.0.0.1:7001")
	b.mu.Unlock()
	if get(); served != 1 {
		t.Fatalf("home gone from the member list: served locally %d times, want 1", served)
	}
}
