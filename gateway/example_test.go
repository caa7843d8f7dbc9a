package gateway_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// A server of the same process mounted under a prefix: its tools are served as PREFIX_NAME,
// beside the front server's own, and calls of them go to it.
func Example_inProcess() {
	weather, err := toolgrain.NewServer(toolgrain.Config{Name: "weather", Tools: []tools.Tool{{
		Name: "forecast", Description: "Tomorrow's weather.",
		Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
			return tools.TextResult("sunny"), nil
		}),
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer weather.Close()

	front, err := toolgrain.NewServer(toolgrain.Config{Name: "front"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer front.Close()
	gw, err := gateway.New(front, gateway.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()
	if err := gw.Mount(gateway.Mount{Name: "weather", Source: gateway.InProcess{Server: weather}}); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := gw.WaitReady(ctx); err != nil { // the first listing; a server serves without waiting
		fmt.Println(err)
		return
	}

	client, err := front.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	list, err := client.ListTools(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.CallTool(ctx, "weather_forecast", map[string]any{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(list[0].Name, res.Content[0].Text)
	// Output: weather_forecast sunny
}

// An MCP server run as a command over stdio, with its tools filtered and one transformed. The
// gateway starts it, restarts it when it exits and ends it on Close. (Not run: it needs the
// command.)
func Example_stdio() {
	front, err := toolgrain.NewServer(toolgrain.Config{Name: "front"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer front.Close()
	gw, err := gateway.New(front, gateway.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()
	err = gw.Mount(gateway.Mount{
		Name:    "files",
		Source:  gateway.Stdio{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"}},
		Exclude: []string{"write_*", "edit_file", "move_file"},
		Timeout: 30 * time.Second,
	})
	if err != nil {
		fmt.Println(err) // a bad mount, never a missing command: that one is retried
		return
	}
	if err := front.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Println(err)
	}
}

// Tags on a mounted server's components: the mount's on every one, and one tool's own through
// its transform. The front's rule shows the components tagged ops only to callers with the scope
// admin; to the others weather_alerts does not exist.
func Example_tags() {
	weather, err := toolgrain.NewServer(toolgrain.Config{Name: "weather", Tools: []tools.Tool{
		{Name: "forecast", Description: "Tomorrow's weather.", Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
			return tools.TextResult("sunny"), nil
		})},
		{Name: "alerts", Description: "Send a storm alert.", Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
			return tools.TextResult("sent"), nil
		})},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer weather.Close()
	front, err := toolgrain.NewServer(toolgrain.Config{Name: "front", Visibility: visibility.Config{Rules: []visibility.Rule{
		{Tags: []string{"ops"}, Scopes: []string{"admin"}},
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer front.Close()
	gw, err := gateway.New(front, gateway.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()
	err = gw.Mount(gateway.Mount{
		Name:   "weather",
		Source: gateway.InProcess{Server: weather},
		Tags:   []string{"weather"},
		Tools:  map[string]gateway.ToolTransform{"alerts": {Tags: []string{"ops"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := gw.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range []*toolgrain.Identity{{Subject: "ada", Scopes: []string{"mcp"}}, {Subject: "root", Scopes: []string{"admin"}}} {
		client, err := front.ConnectInMemoryAs(id)
		if err != nil {
			fmt.Println(err)
			return
		}
		if _, err := client.Initialize(ctx); err != nil {
			fmt.Println(err)
			return
		}
		list, err := client.ListTools(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		var names []string
		for _, tl := range list {
			names = append(names, tl.Name)
		}
		_, err = client.CallTool(ctx, "weather_alerts", map[string]any{})
		fmt.Println(id.Subject, names, err)
		_ = client.Close()
	}
	// Output:
	// ada [weather_forecast] Invalid params: unknown tool "weather_alerts" (code -32602)
	// root [weather_forecast weather_alerts] <nil>
}
