package tools

import (
	"errors"
	"fmt"
)

// TaskSupport says whether a tool's calls may run as tasks (the io.modelcontextprotocol/tasks
// extension of MCP 2026-07-28).
//
// A task suits a call that may outlast the client's patience or its connection: a build, a
// scan, a query behind a slow backend, anything that waits on a person. The engine answers the
// tools/call at once with the task's id (a CreateTaskResult), runs the handler in a task actor
// of its own, and keeps the task's status and, in the end, its result or error for the client
// to read with tasks/get, until the task's TTL passes. A handler that asks for input
// (client.Input, client.Elicit and the like) works unchanged: the task waits in status
// input_required until the client answers with tasks/update. tasks/cancel cancels the
// handler's context; the task then ends cancelled, whatever the handler returns.
//
// Only a modern request (MCP 2026-07-28) whose client declares the extension can get a task.
// A legacy session (MCP 2025-11-25 and earlier) calls every tool as an ordinary call.
type TaskSupport uint8

const (
	// TaskForbidden: calls never run as tasks. The zero value.
	TaskForbidden TaskSupport = iota
	// TaskOptional: a call runs as a task when its client declares the extension, and as an
	// ordinary call otherwise.
	TaskOptional
	// TaskRequired: a call runs only as a task. A modern request whose client does not declare
	// the extension is refused with -32021 (missing required client capability), naming it; a
	// legacy session still calls the tool as an ordinary call.
	TaskRequired
)

// String returns "forbidden", "optional" or "required".
func (s TaskSupport) String() string {
	switch s {
	case TaskForbidden:
		return "forbidden"
	case TaskOptional:
		return "optional"
	case TaskRequired:
		return "required"
	}
	return fmt.Sprintf("TaskSupport(%d)", uint8(s))
}

// checkTask checks the task options of def.
func checkTask(def *Tool) error {
	switch {
	case def.TaskSupport > TaskRequired:
		return fmt.Errorf("unknown task support %d", def.TaskSupport)
	case def.TaskTTL < 0:
		return fmt.Errorf("negative task TTL %v", def.TaskTTL)
	case def.TaskSupport == TaskForbidden && (def.DeferTask || def.TaskTTL != 0):
		return errors.New("DeferTask and TaskTTL need TaskSupport (optional or required)")
	}
	if _, actor := def.Handler.(*ActorHandler); actor && def.TaskSupport != TaskForbidden {
		return errors.New("an actor-backed tool cannot run as a task (yet): give it a Go handler, or no TaskSupport")
	}
	return nil
}
