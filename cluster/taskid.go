package cluster

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"io"
	"net/http"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
)

// A task id made on a member names its home as the engine's task ids do ("<home>.<random>",
// taskstore.NewID), with a home that no client can forge nor read: the member's reference, "m"
// and the first 120 bits of HMAC-SHA256(key, address) in lower-case base32, 25 characters,
// which session ids name their home by too (sessionid.go). A member resolves a reference to
// the address of a member it has seen in the cluster's topology; a reference that matches none
// (forged, or of a member this one never saw) names no home, and the task is served locally,
// where it is unknown. The random part of the id is not signed: a client that alters it reaches
// the real home, which does not know the task either.

var taskHomeEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// taskHome returns the reference that names the member at addr in task and session ids.
func taskHome(key []byte, addr string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("toolgrain cluster task home v1\x00"))
	m.Write([]byte(addr))
	return "m" + taskHomeEncoding.EncodeToString(m.Sum(nil)[:15])
}

// TaskHome returns the reference that names this member in task ids: toolgrain.NewServer sets
// the engine's task home to it when Config.Cluster is set.
func (n *Node) TaskHome() string { return taskHome(n.key, n.addr) }

// homeAddr returns the address of the member the reference home names, and false when it names
// none this member has seen.
func (n *Node) homeAddr(home string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	addr, ok := n.taskHomes[home]
	return addr, ok
}

// seenLocked records addr as a member, for resolving the homes of task and session ids. n.mu
// is held. The map keeps every member ever seen, so that the tasks of a dead member are
// reported failed; it grows by one entry per member address, not per task.
func (n *Node) seenLocked(addr string) {
	if n.taskHomes == nil {
		n.taskHomes = make(map[string]string)
	}
	n.taskHomes[taskHome(n.key, addr)] = addr
}

// TaskHomeOf returns the address of the member a task id names as its home, and false when it
// names none this member knows of.
func (n *Node) TaskHomeOf(id string) (string, bool) {
	home := taskstore.HomeOf(id)
	if home == "" {
		return "", false
	}
	return n.homeAddr(home)
}

// TaskGone reports whether a task id names another member as its home and that member has left
// the member list: the engine then reports the task failed (actors.TaskConfig.Gone). A home
// still in the list whose connection is down is not gone (Wrap refuses such requests as ones to
// send again). It never blocks.
func (n *Node) TaskGone(id string) bool {
	addr, ok := n.TaskHomeOf(id)
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
