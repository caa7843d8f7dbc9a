package engine

import (
	"encoding/json"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/protocol"
)

// outgoing is one request from a handler to the client (sampling, elicitation, roots). The
// handler goroutine makes it and waits on reply; the connection actor gives it an id, sends it
// on the call's stream, and delivers the client's answer into reply (size 1, written once).
type outgoing struct {
	method string
	params json.RawMessage
	call   *cancel.Call
	stream Stream
	reply  chan outgoingReply

	id protocol.ID // set by the connection actor once sent
}

type outgoingReply struct {
	result json.RawMessage
	err    error
}

// surface is the connection actor's state for everything beyond tools: the requests it sent to
// the client and awaits answers to, the resource subscriptions, and what handler goroutines read.
type surface struct {
	state   *connState
	out     map[string]*outgoing // by the key of the id the engine gave it
	nextOut int64
	subs    map[string]struct{} // subscribed resource URIs
	// urlElicitations are the ids of the URL-mode elicitations sent on this connection and not
	// completed yet (at most maxURLElicitations; the oldest are forgotten first).
	urlElicitations []string
}

// maxURLElicitations bounds the URL-mode elicitation ids a connection remembers.
const maxURLElicitations = 256

func newSurface(e *Engine) surface {
	return surface{
		state: newConnState(e.system.Root, e.logLevel),
		out:   make(map[string]*outgoing),
		subs:  make(map[string]struct{}),
	}
}

// sendRequest gives o an id and sends it on its call's stream, unless the call is over, the
// connection closing or its input ended (no answer can come), in which case the handler gets its
// answer at once.
func (c *connectionActor) sendRequest(o *outgoing) {
	if c.closing || c.finishing {
		o.reply <- outgoingReply{err: client.ErrConnectionClosed}
		return
	}
	c.nextOut++
	id := protocol.NewIntID(c.nextOut)
	frame, err := protocol.EncodeRequest(id, o.method, o.params)
	if err != nil {
		o.reply <- outgoingReply{err: err}
		return
	}
	o.id = id
	c.out[id.Key()] = o
	if o.method == protocol.MethodElicitationCreate {
		c.rememberURLElicitation(o.params)
	}
	if !o.call.Notify(func() { o.stream.Send(frame) }) {
		delete(c.out, id.Key())
		o.reply <- outgoingReply{err: client.ErrCallFinished}
	}
}

// routeResponse hands the client's answer to the handler waiting for it. An answer to an id the
// engine is not waiting for (late after a cancellation, or never sent) is ignored.
func (c *connectionActor) routeResponse(m *protocol.Message) {
	key := m.ID.Key()
	o, ok := c.out[key]
	if !ok {
		c.log.Debug("response to no pending request ignored")
		return
	}
	delete(c.out, key)
	if m.Error != nil {
		o.reply <- outgoingReply{err: m.Error}
		return
	}
	o.reply <- outgoingReply{result: m.Result}
}

// abandonRequest forgets a request whose handler stopped waiting (its call was cancelled,
// timed out or answered, or the handler's own context ended), and tells the client with
// notifications/cancelled on the connection's notification path: the call's own stream may be
// closed by now.
func (c *connectionActor) abandonRequest(o *outgoing, reason string) {
	if o.id.IsZero() {
		return
	}
	key := o.id.Key()
	if cur, ok := c.out[key]; !ok || cur != o {
		return // answered already
	}
	delete(c.out, key)
	frame, err := protocol.EncodeNotification(protocol.MethodCancelled, &protocol.CancelledParams{RequestID: o.id, Reason: reason})
	if err == nil {
		c.notify(frame)
	}
}

// closeOutgoing fails every request still waiting for the client: the connection is closing.
func (c *connectionActor) closeOutgoing() {
	for key, o := range c.out {
		delete(c.out, key)
		o.reply <- outgoingReply{err: client.ErrConnectionClosed}
	}
}

// notify sends a message unrelated to any request on the connection's notification path (the
// stdio output, or a legacy HTTP session's standalone stream), once the client is initialized and
// while the connection is open. Without a notification path it is dropped.
func (c *connectionActor) notify(frame []byte) {
	if c.conn.notify == nil || !c.initialized || c.closing {
		return
	}
	c.conn.notify.Send(frame)
}

// receiveSurface handles the connection actor's messages beyond tools; it reports whether msg
// was one of them.
func (c *connectionActor) receiveSurface(ctx actor.Context, msg any) bool {
	switch msg := msg.(type) {
	case *sendRequest:
		c.sendRequest(msg.o)
	case *requestAbandoned:
		c.abandonRequest(msg.o, msg.reason)
	case *listChanged:
		if frame := msg.encoded(); frame != nil {
			c.notify(frame)
		}
	case *elicitationCompleted:
		for i, id := range c.urlElicitations {
			if id == msg.id {
				c.urlElicitations = append(c.urlElicitations[:i], c.urlElicitations[i+1:]...)
				if frame := elicitationCompleteFrame(id); frame != nil {
					c.notify(frame)
				}
				break
			}
		}
	case *resourceUpdated:
		if _, ok := c.subs[msg.uri]; ok && c.eng.visIndex().updateVisible(msg.uri, c.conn.connViewer()) {
			if frame := msg.encoded(); frame != nil {
				c.notify(frame)
			}
		}
	default:
		return false
	}
	return true
}

// rememberURLElicitation records the id of a URL-mode elicitation, so that its completion can be
// announced to this connection's client.
func (c *connectionActor) rememberURLElicitation(params json.RawMessage) {
	var p protocol.ElicitParams
	if json.Unmarshal(params, &p) != nil || p.Mode != protocol.ElicitModeURL || p.ElicitationID == "" {
		return
	}
	if len(c.urlElicitations) >= maxURLElicitations {
		c.urlElicitations = c.urlElicitations[1:]
	}
	c.urlElicitations = append(c.urlElicitations, p.ElicitationID)
}
