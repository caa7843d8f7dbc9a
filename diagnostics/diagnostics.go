// Package diagnostics is the private side of the error model: what an operator learns about an
// unexpected failure that the client only saw as a generic message.
//
// The engine calls an [OnError] callback with the original error and, for a failure inside a
// tool call, frozen [ToolErrorDetails]: the tool name and the request's id, method, tool name and
// client-supplied _meta. Details never carry the call's arguments, the caller's identity or any
// credential. Transport and internal failures (a broken output stream, an encoder failure, an
// authentication outage) come with nil details.
//
// The callback runs on the engine's diagnostics actor, after the client's response was sent and
// independently of it: a callback that panics, returns slowly or blocks cannot delay or change a
// response. See the root package for the limits (queue size, callback timeout).
package diagnostics

import (
	"encoding/json"

	"github.com/toolgrain/toolgrain/protocol"
)

// OnError receives an unexpected failure. details is nil for failures outside a tool call
// (transport, internal, authentication). The engine never calls it for expected outcomes
// (validation feedback, explicit public error results, protocol errors) nor for a call that was
// cancelled. Calls are made one at a time, except that a callback abandoned after its timeout
// may still be running while the next one starts.
type OnError func(err error, details *ToolErrorDetails)

// ErrorOnly adapts a callback that needs no details.
func ErrorOnly(fn func(error)) OnError {
	return func(err error, _ *ToolErrorDetails) { fn(err) }
}

// ToolRequest is the frozen view of the tools/call request that failed. It holds no arguments.
// The zero value describes no request.
type ToolRequest struct {
	id       protocol.ID
	method   string
	toolName string
	meta     json.RawMessage
}

// NewToolRequest freezes a request's identity. meta is copied.
func NewToolRequest(id protocol.ID, method, toolName string, meta json.RawMessage) ToolRequest {
	return ToolRequest{id: id, method: method, toolName: toolName, meta: clone(meta)}
}

// ID returns the request's JSON-RPC id, with its original JSON text.
func (r ToolRequest) ID() protocol.ID { return r.id }

// Method returns the JSON-RPC method, "tools/call".
func (r ToolRequest) Method() string { return r.method }

// ToolName returns the tool the client asked for.
func (r ToolRequest) ToolName() string { return r.toolName }

// Meta returns a copy of the request's params._meta, or nil. It is client-supplied and unverified:
// never trust it for authorisation, and treat it as untrusted input when logging it.
func (r ToolRequest) Meta() json.RawMessage { return clone(r.meta) }

// ToolErrorDetails says which tool call an unexpected failure belongs to. It is immutable; the
// methods of a nil *ToolErrorDetails return zero values.
type ToolErrorDetails struct {
	toolName string
	request  ToolRequest
	taskID   string
}

// NewToolErrorDetails freezes the details of a failed call of the tool toolName.
func NewToolErrorDetails(toolName string, req ToolRequest) *ToolErrorDetails {
	return &ToolErrorDetails{toolName: toolName, request: req}
}

// NewTaskErrorDetails freezes the details of a failure inside the task taskID, which runs the
// tool toolName for the tools/call req.
func NewTaskErrorDetails(toolName, taskID string, req ToolRequest) *ToolErrorDetails {
	return &ToolErrorDetails{toolName: toolName, request: req, taskID: taskID}
}

// TaskID returns the id of the task the failed call ran in (the io.modelcontextprotocol/tasks
// extension), or "" for a call that did not run as a task. The request is then the tools/call
// that created the task.
func (d *ToolErrorDetails) TaskID() string {
	if d == nil {
		return ""
	}
	return d.taskID
}

// ToolName returns the name of the tool whose call failed.
func (d *ToolErrorDetails) ToolName() string {
	if d == nil {
		return ""
	}
	return d.toolName
}

// Request returns the frozen request.
func (d *ToolErrorDetails) Request() ToolRequest {
	if d == nil {
		return ToolRequest{}
	}
	return d.request
}

func clone(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}
