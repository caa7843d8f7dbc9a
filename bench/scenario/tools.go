package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgrain/toolgrain/bench/client"
)

// ToolCall names a tool of the server under test and the arguments a
// scenario calls it with, so that any server can be measured with its own
// tools. The zero ToolCall means the demonstration tool the scenario uses
// by default (echo, sleep or spin).
type ToolCall struct {
	// Name is the tool's name.
	Name string
	// Args are the arguments, a JSON object; nil means {}.
	Args json.RawMessage
}

// IsZero reports whether the call is unset.
func (t ToolCall) IsZero() bool { return t.Name == "" }

// ParseArgs checks that s is a JSON object and returns it compacted; the
// empty string is {}.
func ParseArgs(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil || obj == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("want a JSON object such as {\"text\":\"hi\"}: %v", err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Defaults of the demonstration tools.
const (
	// DefaultCPUMs is how long each spin call of the cancel-cpu scenario asks
	// to run: long enough that a server which does not stop cancelled work is
	// still spinning when the measurement after the cancellation ends.
	DefaultCPUMs = 10000
)

// call is a tool call prepared for a scenario: its tools/call params,
// encoded once, and how to tell a correct answer.
type call struct {
	name   string
	params json.RawMessage
	// check returns nil for a correct answer.
	check func(*client.Message) error
}

// ok calls check on a reply that came without a transport error.
func (c call) ok(msg *client.Message, err error) bool {
	return err == nil && c.check(msg) == nil
}

// fastCall is the call of the throughput and mixed loads and of the
// cancel scenario's follow-up: echo with text, which must come back
// unchanged, or cfg.Fast, whose answer must be a result that is not an
// error.
func fastCall(cfg Config, text string) call {
	if cfg.Fast.IsZero() {
		return call{name: "echo", params: toolParams("echo", map[string]any{"text": text}), check: func(m *client.Message) error {
			r, err := client.DecodeToolResult(m)
			switch {
			case err != nil:
				return err
			case r.IsError:
				return errors.New("isError result")
			case r.Text() != text:
				return errors.New("wrong echo text")
			}
			return nil
		}}
	}
	return customCall(cfg.Fast)
}

// slowCall is the long call the cancel and mixed scenarios put in flight
// and cancel: sleep {ms}, or cfg.Slow.
func slowCall(cfg Config, ms int) call {
	if cfg.Slow.IsZero() {
		return call{name: "sleep", params: toolParams("sleep", map[string]any{"ms": ms}), check: resultOK}
	}
	return customCall(cfg.Slow)
}

// cpuCall is the CPU-bound call of the cancel-cpu scenario: spin {ms}, or
// cfg.CPU.
func cpuCall(cfg Config) call {
	if cfg.CPU.IsZero() {
		return call{name: "spin", params: toolParams("spin", map[string]any{"ms": DefaultCPUMs}), check: resultOK}
	}
	return customCall(cfg.CPU)
}

func customCall(t ToolCall) call {
	args := t.Args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return call{name: t.Name, params: toolParams(t.Name, args), check: resultOK}
}

// resultOK accepts a tools/call result that is not an error: a JSON-RPC
// error (a refusal, an unknown tool, invalid params) and an isError result
// are failures, never answers.
func resultOK(m *client.Message) error {
	r, err := client.DecodeToolResult(m)
	if err != nil {
		return err
	}
	if r.IsError {
		return errors.New("isError result")
	}
	return nil
}

// errorKind sorts a failed call: "tool" (an isError result), "rpc" (a
// JSON-RPC error: a refusal, an unknown tool, invalid params) or "other"
// (a transport error, a timeout, a wrong answer).
func errorKind(msg *client.Message, err error) string {
	switch {
	case err != nil || msg == nil:
		return "other"
	case msg.Error != nil:
		return "rpc"
	}
	if r, derr := client.DecodeToolResult(msg); derr == nil && r.IsError {
		return "tool"
	}
	return "other"
}

// errorKinds records, when calls failed in the window, how many were
// isError results, JSON-RPC errors and other failures.
func errorKinds(r *Result, sum tally) {
	if sum.errors == 0 {
		return
	}
	r.set("errors_tool", float64(sum.errTool))
	r.set("errors_rpc", float64(sum.errRPC))
	r.set("errors_other", float64(sum.errors-sum.errTool-sum.errRPC))
}

// toolParamsOf records in params the tools a run called, when they are not
// the demonstration tools: tool/args, slow_tool/slow_args, cpu_tool/cpu_args.
func toolParamsOf(params map[string]any, prefix string, t ToolCall) {
	if t.IsZero() {
		return
	}
	params[prefix+"tool"] = t.Name
	args := string(t.Args)
	if args == "" {
		args = "{}"
	}
	params[prefix+"args"] = args
}

// firstCall makes the fast call once before a scenario's load, so that a
// target that cannot answer fails early, saying what came back. In the
// modern era a -32022 answer means the target does not serve it: the error
// wraps [ErrNotApplicable].
func firstCall(ctx context.Context, c *client.Client, cfg Config, scenario string, fc call) error {
	msg, err := callOnce(ctx, c, cfg.Timeout, "tools/call", fc.params)
	if fc.ok(msg, err) {
		return nil
	}
	if err == nil && msg.Error != nil && msg.Error.Code == codeUnsupportedVersion && c.Era() == client.Modern {
		return fmt.Errorf("%s: %w: the first %s call was refused: %s", scenario, ErrNotApplicable, fc.name, describe(msg, nil))
	}
	hint := ""
	if cfg.Fast.IsZero() {
		hint = " (a server without the demonstration tools: name one of its own with --tool and --args; mcpbench tools lists them)"
	}
	return fmt.Errorf("%s: a first %s call failed: %v%s", scenario, fc.name, describe(msg, err), hint)
}
