package engine

import (
	"encoding/json"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// callParams are the decoded params of one tools/call or notifications/cancelled.
type callParams struct {
	msg       *protocol.Message // the message they belong to; nil when not decoded
	params    protocol.CallToolParams
	cancelled protocol.CancelledParams
	err       error
}

// newInbound wraps a message for its connection actor. It runs on the transport's goroutine,
// so the params of a tools/call or a cancellation are decoded there rather than inside the
// connection actor, which every message of the connection passes through one at a time.
func newInbound(msg *protocol.Message, s Stream, id *tools.Identity) *inbound {
	in := &inbound{msg: msg, stream: s, identity: id}
	in.classify()
	in.decode()
	return in
}

// decode reads the params of a tools/call or a cancellation.
func (in *inbound) decode() {
	msg := in.msg
	switch {
	case msg.Method == protocol.MethodToolsCall && !msg.ID.IsZero():
		p, err := msg.CallToolParams()
		in.call = callParams{msg: msg, params: p, err: err}
	case msg.Method == protocol.MethodCancelled && msg.ID.IsZero():
		in.call = callParams{msg: msg}
		in.call.err = json.Unmarshal(msg.Params, &in.call.cancelled)
	}
}

// callParams returns the params of the tools/call m, decoding them unless the transport did.
func (c *connectionActor) callParams(m *protocol.Message) (protocol.CallToolParams, error) {
	if d := c.decoded; d != nil && d.msg == m {
		return d.params, d.err
	}
	return m.CallToolParams()
}

// cancelledParams returns the params of the cancellation m, decoding them unless the transport
// did.
func (c *connectionActor) cancelledParams(m *protocol.Message) (protocol.CancelledParams, error) {
	if d := c.decoded; d != nil && d.msg == m {
		return d.cancelled, d.err
	}
	var p protocol.CancelledParams
	err := json.Unmarshal(m.Params, &p)
	return p, err
}
