package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/taskstore"
)

// taskOptions are the settings of the tasks extension.
type taskOptions struct {
	store        string // "", "memory" or "bolt:PATH"
	ttl          time.Duration
	maxTasks     int
	maxPerCaller int
}

func (o *taskOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.store, "task-store", "", "turn tasks on (the io.modelcontextprotocol/tasks extension, with the demonstration tool sleep_task) and keep them in `STORE`: memory, or bolt:PATH for a durable file that survives restarts")
	fs.DurationVar(&o.ttl, "task-ttl", 0, "how long a task is kept from its creation (0: 1h)")
	fs.IntVar(&o.maxTasks, "max-tasks", 0, "tasks held on the server, running or finished until their TTL, before new ones are refused (0: 10000, -1: no limit)")
	fs.IntVar(&o.maxPerCaller, "max-tasks-per-caller", 0, "tasks held per authenticated caller (0: 1000, -1: no limit)")
}

func (o *taskOptions) check() error {
	switch {
	case o.store == "" || o.store == "memory":
	case strings.HasPrefix(o.store, "bolt:") && len(o.store) > len("bolt:"):
	default:
		return fmt.Errorf("unknown task store %q (want memory or bolt:PATH)", o.store)
	}
	if o.ttl < 0 {
		return errors.New("--task-ttl must not be negative")
	}
	return nil
}

// on reports whether tasks were asked for.
func (o *taskOptions) on() bool { return o.store != "" }

// config opens the store and returns the server's task configuration and a function that
// closes the store, to call once the server has shut down.
func (o *taskOptions) config() (toolgrain.TaskConfig, io.Closer, error) {
	cfg := toolgrain.TaskConfig{Enabled: o.on(), TTL: o.ttl, MaxTasks: o.maxTasks, MaxTasksPerCaller: o.maxPerCaller}
	path, ok := strings.CutPrefix(o.store, "bolt:")
	if !ok {
		return cfg, io.NopCloser(nil), nil
	}
	b, err := taskstore.OpenBolt(path, taskstore.BoltOptions{})
	if err != nil {
		return cfg, nil, err
	}
	cfg.Store = b
	return cfg, b, nil
}
