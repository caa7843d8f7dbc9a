package toolgrain

import (
	"errors"
	"fmt"
	"time"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/taskstore"
	"github.com/toolgrain/toolgrain/tools"
)

// TaskConfig configures the tasks extension of MCP 2026-07-28 (io.modelcontextprotocol/tasks):
// calls of tools with a tools.TaskSupport answered at once with a task that the client polls
// (tasks/get), answers (tasks/update), cancels (tasks/cancel) or follows (notifications/tasks on
// subscriptions/listen). See tools.TaskSupport for when a call runs as a task.
//
// The server offers the extension (server/discover lists it, tasks/* methods are served) when
// one of Config.Tools may run as a task, or when Enabled is set. The zero value is usable.
type TaskConfig struct {
	// Enabled offers the extension even when no tool of Config.Tools may run as a task, so
	// that such tools can be added later (Server.AddTools refuses them otherwise).
	Enabled bool
	// Store keeps the tasks. Nil means an in-memory store: tasks are lost when the process
	// ends. taskstore.OpenBolt keeps them in a file: after a restart, finished tasks are still
	// readable and those that were running are failed with the error "Task failed: the server
	// restarted before it finished" ([TaskRestartedText]). The server never closes the store:
	// close it after Shutdown returns.
	Store taskstore.Store
	// TTL is how long a task is kept from its creation, for tools without their own
	// tools.Tool.TaskTTL: its result stays readable until then, and a task still running then
	// is cancelled and forgotten. 0 means one hour.
	TTL time.Duration
	// PollInterval is the pollIntervalMs the server suggests to clients. 0 means one second.
	PollInterval time.Duration
	// MaxTasks bounds the tasks the server holds: running ones, and finished ones until their
	// TTL passes. A call that would make one more is refused with the JSON-RPC error -31000
	// "Server busy: too many tasks on the server (limit N; ...)", data
	// {"scope":"tasks","limit":N}. 0 means 10,000; negative means no limit.
	MaxTasks int
	// MaxTasksPerCaller bounds the tasks held for one authenticated caller (by the subject of
	// its identity), with "... for this caller" and scope "tasks-caller". Without
	// authentication only MaxTasks applies. 0 means 1,000; negative means no limit.
	MaxTasksPerCaller int
	// Home names this server in its task ids ("<home>.<random>"), for routing in a cluster:
	// 1 to 32 characters from a-z, 0-9 and '-'. "" means task ids name no home. With
	// Config.Cluster it is set from the cluster member (a signed name of its address), and
	// tasks/* requests go to the task's home from any member (package cluster).
	Home string
}

// TaskRestartedText is the error message of a task that was running when its server stopped,
// as the next server on the same durable store reports it.
const TaskRestartedText = engine.TaskRestartedText

// engineTasks is the engine's task configuration for cfg.
func engineTasks(cfg *Config) engine.TaskConfig {
	t := cfg.Tasks
	return engine.TaskConfig{
		Enabled: t.Enabled || hasTaskTool(cfg.Tools),
		Store:   t.Store, TTL: t.TTL, PollInterval: t.PollInterval,
		MaxTasks: t.MaxTasks, MaxTasksPerCaller: t.MaxTasksPerCaller, Home: t.Home,
	}
}

func hasTaskTool(defs []tools.Tool) bool {
	for i := range defs {
		if defs[i].TaskSupport != tools.TaskForbidden {
			return true
		}
	}
	return false
}

// errTasksOff is returned by AddTools for a task tool on a server that does not offer tasks.
var errTasksOff = errors.New("toolgrain: the server does not offer tasks: set Config.Tasks.Enabled to add tools with TaskSupport")

func (s *Server) checkTaskTools(defs []tools.Tool) error {
	if s.eng.TasksEnabled() {
		return nil
	}
	for i := range defs {
		if defs[i].TaskSupport != tools.TaskForbidden {
			return fmt.Errorf("tool %q: %w", defs[i].Name, errTasksOff)
		}
	}
	return nil
}
