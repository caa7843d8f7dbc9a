// Package demo is the demonstration tool set served by cmd/server: echo, greet, sleep, fail and
// spin.
// It is a contract that tests, benchmarks and outside clients rely on: names, schemas and
// behaviour do not change.
package demo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// Marker is contained in the internal text of every unexpected failure of the fail tool. It must
// never reach a client.
const Marker = "SECRET-internal-detail"

// errBackend is what the fail tool's provider returns: an outage of a dependency.
var errBackend = errors.New("backend unavailable: dial tcp 10.0.0.7:5432: " + Marker)

// backend stands for a dependency a tool needs per call (a database handle, an API client). In
// the demonstration it is always down.
var backend = tools.NewDependency("backend", func(ctx context.Context) (*struct{}, error) {
	return nil, errBackend
})

// The demonstration tools' arguments and outputs. Their schemas are inferred from these types
// (tools.Func, tools.Structured, tools.Tool.OutputType), never written by hand; what clients
// see is a contract: every argument required, no other allowed, ms an integer from 0 to
// 600,000, mode one of five strings.
type (
	echoIn struct {
		Text string `json:"text"`
	}
	greetIn struct {
		Name string `json:"name"`
	}
	greetOut struct {
		Greeting string `json:"greeting"`
	}
	sleepIn struct {
		MS int64 `json:"ms" jsonschema:"minimum=0,maximum=600000"`
	}
	sleepTaskIn struct {
		MS int64 `json:"ms" jsonschema:"minimum=0,maximum=86400000"`
	}
	failIn struct {
		Mode string `json:"mode" jsonschema:"enum=result,enum=error,enum=panic,enum=bad-output,enum=provider"`
	}
	// failOut is the fail tool's output, which its bad-output mode breaks.
	failOut struct {
		Status string `json:"status"`
	}
)

// Tools returns the demonstration tools, freshly built.
func Tools() []tools.Tool {
	return []tools.Tool{
		{
			Name:        "echo",
			Description: "Returns the given text unchanged.",
			Handler: tools.Func(func(ctx context.Context, in echoIn) (*tools.Result, error) {
				return tools.TextResult(in.Text), nil
			}),
		},
		{
			Name:        "greet",
			Description: "Greets someone by name, as text and as structured content.",
			Handler: tools.Structured(func(ctx context.Context, in greetIn) (greetOut, error) {
				return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
			}),
		},
		{
			Name:        "sleep",
			Description: "Waits ms milliseconds, honouring cancellation, then returns \"slept\". Sends progress notifications when the call has a progressToken.",
			Handler:     tools.Func(sleep),
		},
		{
			Name:        "fail",
			Description: "Fails in the chosen way: result (an explicit public error result), error (a handler error), panic, bad-output (structured content that violates the output schema) or provider (a dependency is down).",
			OutputType:  reflect.TypeFor[failOut](),
			Handler:     tools.Func(fail),
		},
		Spin(),
	}
}

// progressEvery is the interval between two progress notifications of the sleep tool; it sends
// them only when the client asked for progress, and keeps no ticker otherwise.
const progressEvery = 100 * time.Millisecond

func sleep(ctx context.Context, in sleepIn) (*tools.Result, error) {
	total := time.Duration(in.MS) * time.Millisecond
	timer := time.NewTimer(total)
	defer timer.Stop()
	var tick <-chan time.Time
	if total > progressEvery && tools.ProgressRequested(ctx) {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	max := float64(in.MS)
	for {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-tick:
			done := float64(time.Since(start).Milliseconds())
			_ = tools.ReportProgress(ctx, min(done, max), &max, "sleeping")
		case <-timer.C:
			return tools.TextResult("slept"), nil
		}
	}
}

func fail(ctx context.Context, in failIn) (*tools.Result, error) {
	switch in.Mode {
	case "result":
		return tools.ErrorResult("public failure message"), nil
	case "error":
		return nil, fmt.Errorf("query failed: password authentication failed for user \"app\": %s", Marker)
	case "panic":
		panic("invariant violated: " + Marker)
	case "bad-output":
		return &tools.Result{
			Content:           []protocol.Content{protocol.TextContent("status: " + Marker)},
			StructuredContent: map[string]any{"status": 42, "detail": Marker},
		}, nil
	case "provider":
		// The backend is resolved lazily, only in this mode, so the failure is wrapped here
		// the way the engine wraps a failing declared provider.
		if _, err := backend.Get(ctx); err != nil {
			return nil, &tools.ProviderError{Tool: "fail", Provider: backend.ProviderName(), Err: err}
		}
		return tools.TextResult("unreachable"), nil
	}
	return nil, fmt.Errorf("unknown mode %q", in.Mode)
}

// TaskTools returns the demonstration task tool, served by cmd/server when tasks are on
// (--task-store): sleep_task, which is sleep as a task for a client that declares the tasks
// extension (io.modelcontextprotocol/tasks), and an ordinary call for any other. It is kept
// apart from Tools, whose list is a contract.
func TaskTools() []tools.Tool {
	return []tools.Tool{{
		Name:        "sleep_task",
		Description: "Waits ms milliseconds, honouring cancellation, then returns \"slept\": a task for a client that declares the tasks extension.",
		TaskSupport: tools.TaskOptional,
		Handler:     tools.Func(func(ctx context.Context, in sleepTaskIn) (*tools.Result, error) { return sleep(ctx, sleepIn(in)) }),
	}}
}
