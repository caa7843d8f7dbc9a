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
	n := &Node{key: sessionKey(bytes.Repeat([]byte{7}, 32)), addr: self, dead: map[string]time.Time{}}
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
	if !b.TaskGone(id) {
		t.Fatal("a dead home is not reported gone")
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
