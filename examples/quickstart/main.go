// Command quickstart is a first MCP server: one typed tool, add, served over stdio.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"log"
	"os"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/tools"
)

// AddIn is the tool's arguments; its input schema is inferred from this type.
type AddIn struct {
	A    int    `json:"a" jsonschema:"description=The first term"`
	B    int    `json:"b" jsonschema:"description=The second term"`
	Note string `json:"note,omitempty"`
}

// AddOut is the tool's structured output; its output schema is inferred from this type.
type AddOut struct {
	Sum int `json:"sum"`
}

func add(ctx context.Context, in AddIn) (AddOut, error) {
	return AddOut{Sum: in.A + in.B}, nil
}

func newServer() (*toolgrain.Server, error) {
	return toolgrain.NewServer(toolgrain.Config{
		Name: "quickstart",
		Tools: []tools.Tool{{
			Name:        "add",
			Description: "Adds two integers.",
			Handler:     tools.Structured(add),
		}},
		// Unexpected failures reach the client as "Tool execution failed", and the operator here.
		OnError: func(err error, d *diagnostics.ToolErrorDetails) {
			log.Printf("tool %s, request %s: %v", d.ToolName(), d.Request().ID(), err)
		},
	})
}

func main() {
	srv, err := newServer()
	if err != nil {
		log.Fatal(err) // a *tools.ToolNameError or *tools.ToolSchemaError, never a panic
	}
	err = srv.ServeStdio(context.Background(), os.Stdin, os.Stdout) // until stdin ends
	srv.Close()
	if err != nil {
		log.Fatal(err)
	}
}
