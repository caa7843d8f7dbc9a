// Command gosdk serves the demonstration tool set (echo, greet, sleep, spin, fail)
// with github.com/modelcontextprotocol/go-sdk, written the way that SDK's
// documentation and examples teach: typed handlers registered with
// [mcp.AddTool], schemas inferred from Go types and refined where the
// contract needs bounds, errors returned from handlers.
//
// Panic recovery: the SDK has none, so a panicking handler kills the process.
// Production users of this SDK add a receiving middleware that recovers; this
// peer does too (on by default, --recover=false shows the SDK's own
// behaviour).
//
// The modern era (MCP 2026-07-28): the SDK serves it per request over stdio.
// Over HTTP its default, stateful handler answers modern requests with -32022
// and serves it only in stateless mode, which --stateless switches on. A
// closed response stream then cancels the handler only with the option
// PropagateRequestCancellation, which the spec's "MUST treat a client
// disconnect as cancellation" asks for: on with --stateless
// (--propagate-cancellation=false shows the SDK's default).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgrain/toolgrain/bench/peers/internal/demo"
)

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
		Ms int `json:"ms" jsonschema:"milliseconds to sleep"`
	}
	spinIn struct {
		Ms int `json:"ms" jsonschema:"milliseconds to keep a CPU busy"`
	}
	failIn struct {
		Mode string `json:"mode"`
	}
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gosdk:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	var opts demo.Options
	fs := flag.NewFlagSet("gosdk", flag.ContinueOnError)
	opts.Register(fs)
	recoverPanics := fs.Bool("recover", true, "recover handler panics in a receiving middleware")
	jsonResponse := fs.Bool("json-response", false, "HTTP: answer with application/json instead of an SSE stream")
	stateless := fs.Bool("stateless", false, "HTTP: stateless mode, no sessions: the only mode in which the SDK serves MCP 2026-07-28 over HTTP")
	propagate := fs.Bool("propagate-cancellation", true, "HTTP, with --stateless: a modern request's closed stream cancels its handler")
	touch := fs.Bool("touch-tool", false, `also serve touch, which changes the tool list on demand ({"list":"tools"}), for mcpbench clients --trigger`)
	if err := opts.Parse(fs, args); err != nil {
		return err
	}
	stopPprof, err := demo.StartPprof(opts.Pprof, stderr)
	if err != nil {
		return err
	}
	defer stopPprof()
	server, err := newServer(*recoverPanics)
	if err != nil {
		return err
	}
	if *touch {
		addTouch(server)
	}
	ctx, stop := demo.SignalContext()
	defer stop()
	if opts.Transport == "stdio" {
		return server.Run(ctx, &mcp.StdioTransport{})
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{
			JSONResponse:                 *jsonResponse,
			Stateless:                    *stateless,
			PropagateRequestCancellation: *stateless && *propagate,
		})
	mux := http.NewServeMux()
	mux.Handle(demo.EndpointPath, handler)
	return demo.ServeHTTP(ctx, opts.Addr, mux, stderr)
}

func newServer(recoverPanics bool) (*mcp.Server, error) {
	server := mcp.NewServer(&mcp.Implementation{Name: "gosdk-peer", Version: "1.0.0"}, nil)
	if recoverPanics {
		server.AddReceivingMiddleware(recoverMiddleware)
	}

	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns its text."}, echo)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greets someone by name."}, greet)

	sleepSchema, err := jsonschema.For[sleepIn](nil)
	if err != nil {
		return nil, err
	}
	sleepSchema.Properties["ms"].Minimum = jsonschema.Ptr(0.0)
	sleepSchema.Properties["ms"].Maximum = jsonschema.Ptr(float64(demo.MaxSleepMs))
	mcp.AddTool(server, &mcp.Tool{Name: "sleep", Description: "Waits ms milliseconds.", InputSchema: sleepSchema}, sleep)

	spinSchema, err := jsonschema.For[spinIn](nil)
	if err != nil {
		return nil, err
	}
	spinSchema.Properties["ms"].Minimum = jsonschema.Ptr(0.0)
	spinSchema.Properties["ms"].Maximum = jsonschema.Ptr(float64(demo.MaxSleepMs))
	mcp.AddTool(server, &mcp.Tool{Name: "spin", Description: "Keeps a CPU busy for ms milliseconds.", InputSchema: spinSchema}, spin)

	failSchema, err := jsonschema.For[failIn](nil)
	if err != nil {
		return nil, err
	}
	for _, m := range demo.Modes {
		failSchema.Properties["mode"].Enum = append(failSchema.Properties["mode"].Enum, m)
	}
	var failOut jsonschema.Schema
	if err := json.Unmarshal([]byte(demo.FailOutputSchema), &failOut); err != nil {
		return nil, err
	}
	mcp.AddTool(server, &mcp.Tool{
		Name:         "fail",
		Description:  "Fails in the chosen way.",
		InputSchema:  failSchema,
		OutputSchema: &failOut,
	}, fail)
	return server, nil
}

func recoverMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("internal error: %v", r)
			}
		}()
		return next(ctx, method, req)
	}
}

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: text(in.Text)}, nil, nil
}

func greet(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, greetOut, error) {
	g := demo.Greeting(in.Name)
	return &mcp.CallToolResult{Content: text(g)}, greetOut{Greeting: g}, nil
}

func sleep(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
	total := time.Duration(in.Ms) * time.Millisecond
	timer := time.NewTimer(total)
	defer timer.Stop()
	// Progress once a second, only when the client asked for it.
	var tick <-chan time.Time
	token := req.Params.GetProgressToken()
	if token != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-timer.C:
			return &mcp.CallToolResult{Content: text(demo.SleptText)}, nil, nil
		case <-tick:
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(time.Since(start).Milliseconds()),
				Total:         float64(in.Ms),
			})
		}
	}
}

func spin(ctx context.Context, _ *mcp.CallToolRequest, in spinIn) (*mcp.CallToolResult, any, error) {
	if err := demo.Spin(ctx, time.Duration(in.Ms)*time.Millisecond); err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: text(demo.SpunText)}, nil, nil
}

func fail(ctx context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
	switch in.Mode {
	case "result":
		return &mcp.CallToolResult{IsError: true, Content: text(demo.PublicFailure)}, nil, nil
	case "error":
		return nil, nil, demo.ErrInternal
	case "panic":
		panic(demo.PanicValue)
	case "bad-output":
		return nil, demo.BadOutput(), nil
	case "provider":
		if err := demo.Provider(ctx); err != nil {
			return nil, nil, err
		}
	}
	return nil, nil, fmt.Errorf("unknown mode %q", in.Mode)
}
