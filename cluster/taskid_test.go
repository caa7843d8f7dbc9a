package cluster

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
)

// testNode is a Node with a key and a member list, enough for the routing of session and task
// ids (no actor system: nothing here is forwarded).
func testNode(self string, others ...string) *Node {
	return testNodeKey(sessionKey(bytes.Repeat([]byte{7}, 32)), self, others...)
}

// testNodeKey is testNode with the session key given.
func testNodeKey(key []byte, self string, others ...string) *Node {
	ids := newIDKeys(key)
	home, err := ids.sealHome(self)
	if err != nil {
		panic(err)
	}
	n := &Node{key: key, ids: ids, addr: self, home: home, hold: learnHold, changed: time.Now(), dead: map[string]time.Time{}}
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
	id, err := taskstore.NewID(a.ownTaskHome())
	if err != nil {
		t.Fatal(err)
	}
	if home, ok := b.taskHomeOf(id); !ok || home != "127.0.0.1:7001" {
		t.Fatalf("TaskHomeOf(%q) on another member = %q, %v; want 127.0.0.1:7001", id, home, ok)
	}
	if b.taskGone(id) {
		t.Fatal("a live home is reported gone")
	}
	b.markDead("127.0.0.1:7001")
	if b.taskGone(id) {
		t.Fatal("a home still in the member list is reported gone while its connection is down")
	}
	b.mu.Lock()
	delete(b.members, "127.0.0.1:7001")
	b.mu.Unlock()
	if !b.taskGone(id) {
		t.Fatal("a home that left the member list is not reported gone")
	}
	if a.taskGone(id) {
		t.Fatal("a member reports its own task's home gone")
	}
}

func TestTaskIDForgeriesNameNoHome(t *testing.T) {
	b := testNode("127.0.0.1:7002", "127.0.0.1:7001")
	real, _ := taskstore.NewID(taskHome(b.key, "127.0.0.1:7001"))
	other := testNode("127.0.0.1:7001") // another cluster: another secret
	other.key = sessionKey(bytes.Repeat([]byte{8}, 32))
	foreign, _ := taskstore.NewID(other.ownTaskHome())
	secret := strings.SplitN(real, ".", 2)[1]
	for _, id := range []string{
		foreign, // signed with another key
		"m" + strings.Repeat("a", 24) + "." + secret, // a made-up home
		"127-0-0-1-7001." + secret,                   // an address in clear
		secret,                                       // no home
		"",
	} {
		if home, ok := b.taskHomeOf(id); ok {
			t.Errorf("TaskHomeOf(%q) = %q, want none", id, home)
		}
		if b.taskGone(id) {
			t.Errorf("TaskGone(%q) = true", id)
		}
	}
}

// settled makes n's topology and every reference it was asked about older than its hold: what
// n could have learnt, it has.
func settled(n *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	past := time.Now().Add(-n.hold)
	n.changed, n.pruned = past, past
	for r := range n.unseen {
		n.unseen[r] = past
	}
}

// A forged id is served by the local handler once the member has had the time to learn of any
// member it could name, never forwarded (forwarding would need an actor system, which this
// node does not have: the test would panic).
func TestTaskRequestWithForgedIDServedLocally(t *testing.T) {
	b := testNode("127.0.0.1:7002", "127.0.0.1:7001")
	served := 0
	var bodies []string
	h := b.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
		got, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(got))
	}), 0)
	forged := "m" + strings.Repeat("b", 24) + ".abcdefghijklmnopqrstuvwxyz"
	b.learning("m" + strings.Repeat("b", 24)) // asked about before
	settled(b)
	for _, viaHeader := range []bool{true, false} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + forged + `"}}`
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set(protocol.HeaderProtocolVersion, protocol.LatestModernVersion)
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
	h := b.wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }), 0)
	get := func() *httptest.ResponseRecorder {
		body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + id + `"}}`
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set(protocol.HeaderProtocolVersion, protocol.LatestModernVersion)
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

// taskGet is a modern tasks/get of the task id on h.
func taskGet(h http.Handler, id string) *httptest.ResponseRecorder {
	body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + id + `"}}`
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set(protocol.HeaderProtocolVersion, protocol.LatestModernVersion)
	r.Header.Set(protocol.HeaderMethod, protocol.MethodTasksGet)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestTaskRequestForHomeNotSeenYet: a tasks/* request for a task whose home this member has not
// seen (it joined a moment ago, or its topology event is late) is refused as one to send again
// (503, Retry-After, -31000), not answered "not found", for as long as the member may still
// learn of the home: until its topology and the reference have been stable for its hold. Then
// it is served locally, where the task is unknown; an id whose home is not a reference's form
// is served locally at once.
func TestTaskRequestForHomeNotSeenYet(t *testing.T) {
	b := testNode("127.0.0.1:7002") // it has seen no other member
	id, err := taskstore.NewID(taskHome(b.key, "127.0.0.1:7001"))
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	h := b.wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }), 0)
	const want = `{"jsonrpc":"2.0","id":null,"error":{"code":-31000,"message":"Server busy: the cluster member holding this task cannot be reached now","data":{"scope":"task-home"}}}`
	for try := 0; try < 2; try++ {
		if w := taskGet(h, id); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || w.Body.String() != want || served != 0 {
			t.Fatalf("home not seen yet, try %d: %d, Retry-After %q, %s, served locally %d times; want 503, 1, %s, 0",
				try, w.Code, w.Header().Get("Retry-After"), w.Body.String(), served, want)
		}
	}
	// The reference is old but the member set has just changed: it may still be learnt.
	settled(b)
	b.mu.Lock()
	b.changed = time.Now()
	b.mu.Unlock()
	if w := taskGet(h, id); w.Code != http.StatusServiceUnavailable || served != 0 {
		t.Fatalf("after a topology change: %d, served locally %d times; want 503, 0", w.Code, served)
	}
	settled(b)
	if taskGet(h, id); served != 1 {
		t.Fatalf("after the hold: served locally %d times, want 1", served)
	}
	// Not a reference's form (an engine's own home, or none): served locally at once.
	for _, other := range []string{"node-1.abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz", "m" + strings.Repeat("1", 24) + ".abcdefghijklmnopqrstuvwxyz"} {
		served = 0
		if taskGet(h, other); served != 1 {
			t.Errorf("tasks/get of %q: served locally %d times, want 1", other, served)
		}
	}
	// Once seen, the reference resolves, and is remembered as unseen no more.
	b.mu.Lock()
	b.seenLocked("127.0.0.1:7001")
	_, unseen := b.unseen[taskstore.HomeOf(id)]
	b.mu.Unlock()
	if home, ok := b.taskHomeOf(id); !ok || home != "127.0.0.1:7001" || unseen {
		t.Fatalf("after the home was seen: TaskHomeOf = %q, %v; still remembered unseen: %v", home, ok, unseen)
	}
}

// TestTaskUnseenBounded: a flood of made-up references costs at most maxUnseen entries; each is
// held (refused as one to send again) rather than taken for one that will never be seen.
func TestTaskUnseenBounded(t *testing.T) {
	b := testNode("127.0.0.1:7002")
	ref := func(i int) string { return taskHome(b.key, "10.0.0.1:"+strconv.Itoa(i)) }
	for i := 0; i < maxUnseen+10; i++ {
		if !b.learning(ref(i)) {
			t.Fatalf("reference %d not held", i)
		}
	}
	if len(b.unseen) != maxUnseen {
		t.Fatalf("%d references remembered, want %d", len(b.unseen), maxUnseen)
	}
	settled(b)
	if b.learning(ref(0)) {
		t.Fatal("a reference past its hold is held")
	}
	if !b.learning(ref(maxUnseen+20)) || len(b.unseen) != 1 {
		t.Fatalf("a new reference once the old ones expired: %d remembered, want 1", len(b.unseen))
	}
}

// TestSessionOfHomeGone: a session whose home has left the topology, or whose connection broke
// within deadHold, answers 404 on another member without a forward (this node has no actor
// system to forward with).
func TestSessionOfHomeGone(t *testing.T) {
	b := testNode("127.0.0.1:7002", "127.0.0.1:7001", "127.0.0.1:7003")
	h := b.wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("served locally") }), 0)
	post := func(sid string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set(protocol.HeaderSessionID, sid)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	b.mu.Lock()
	delete(b.members, "127.0.0.1:7001")
	b.mu.Unlock()
	b.markDead("127.0.0.1:7003")
	const want = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Found: session not found"}}`
	for _, home := range []string{"127.0.0.1:7001", "127.0.0.1:7003"} {
		if w := post(testNode(home).newSessionID()); w.Code != http.StatusNotFound || w.Body.String() != want {
			t.Errorf("session homed on %s: %d %s, want 404 %s", home, w.Code, w.Body.String(), want)
		}
	}
}
