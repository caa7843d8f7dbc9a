package toolgrain_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/tools"
)

type echoInput struct {
	Text string `json:"text" jsonschema:"description=The text to return"`
}

// echoTool is the tool the examples serve. Its input schema is inferred from echoInput when the
// server starts: an object whose "text" is a required string.
var echoTool = tools.Tool{
	Name:        "echo",
	Description: "Returns the given text.",
	Handler: tools.Func(func(ctx context.Context, in echoInput) (*tools.Result, error) {
		return tools.TextResult(in.Text), nil
	}),
}

// A server is built from tool definitions; NewServer compiles their schemas once and starts the
// actor tree. Here a client in the same process calls the tool.
func ExampleNewServer() {
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Name:  "example",
		Tools: []tools.Tool{echoTool},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	info, err := client.Initialize(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.CallTool(ctx, "echo", map[string]string{"text": "hello"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.ServerInfo.Name, res.Content[0].Text)
	// Output: example hello
}

// Construction problems are returned by NewServer, never panicked, and never become tool-call
// errors.
func ExampleNewServer_errors() {
	_, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{
		{Name: "bad name", Handler: echoTool.Handler},
		{Name: "ok", InputSchema: json.RawMessage(`{"type":"array"}`), Handler: echoTool.Handler},
	}})
	var nameErr *tools.ToolNameError
	var schemaErr *tools.ToolSchemaError
	fmt.Println(errors.As(err, &nameErr), nameErr.Reason)
	fmt.Println(errors.As(err, &schemaErr), schemaErr.Tool, schemaErr.Kind)
	// Output:
	// true invalid character ' ' at position 3 (A-Za-z0-9_.- allowed)
	// true ok input
}

// ServeStdio serves one connection over newline-delimited JSON-RPC on any reader and writer:
// os.Stdin and os.Stdout, a pipe, a net.Conn.
func ExampleServer_ServeStdio() {
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{echoTool}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- srv.ServeStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	out := bufio.NewScanner(outR)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over stdio"}}}`,
	} {
		fmt.Fprintln(inW, line)
	}
	out.Scan() // the initialize result
	out.Scan()
	fmt.Println(out.Text())
	inW.Close() // EOF ends the connection
	fmt.Println(<-served)
	// Output:
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"over stdio"}]}}
	// <nil>
}

// An unexpected failure reaches the client only as "Tool execution failed"; the original error
// goes to OnError, with the tool name and the request, never the arguments. Close delivers the
// pending reports before it returns.
func ExampleServer_ConnectInMemory() {
	var reported []string
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: []tools.Tool{{
			Name: "lookup",
			Handler: tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
				return nil, errors.New("dial tcp 10.0.0.7:5432: connection refused")
			}),
		}},
		OnError: func(err error, d *toolgrain.ToolErrorDetails) {
			reported = append(reported, fmt.Sprintf("%s %s: %v", d.ToolName(), d.Request().ID(), err))
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.CallTool(ctx, "lookup", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("client:", res.Content[0].Text, res.IsError)
	client.Close()
	srv.Close()
	fmt.Println("operator:", strings.Join(reported, "; "))
	// Output:
	// client: Tool execution failed true
	// operator: lookup 2: dial tcp 10.0.0.7:5432: connection refused
}

// stockInput is the arguments of the stock tool, whose actor decodes them.
type stockInput struct {
	Item string `json:"item"`
}

// inventory is a host actor: it owns its state and answers tools.ActorCall messages.
type inventory struct{ stock map[string]int }

func (a *inventory) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *tools.ActorCall:
		var in stockInput
		_ = json.Unmarshal(m.Arguments, &in)
		n, ok := a.stock[in.Item]
		if !ok {
			// The client may see this: a public error result.
			ctx.Respond(&tools.ActorResult{Result: tools.ErrorResult("unknown item " + in.Item)})
			return
		}
		ctx.Respond(&tools.ActorResult{Result: tools.TextResult(fmt.Sprintf("%d %s in stock", n, in.Item))})
	case *tools.ActorCancel:
		// The engine stopped waiting for call m.ID: drop any work started for it.
	}
}

// A tool backed by the host's own actor: the server runs on the host's actor system and sends
// the actor one tools.ActorCall per call, without blocking any actor.
func Example_actorTool() {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer system.Shutdown()
	stock := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &inventory{stock: map[string]int{"bolts": 12}}
	}))
	defer system.Root.Stop(stock)

	srv, err := toolgrain.NewServer(toolgrain.Config{
		ActorSystem: system,
		Tools: []tools.Tool{{
			Name:        "stock",
			Description: "How many of an item are in stock.",
			InputType:   reflect.TypeFor[stockInput](), // the schema of the ActorCall's arguments
			Handler:     tools.NewActorHandler(system, stock),
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close() // stops the server's actors only: the host's system and actor keep running

	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, item := range []string{"bolts", "nuts"} {
		res, err := client.CallTool(ctx, "stock", map[string]string{"item": item})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Content[0].Text, res.IsError)
	}
	// Output:
	// 12 bolts in stock false
	// unknown item nuts true
}

// Metrics go to a metrics.Recorder of the host's choosing: metrics.Memory here, or
// metrics/prom's Collector registered on the host's own Prometheus registry.
func Example_metrics() {
	rec := metrics.NewMemory()
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{echoTool}, Telemetry: toolgrain.TelemetryConfig{Metrics: rec}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_, _ = client.CallTool(ctx, "echo", map[string]string{"text": "a"})
	_, _ = client.CallTool(ctx, "echo", map[string]int{"text": 1})
	s := rec.Snapshot()
	fmt.Println(s.Calls("echo", metrics.OK), s.Calls("echo", metrics.Invalid), s.InFlight)
	// Output: 1 1 0
}

// A call that runs past its timeout is an unexpected failure: its client gets the generic
// result, and OnError an error that wraps ErrToolTimeout, which tells it from the handler's own
// failures.
func Example_toolTimeout() {
	reports := make(chan error, 1)
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: []tools.Tool{{
			Name:    "wait",
			Timeout: 10 * time.Millisecond,
			Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				<-ctx.Done() // ended by the timeout
				return nil, ctx.Err()
			}),
		}},
		OnError: func(err error, _ *toolgrain.ToolErrorDetails) { reports <- err },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.CallTool(ctx, "wait", map[string]any{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.IsError, res.Content[0].Text == toolgrain.FailedText)
	fmt.Println(errors.Is(<-reports, toolgrain.ErrToolTimeout))
	// Output:
	// true true
	// true
}

// Shutdown ends every connection and cancels the calls in flight: their handlers see their
// context cancelled and the clients get no response for them. Then the pending OnError reports
// are delivered and the actors stop.
func ExampleServer_Shutdown() {
	started := make(chan struct{})
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{{
		Name: "wait",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			close(started)
			<-ctx.Done()
			fmt.Println("handler:", context.Cause(ctx))
			return nil, ctx.Err()
		}),
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	called := make(chan error, 1)
	go func() {
		_, err := client.CallTool(ctx, "wait", nil)
		called <- err
	}()
	<-started

	shutCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fmt.Println("shutdown:", srv.Shutdown(shutCtx))
	fmt.Println("client:", <-called)
	// Output:
	// handler: connection closed
	// shutdown: <nil>
	// client: toolgrain: in-memory connection closed
}

// A Call whose context ends sends notifications/cancelled for its request: the handler's
// context is cancelled and the server sends nothing more for that request.
func ExampleInMemoryClient_Call() {
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{{
		Name: "wait",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	if _, err := client.Initialize(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = client.Call(ctx, "tools/call", map[string]any{"name": "wait"})
	fmt.Println(err)
	// Output: context deadline exceeded
}

// AddIn and AddOut are the arguments and the structured output of the add tool.
type AddIn struct {
	A    int    `json:"a" jsonschema:"description=The first term"`
	B    int    `json:"b" jsonschema:"description=The second term"`
	Note string `json:"note,omitempty"`
}

type AddOut struct {
	Sum int `json:"sum"`
}

// A typed tool needs no schema text: the input schema comes from AddIn (a and b required
// integers, note an optional string) and the output schema from AddOut, once, in NewServer.
// Arguments are validated against them before the function runs.
func Example_typedTool() {
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{{
		Name:        "add",
		Description: "Adds two integers.",
		Handler: tools.Structured(func(ctx context.Context, in AddIn) (AddOut, error) {
			return AddOut{Sum: in.A + in.B}, nil
		}),
	}}})
	if err != nil {
		fmt.Println(err) // a *tools.ToolSchemaError for a type no schema can describe
		return
	}
	defer srv.Close()
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	list, _ := client.ListTools(ctx)
	fmt.Println(string(list[0].InputSchema))
	for _, args := range []map[string]any{{"a": 1, "b": 2}, {"a": "x", "b": 2}, {"b": 2}} {
		res, err := client.CallTool(ctx, "add", args)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(res.StructuredContent), res.Content[0].Text, res.IsError)
	}
	// Output:
	// {"properties":{"a":{"type":"integer","description":"The first term"},"b":{"type":"integer","description":"The second term"},"note":{"type":"string"}},"additionalProperties":false,"type":"object","required":["a","b"]}
	// {"sum":3} {"sum":3} false
	//  invalid arguments: a: must be integer, got string true
	//  invalid arguments: a: missing property true
}

// Middleware wraps every tool call, after its arguments were validated; the first is the
// outermost. A middleware refuses a call with tools.ErrorResult, which the client sees; an
// error or a panic would be an unexpected failure, which it would not.
func Example_middleware() {
	allowed := map[string]bool{"echo": true}
	onlyAllowed := func(next tools.Handler) tools.Handler {
		return tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
			if !allowed[req.Tool] {
				return tools.ErrorResult("tool " + req.Tool + " is switched off"), nil
			}
			return next.Handle(ctx, req)
		})
	}
	shout := func(next tools.Handler) tools.Handler {
		return tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
			res, err := next.Handle(ctx, req)
			if err != nil || res.IsError {
				return res, err
			}
			return tools.TextResult(strings.ToUpper(res.Content[0].Text)), nil
		})
	}
	off := echoTool
	off.Name = "echo2"
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools:      []tools.Tool{echoTool, off},
		Middleware: []tools.Middleware{onlyAllowed, shout},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"echo", "echo2"} {
		res, err := client.CallTool(ctx, name, map[string]string{"text": "hello"})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Content[0].Text, res.IsError)
	}
	// Output:
	// HELLO false
	// tool echo2 is switched off true
}
