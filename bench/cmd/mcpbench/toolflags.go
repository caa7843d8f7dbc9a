package main

import (
	"flag"
	"fmt"

	"github.com/toolgrain/toolgrain/bench/scenario"
)

// toolFlags name the server's own tools the scenarios call, for a server
// without the demonstration tools.
type toolFlags struct {
	tool, args         string
	slowTool, slowArgs string
	cpuTool, cpuArgs   string
}

func (t *toolFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.tool, "tool", "", "the server's tool for the quick call of throughput and mixed, and the follow-up of cancel and cancel-cpu (default echo with -payload bytes of text; any other tool's answer must be a result that is not an error)")
	fs.StringVar(&t.args, "args", "", "--tool's arguments, a JSON object (default {})")
	fs.StringVar(&t.slowTool, "slow-tool", "", "the server's long call that cancel and mixed put in flight and cancel; it runs as long as its arguments say (default sleep {ms: -sleep})")
	fs.StringVar(&t.slowArgs, "slow-args", "", "--slow-tool's arguments, a JSON object (default {})")
	fs.StringVar(&t.cpuTool, "cpu-tool", "", fmt.Sprintf("the server's CPU-bound call for cancel-cpu (default spin {ms: %d})", scenario.DefaultCPUMs))
	fs.StringVar(&t.cpuArgs, "cpu-args", "", "--cpu-tool's arguments, a JSON object (default {})")
}

// apply checks the flags and sets them in cfg.
func (t *toolFlags) apply(cfg *scenario.Config) error {
	for _, f := range []struct {
		flag, name, args string
		dst              *scenario.ToolCall
	}{
		{"tool", t.tool, t.args, &cfg.Fast},
		{"slow-tool", t.slowTool, t.slowArgs, &cfg.Slow},
		{"cpu-tool", t.cpuTool, t.cpuArgs, &cfg.CPU},
	} {
		argsFlag := "args"
		if f.flag != "tool" {
			argsFlag = f.flag[:len(f.flag)-len("tool")] + "args"
		}
		if f.name == "" {
			if f.args != "" {
				return fmt.Errorf("--%s needs --%s: arguments of which tool?", argsFlag, f.flag)
			}
			continue
		}
		args, err := scenario.ParseArgs(f.args)
		if err != nil {
			return fmt.Errorf("--%s: %w", argsFlag, err)
		}
		*f.dst = scenario.ToolCall{Name: f.name, Args: args}
	}
	return nil
}
