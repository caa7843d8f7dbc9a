// Command mcpgo serves the demonstration tool set (echo, greet, sleep, spin, fail)
// with github.com/mark3labs/mcp-go, written the way that SDK's README and
// examples teach: tools built with mcp.NewTool and property options, plain
// handlers that read arguments with the request's Require* helpers.
//
// Options switched on (all opt-in in mcp-go):
//   - server.WithRecovery, so the fail tool's "panic" mode answers instead of
//     killing the HTTP connection (stdio recovers on its own);
//   - server.WithInputSchemaValidation and server.WithOutputSchemaValidation,
//     so this peer checks the same schemas as the other servers measured with
//     it (--validate=false measures mcp-go's default).
//
// The stdio worker pool keeps mcp-go's defaults (5 workers, queue 100) unless
// --workers or --queue are given.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgrain/toolgrain/bench/peers/internal/demo"
)

type greetOut struct {
	Greeting string `json:"greeting"`
}

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgo:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	var opts demo.Options
	fs := flag.NewFlagSet("mcpgo", flag.ContinueOnError)
	opts.Register(fs)
	validate := fs.Bool("validate", true, "validate tool input and output against their schemas")
	workers := fs.Int("workers", 0, "stdio: tool-call worker pool size (0: mcp-go's default)")
	queue := fs.Int("queue", 0, "stdio: tool-call queue size (0: mcp-go's default)")
	touch := fs.Bool("touch-tool", false, `also serve touch, which changes the tool list on demand ({"list":"tools"}), for mcpbench clients --trigger`)
	if err := opts.Parse(fs, args); err != nil {
		return err
	}
	stopPprof, err := demo.StartPprof(opts.Pprof, stderr)
	if err != nil {
		return err
	}
	defer stopPprof()
	s := newServer(*validate)
	if *touch {
		addTouch(s)
	}
	if opts.Transport == "stdio" {
		var stdioOpts []server.StdioOption
		if *workers > 0 {
			stdioOpts = append(stdioOpts, server.WithWorkerPoolSize(*workers))
		}
		if *queue > 0 {
			stdioOpts = append(stdioOpts, server.WithQueueSize(*queue))
		}
		return server.ServeStdio(s, stdioOpts...)
	}
	ctx, stop := demo.SignalContext()
	defer stop()
	return demo.ServeHTTP(ctx, opts.Addr, server.NewStreamableHTTPServer(s), stderr)
}

func newServer(validate bool) *server.MCPServer {
	// The tool list may change (listChanged): a subscriptions/listen for tool list changes is then
	// held open, as on the other servers measured, rather than acknowledged and ended at once.
	opts := []server.ServerOption{server.WithToolCapabilities(true), server.WithRecovery()}
	if validate {
		opts = append(opts, server.WithInputSchemaValidation(), server.WithOutputSchemaValidation())
	}
	s := server.NewMCPServer("mcpgo-peer", "1.0.0", opts...)

	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Returns its text."),
		mcp.WithString("text", mcp.Required()),
	), echo)
	s.AddTool(mcp.NewTool("greet",
		mcp.WithDescription("Greets someone by name."),
		mcp.WithString("name", mcp.Required()),
		mcp.WithOutputSchema[greetOut](),
	), greet)
	s.AddTool(mcp.NewTool("sleep",
		mcp.WithDescription("Waits ms milliseconds."),
		mcp.WithInteger("ms", mcp.Required(), mcp.Min(0), mcp.Max(demo.MaxSleepMs)),
	), sleep)
	s.AddTool(mcp.NewTool("spin",
		mcp.WithDescription("Keeps a CPU busy for ms milliseconds."),
		mcp.WithInteger("ms", mcp.Required(), mcp.Min(0), mcp.Max(demo.MaxSleepMs)),
	), spin)
	s.AddTool(mcp.NewTool("fail",
		mcp.WithDescription("Fails in the chosen way."),
		mcp.WithString("mode", mcp.Required(), mcp.Enum(demo.Modes...)),
		mcp.WithRawOutputSchema(json.RawMessage(demo.FailOutputSchema)),
	), fail)
	return s
}

func echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := req.RequireString("text")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(text), nil
}

func greet(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, err := req.RequireString("name")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	g := demo.Greeting(name)
	return mcp.NewToolResultStructured(greetOut{Greeting: g}, g), nil
}

func spin(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ms, err := req.RequireInt("ms")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if err := demo.Spin(ctx, time.Duration(ms)*time.Millisecond); err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(demo.SpunText), nil
}

func sleep(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ms, err := req.RequireInt("ms")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer timer.Stop()
	// Progress once a second, only when the client asked for it.
	var tick <-chan time.Time
	var token mcp.ProgressToken
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		token = req.Params.Meta.ProgressToken
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return mcp.NewToolResultText(demo.SleptText), nil
		case <-tick:
			server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": token,
				"progress":      time.Since(start).Milliseconds(),
				"total":         ms,
			})
		}
	}
}

func fail(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	mode, err := req.RequireString("mode")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	switch mode {
	case "result":
		return mcp.NewToolResultError(demo.PublicFailure), nil
	case "error":
		return nil, demo.ErrInternal
	case "panic":
		panic(demo.PanicValue)
	case "bad-output":
		return mcp.NewToolResultStructured(demo.BadOutput(), "bad output"), nil
	case "provider":
		if err := demo.Provider(ctx); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("unknown mode %q", mode)
}
