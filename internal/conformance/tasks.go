package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// The fixtures of the conformance suite's tasks scenarios (the io.modelcontextprotocol/tasks
// extension, SEP-2663): a tool that never runs as a task (greet), tools that may or must, one
// that asks for input inside its task, one that asks for two inputs at once, and one that asks
// on the call itself before it becomes a task.

type (
	greetIn struct {
		Name string `json:"name"`
	}
	greetOut struct {
		Greeting string `json:"greeting"`
	}
	computeIn struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label"`
	}
	deleteIn struct {
		Filename string `json:"filename"`
	}
)

// confirmSchema asks for a yes or no.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`)

// TaskTools returns the tools of the tasks scenarios. Their greet has the name, arguments and
// structured output of the demonstration tool set's, and a text that is the greeting itself:
// a server serving both serves this one.
func TaskTools() []tools.Tool {
	return []tools.Tool{
		{
			Name:        "greet",
			Description: "Greets someone by name (never runs as a task).",
			OutputType:  reflect.TypeFor[greetOut](), // the input schema is greetIn's
			Handler: tools.Func(func(ctx context.Context, in greetIn) (*tools.Result, error) {
				g := "Hello, " + in.Name + "!"
				return &tools.Result{Content: []protocol.Content{text(g)}, StructuredContent: greetOut{Greeting: g}}, nil
			}),
		},
		{
			Name:        "slow_compute",
			Description: "Waits the given seconds (a task for a client that declares the tasks extension), then returns a result.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0,"maximum":3600},"label":{"type":"string"}},"required":["seconds"]}`),
			TaskSupport: tools.TaskOptional,
			Handler: tools.Func(func(ctx context.Context, in computeIn) (*tools.Result, error) {
				if err := wait(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
					return nil, err
				}
				return tools.TextResult(fmt.Sprintf("Computed %q after %gs", in.Label, in.Seconds)), nil
			}),
		},
		{
			Name:        "failing_job",
			Description: "Runs only as a task, and ends after a second with a tool error result.",
			InputSchema: noArgs,
			TaskSupport: tools.TaskRequired,
			Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				if err := wait(ctx, time.Second); err != nil {
					return nil, err
				}
				return tools.ErrorResult("The job failed: the input could not be processed."), nil
			}),
		},
		{
			Name:        "protocol_error_job",
			Description: "Runs as a task, and panics: the task fails with the generic error.",
			InputSchema: noArgs,
			TaskSupport: tools.TaskOptional,
			Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
				panic("protocol_error_job: the job crashed")
			}),
		},
		{
			Name:        "confirm_delete",
			Description: "Runs as a task that asks the user to confirm the deletion of a file (key confirm).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}`),
			TaskSupport: tools.TaskOptional,
			Handler: tools.Func(func(ctx context.Context, in deleteIn) (*tools.Result, error) {
				answers, err := client.Input(ctx, map[string]client.InputRequest{"confirm": client.ElicitInput(&protocol.ElicitParams{
					Message: "Delete " + in.Filename + "?", RequestedSchema: confirmSchema,
				})})
				if err != nil {
					return nil, err
				}
				res, err := answers["confirm"].Elicit()
				if err != nil {
					return nil, err
				}
				var c struct {
					Confirm bool `json:"confirm"`
				}
				if res.Action == protocol.ElicitAccept && json.Unmarshal(res.Content, &c) == nil && c.Confirm {
					return tools.TextResult("Deleted " + in.Filename), nil
				}
				return tools.TextResult("Kept " + in.Filename), nil
			}),
		},
		{
			Name:        "multi_input",
			Description: "Runs as a task that asks for two inputs at once (keys first and second).",
			InputSchema: noArgs,
			TaskSupport: tools.TaskOptional,
			Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				nameOnly := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)
				answers, err := client.Input(ctx, map[string]client.InputRequest{
					"first":  client.ElicitInput(&protocol.ElicitParams{Message: "First input?", RequestedSchema: nameOnly}),
					"second": client.ElicitInput(&protocol.ElicitParams{Message: "Second input?", RequestedSchema: nameOnly}),
				})
				if err != nil {
					return nil, err
				}
				return tools.TextResult(fmt.Sprintf("Got %s and %s", field(answers["first"], "name"), field(answers["second"], "name"))), nil
			}),
		},
		{
			Name:        "test_tool_with_task",
			Description: "Asks for the user's name on the call itself (key user_name), then goes on as a task that greets them.",
			InputSchema: noArgs,
			TaskSupport: tools.TaskRequired,
			DeferTask:   true,
			Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				in, err := client.Input(ctx, map[string]client.InputRequest{"user_name": elicitName("What is your name?")})
				if err != nil {
					return nil, err
				}
				if err := client.StartTask(ctx); err != nil {
					return nil, err
				}
				if err := wait(ctx, 200*time.Millisecond); err != nil {
					return nil, err
				}
				name := field(in["user_name"], "name")
				if name == "" {
					name = "there"
				}
				return tools.TextResult("Hello, " + name + "!"), nil
			}),
		},
	}
}

// wait waits d, or returns the cause of ctx's end.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
