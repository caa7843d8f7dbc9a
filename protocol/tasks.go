package protocol

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The tasks extension of MCP 2026-07-28 (io.modelcontextprotocol/tasks, SEP-2663): a server may
// answer a tools/call of a client that declares the extension with a task instead of its result,
// which the client then polls (tasks/get), feeds with input (tasks/update), cancels
// (tasks/cancel) or follows on a listen stream (notifications/tasks).

// ExtensionTasks is the identifier of the tasks extension, in the extensions of the client's
// and the server's capabilities.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// Methods of the tasks extension.
const (
	MethodTasksGet    = "tasks/get"
	MethodTasksUpdate = "tasks/update"
	MethodTasksCancel = "tasks/cancel"
	// MethodTasksNotification carries a task's [Task] state on a listen stream.
	MethodTasksNotification = "notifications/tasks"
)

// ResultTask is the resultType of a tools/call answered with a task ([Task]).
const ResultTask = "task"

// TasksRequired is the requiredCapabilities of the -32021 error that answers a request which
// needs the tasks extension and did not declare it.
var TasksRequired = json.RawMessage(`{"extensions":{"` + ExtensionTasks + `":{}}}`)

// CodeServerBusy messages name this scope for the caps on tasks ([ErrTooManyTasks]).
const (
	BusyTasksServer = "tasks"
	BusyTasksCaller = "tasks-caller"
)

// ErrTooManyTasks returns the [CodeServerBusy] error of a call that would make one task more
// than the limit allows: on the server (scope [BusyTasksServer]) or for its caller
// ([BusyTasksCaller]).
func ErrTooManyTasks(scope string, limit int) *WireError {
	who := "on the server"
	if scope == BusyTasksCaller {
		who = "for this caller"
	}
	return busy(scope, limit, "Server busy: too many tasks "+who+" (limit "+strconv.Itoa(limit)+
		"; a task counts until its TTL passes)")
}

// HasExtension reports whether the client declared the extension id (as an object).
func (c *ClientCapabilities) HasExtension(id string) bool {
	return c != nil && hasOption(c.Extensions, id)
}

// Task is a task's state as the tasks extension sends it: the members of a CreateTaskResult
// (with resultType "task"), of a tasks/get result and of notifications/tasks. At most one of
// InputRequests (status input_required), Result (completed) and Error (failed) is set.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is the task's time to live from its creation, in milliseconds; nil is null:
	// unlimited.
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	InputRequests  json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
}

// TaskTime formats a task's timestamp: ISO 8601 in UTC, to the millisecond.
func TaskTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// TaskParams are the params of tasks/get and tasks/cancel.
type TaskParams struct {
	TaskID string `json:"taskId"`
}

// UpdateTaskParams are the params of tasks/update: answers to the task's requests for input,
// by key, as in a retried multi-round-trip request.
type UpdateTaskParams struct {
	TaskID         string          `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

// ReadTaskParams reads the taskId of the params of a tasks/* method: a [CodeInvalidParams]
// error when params is not an object with a non-empty string taskId.
func ReadTaskParams(method string, params json.RawMessage) (string, *WireError) {
	var p TaskParams
	if err := json.Unmarshal(params, &p); err != nil || strings.TrimSpace(p.TaskID) == "" {
		return "", ErrInvalidParams("%s needs params with a non-empty string taskId", method)
	}
	return p.TaskID, nil
}
