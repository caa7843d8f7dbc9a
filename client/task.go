package client

import (
	"context"
	"errors"
)

// ErrTaskStarted is returned by [StartTask] when the call goes on as a task in a new run of the
// handler: this run is over, and the handler should return at once (whatever it returns is
// discarded), as after [ErrInputRequired].
var ErrTaskStarted = errors.New("client: the call goes on as a task, in a new run of the handler")

// TaskPeer is implemented by a [Peer] whose call can be, or become, a task (the
// io.modelcontextprotocol/tasks extension of MCP 2026-07-28). The engine's peers implement it.
type TaskPeer interface {
	Peer
	// StartTask makes the call a task if it can become one; see [StartTask].
	StartTask(ctx context.Context) error
	// TaskID returns the id of the task the call runs in, or "".
	TaskID() string
}

// StartTask turns the call into a task, for a tool defined with DeferTask (see
// tools.Tool.DeferTask): such a call starts as an ordinary call, whose handler may first ask
// the client for input with [Input] and the like (input_required rounds of the call itself),
// and becomes a task when the handler calls StartTask. The engine then answers the call with
// the new task's id, and runs the handler again, from the start, inside the task: the answers
// the client gave before are answered again, and there StartTask returns nil. So the work a
// handler does before StartTask must be safe to repeat, as for [Input].
//
// It returns nil when the handler should go on: inside a task, and for a call that cannot
// become a task (a tool without DeferTask, a client that did not declare the extension, a
// legacy session), which goes on as an ordinary call. It returns [ErrTaskStarted] when this
// run is over, and [ErrNoClient] outside the engine.
func StartTask(ctx context.Context) error {
	p, ok := PeerFrom(ctx)
	if !ok {
		return ErrNoClient
	}
	if tp, ok := p.(TaskPeer); ok {
		return tp.StartTask(ctx)
	}
	return nil
}

// TaskID returns the id of the task the handler runs in, or "" when it runs in an ordinary
// call (or outside the engine).
func TaskID(ctx context.Context) string {
	if p, ok := PeerFrom(ctx); ok {
		if tp, ok := p.(TaskPeer); ok {
			return tp.TaskID()
		}
	}
	return ""
}
