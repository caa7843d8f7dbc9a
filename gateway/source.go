package gateway

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/enginehook"
	"github.com/toolgrain/toolgrain/internal/upstream"
	"github.com/toolgrain/toolgrain/tools"
)

// Source is where a mounted server is: [Stdio], [InProcess], [HTTP] or [SSE].
type Source interface {
	// check reports a source that cannot work.
	check() error
	// transport returns the transport to it; name is the mount's.
	transport(g *Gateway, name string) (upstream.Transport, error)
}

// Stdio is an upstream the gateway runs as a command and speaks to on its standard input and
// output (newline-delimited JSON-RPC). The gateway starts it when the mount is made, restarts
// it when it exits (at once after a run of a second or more, else after a backoff that grows
// to 30 s), ends it when the gateway closes (its input is closed; after a grace of 2 s it is
// killed, with the processes it started), and logs each line of its standard error at debug
// level.
type Stdio struct {
	// Command is the program, found in PATH when it has no slash.
	Command string
	// Args are its arguments.
	Args []string
	// Env is added to the gateway's own environment, overriding it.
	Env map[string]string
	// Dir is its working directory; empty means the gateway's.
	Dir string
	// KillGrace is how long it gets to exit after its input was closed; 0 means 2 s.
	KillGrace time.Duration
}

func (s Stdio) check() error {
	if s.Command == "" {
		return errors.New("command is empty")
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("env: invalid variable name %q", k)
		}
	}
	return nil
}

func (s Stdio) transport(g *Gateway, name string) (upstream.Transport, error) {
	env := make([]string, 0, len(s.Env))
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+s.Env[k])
	}
	log := g.log.With(zap.String("upstream", name))
	return upstream.Stdio{
		Command: s.Command, Args: s.Args, Env: env, Dir: s.Dir, KillGrace: s.KillGrace,
		Stderr: func(line string) { log.Debug("upstream stderr", zap.String("line", line)) },
	}, nil
}

// InProcess is another server of this process, mounted through an in-memory connection: no
// encoding beyond the messages themselves, no I/O, and every message related to the call it
// belongs to. Changes to its tools, resources and prompts show at once (it announces them).
// The mounted server is the caller's: the gateway neither starts nor closes it.
//
// A tool set (Tools, with Server nil) is served so too: the gateway makes a server of the
// tools, named after the mount, when the mount is made, and closes it with the mount.
type InProcess struct {
	Server *toolgrain.Server
	Tools  []tools.Tool
}

func (s InProcess) check() error {
	if s.Server == nil {
		if len(s.Tools) == 0 {
			return errors.New("no server and no tools")
		}
		return nil
	}
	if _, ok := enginehook.Of(s.Server); !ok {
		return errors.New("no server")
	}
	return nil
}

func (s InProcess) transport(*Gateway, string) (upstream.Transport, error) {
	h, _ := enginehook.Of(s.Server)
	return upstream.Memory{Engine: h.Engine}, nil
}

// sourceKind names a source in errors.
func sourceKind(s Source) string {
	switch s.(type) {
	case Stdio, *Stdio:
		return "stdio"
	case InProcess, *InProcess:
		return "in-process"
	case HTTP, *HTTP:
		return "http"
	}
	return fmt.Sprintf("%T", s)
}
