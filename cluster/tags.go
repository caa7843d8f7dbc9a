package cluster

import (
	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/internal/wire"
)

// The state of the tags (which components each caller sees, changed at run time with the
// server's EnableTags and the like) is the same on every member: a member sends the entries of
// each change it makes to every other member, and its whole state to a member that joins;
// members merge what they receive, the newer entry winning (see the engine's TagSync). Each member
// then tells its own clients whose view changed.

// maxPendingTags bounds the tag messages kept for an engine that is not attached yet (a member
// that joined and is still making its server).
const maxPendingTags = 64

// tagSync is how this member's engine takes the others' tag entries.
type tagSync struct {
	merge   func([]byte) error
	state   func() []byte
	pending [][]byte // received before merge was set; under Node.mu
}

// setTagSync sets how this member's engine merges the tag entries other members send (merge,
// the engine's MergeTags) and what it sends a member that joins (state, its TagState);
// toolgrain.NewServer calls it. Entries that arrived before are merged now.
func (n *Node) setTagSync(merge func([]byte) error, state func() []byte) {
	n.mu.Lock()
	pending := n.tags.pending
	n.tags = tagSync{merge: merge, state: state}
	n.mu.Unlock()
	for _, b := range pending {
		n.mergeTags(merge, b)
	}
}

// relayTags sends the tag entries of a change made on this member to every other member (the
// engine's TagSync.Relay). It never blocks; a member that joins later gets the whole
// state when it joins.
func (n *Node) relayTags(entries []byte) {
	n.sendTags(entries, n.others())
}

// others returns the addresses of the other members that can be reached.
func (n *Node) others() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	to := make([]string, 0, len(n.members))
	for a := range n.members {
		if a != n.addr && !n.unreachable(a) {
			to = append(to, a)
		}
	}
	return to
}

// sendTags sends entries to the event streams of the members at addrs.
func (n *Node) sendTags(entries []byte, addrs []string) {
	msg := &wire.Envelope{Kind: wire.Kind_KIND_TAGS, Body: entries}
	for _, a := range addrs {
		n.system.Root.Send(actor.NewPID(a, "eventstream"), msg)
	}
}

// receiveTags takes another member's tag entries: merged into the engine's state, or kept until
// the engine is attached. It runs on the event stream's publisher and never blocks.
func (n *Node) receiveTags(body []byte) {
	n.mu.Lock()
	merge := n.tags.merge
	if merge == nil {
		if len(n.tags.pending) < maxPendingTags {
			n.tags.pending = append(n.tags.pending, body)
		}
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	n.mergeTags(merge, body)
}

func (n *Node) mergeTags(merge func([]byte) error, body []byte) {
	if err := merge(body); err != nil {
		n.log.Warn("tag entries from another member refused", zap.Error(err))
		return
	}
	n.log.Info("tag entries merged", zap.Int("bytes", len(body)))
}

// sendTagState sends this member's whole tag state to members that joined.
func (n *Node) sendTagState(joined []string) {
	n.mu.Lock()
	state := n.tags.state
	n.mu.Unlock()
	if state == nil || len(joined) == 0 {
		return
	}
	n.sendTags(state(), joined)
}
