package cluster

import "github.com/toolgrain/toolgrain/internal/clusterhook"

// The server's side of a member (package internal/clusterhook): toolgrain.NewServer wires its
// engine and HTTP transport to the Node it is given with these.
func init() {
	clusterhook.Register(func(v any) (clusterhook.Node, bool) {
		n, ok := v.(*Node)
		if !ok || n == nil {
			return clusterhook.Node{}, false
		}
		return clusterhook.Node{
			NewSessionID: n.newSessionID,
			Relay:        n.relay,
			RelayTags:    n.relayTags,
			TaskHome:     n.ownTaskHome(),
			TaskGone:     n.taskGone,
			SetDeliver:   n.setDeliver,
			SetTagSync:   n.setTagSync,
			SetTelemetry: n.setTelemetry,
			Wrap:         n.wrap,
		}, true
	})
}
