package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/protocol"
)

// taskPeer is the client.Peer of a handler that runs in a task. The client is the one that
// made the task: its capabilities are those it declared on that call. It cannot be sent
// anything while the task runs: a request for input (client.Input, client.Elicit and the like)
// becomes one of the task's inputRequests, which the client answers with tasks/update, and the
// handler waits for the answer meanwhile. Log messages go nowhere: the extension has no channel
// for a task's notifications.
type taskPeer struct {
	spec  *taskSpec
	owner *actor.PID // the task actor
	root  *actor.RootContext
	keys  autoKeys

	mu    sync.Mutex
	state []byte
}

var (
	_ client.Peer      = (*taskPeer)(nil)
	_ client.InputPeer = (*taskPeer)(nil)
	_ client.TaskPeer  = (*taskPeer)(nil)
)

func (p *taskPeer) ClientCapabilities() *protocol.ClientCapabilities { return p.spec.caps }

func (p *taskPeer) ClientInfo() protocol.Implementation { return p.spec.info }

// Log drops the message: a task has no stream to carry it.
func (p *taskPeer) Log(level, _ string, _ json.RawMessage) error {
	if _, ok := protocol.LogSeverity(level); !ok {
		return fmt.Errorf("%w %q", client.ErrInvalidLevel, level)
	}
	return nil
}

// Request asks for one input under a key of its own ([taskPeer.Input]).
func (p *taskPeer) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	key := p.keys.next(method)
	res, err := p.Input(ctx, map[string]client.InputRequest{key: {Method: method, Params: params}})
	if err != nil {
		return nil, err
	}
	return res[key], nil
}

// Input has the task wait in input_required for the answers to reqs the client has not given
// yet, and returns them all once it has, or the context's cause when the task is cancelled,
// expires or the server shuts down first. A key answered before is answered again.
func (p *taskPeer) Input(ctx context.Context, reqs map[string]client.InputRequest) (map[string]json.RawMessage, error) {
	if err := checkKeys(reqs); err != nil {
		return nil, err
	}
	wire := make(map[string]protocol.InputRequest, len(reqs))
	for k, r := range reqs {
		req, err := inputRequestFor(p.spec.caps, r)
		if err != nil {
			return nil, err
		}
		wire[k] = req
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	reply := make(chan map[string]json.RawMessage, 1)
	p.root.Send(p.owner, &inputAsked{reqs: wire, reply: reply})
	select {
	case res := <-reply:
		return res, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (p *taskPeer) State() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

func (p *taskPeer) SetState(state []byte) {
	p.mu.Lock()
	p.state = state
	p.mu.Unlock()
}

// StartTask returns nil: the handler runs in a task already.
func (p *taskPeer) StartTask(context.Context) error { return nil }

// TaskID returns the task's id.
func (p *taskPeer) TaskID() string { return p.spec.id }
