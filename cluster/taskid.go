package cluster

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
)

// A task id made on a member names its home as the engine's task ids do ("<home>.<random>",
// taskstore.NewID), with a home that no client can forge nor read: the member's reference, "m"
// and the first 120 bits of HMAC-SHA256(key, address) in lower-case base32, 25 characters (a
// task's home may have at most 32 characters of [a-z0-9-], taskstore.CheckHome: too few to
// carry a sealed address, as session ids do). A member resolves a reference to the address of
// a member it has seen in the cluster's topology. One that matches none is either of a member
// this one has not seen yet (it joined a moment ago, or its topology event is late), or of
// none it will see (forged, or of a member that left before this one joined): for a while
// (see learning) the request is refused as one to send again, and then served locally, where
// the task is unknown. The random part of the id is not signed: a client that alters it
// reaches the real home, which does not know the task either.

var taskHomeEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// taskHome returns the reference that names the member at addr in task and session ids.
func taskHome(key []byte, addr string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("toolgrain cluster task home v1\x00"))
	m.Write([]byte(addr))
	return "m" + taskHomeEncoding.EncodeToString(m.Sum(nil)[:15])
}

// ownTaskHome returns the reference that names this member in task ids: toolgrain.NewServer sets
// the engine's task home to it when Config.Cluster is set.
func (n *Node) ownTaskHome() string { return taskHome(n.key, n.addr) }

// homeAddr returns the address of the member the reference home names, and false when it names
// none this member has seen.
func (n *Node) homeAddr(home string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	addr, ok := n.taskHomes[home]
	return addr, ok
}

// seenLocked records addr as a member, for resolving the homes of task ids and telling a member
// that left from one not seen yet. n.mu is held. The map keeps every member ever seen, so that
// the tasks of a dead member are reported failed; it grows by one entry per member address,
// not per task.
func (n *Node) seenLocked(addr string) {
	if n.taskHomes == nil {
		n.taskHomes = make(map[string]string)
	}
	ref := taskHome(n.key, addr)
	n.taskHomes[ref] = addr
	delete(n.unseen, ref)
}

// learnHold is the least time a member refuses, as ones to send again, the tasks/* requests of
// a task whose home reference it cannot resolve: the time it may take to learn of a member
// that has joined (a provider's poll or two). A member started with the automanaged provider
// holds them for at least three of its refreshes.
const learnHold = 5 * time.Second

// maxUnseen bounds the unresolved references a member remembers (a forged one costs an entry
// for as long as it is held, then may be forgotten).
const maxUnseen = 1024

// learning reports whether ref, a task-home reference this member cannot resolve, may still
// name a member it has not seen yet: the member set changed, or ref was first asked about,
// less than n.hold ago. A string that is not a reference's form never is.
func (n *Node) learning(ref string) bool {
	if !isTaskRef(ref) {
		return false
	}
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.taskHomes[ref]; ok {
		return true // seen since the caller looked: sent again, it is forwarded
	}
	first, ok := n.unseen[ref]
	if !ok {
		first = now
		if len(n.unseen) >= maxUnseen && now.Sub(n.pruned) >= time.Second {
			// At most once a second: a flood of made-up references does not hold n.mu for a
			// walk of the map on every request.
			n.pruned = now
			for r, t := range n.unseen {
				if now.Sub(t) >= n.hold {
					delete(n.unseen, r)
				}
			}
		}
		if len(n.unseen) < maxUnseen { // else held, but not remembered
			if n.unseen == nil {
				n.unseen = make(map[string]time.Time)
			}
			n.unseen[ref] = now
		}
	}
	return now.Sub(first) < n.hold || now.Sub(n.changed) < n.hold
}

// isTaskRef reports whether s has the form of a reference taskHome makes.
func isTaskRef(s string) bool {
	if len(s) != 25 || s[0] != 'm' {
		return false
	}
	_, err := taskHomeEncoding.DecodeString(s[1:])
	return err == nil
}

// taskHomeOf returns the address of the member a task id names as its home, and false when it
// names none this member knows of.
func (n *Node) taskHomeOf(id string) (string, bool) {
	home := taskstore.HomeOf(id)
	if home == "" {
		return "", false
	}
	return n.homeAddr(home)
}

// taskGone reports whether a task id names another member as its home and that member has left
// the member list: the engine then reports the task failed (its TaskConfig.Gone). A home
// still in the list whose connection is down is not gone (wrap refuses such requests as ones to
// send again). It never blocks.
func (n *Node) taskGone(id string) bool {
	addr, ok := n.taskHomeOf(id)
	return ok && addr != n.addr && !n.listed(addr)
}

// isTaskMethod reports whether method is one of the tasks/* requests that name a task.
func isTaskMethod(method string) bool {
	switch method {
	case protocol.MethodTasksGet, protocol.MethodTasksUpdate, protocol.MethodTasksCancel:
		return true
	}
	return false
}

// requestTaskID returns the task id of a modern tasks/* POST: the Mcp-Name header, or else
// params.taskId of the body, read up to maxBody bytes; r.Body is then replaced by what was
// read followed by the rest, so that the request can still be served or forwarded. "" when
// there is none.
func requestTaskID(r *http.Request, maxBody int) string {
	if v := r.Header.Get(protocol.HeaderName); v != "" {
		id, err := protocol.DecodeHeaderValue(v)
		if err != nil {
			return ""
		}
		return id
	}
	if r.Body == nil {
		return ""
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBody)+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > maxBody {
		return ""
	}
	var m struct {
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	return m.Params.TaskID
}
