package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgrain/toolgrain/tools"
)

func ExampleCompile() {
	type sleepIn struct {
		MS int `json:"ms"`
	}
	set, err := tools.Compile([]tools.Tool{{
		Name:        "sleep",
		Description: "Waits for ms milliseconds.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"]}`),
		Handler: tools.Func(func(ctx context.Context, in sleepIn) (*tools.Result, error) {
			return tools.TextResult("slept"), nil
		}),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	sleep, _ := set.Lookup("sleep")

	_, feedback := sleep.ValidateInput(json.RawMessage(`{"ms": 700000}`))
	fmt.Println(feedback.IsError, feedback.Content[0].Text)

	args, _ := sleep.ValidateInput(json.RawMessage(`{"ms": 10}`))
	res, err := sleep.Run(context.Background(), &tools.Request{Tool: "sleep", Arguments: args})
	fmt.Println(res.Content[0].Text, err)
	// Output:
	// true invalid arguments: ms: must be <= 600000
	// slept <nil>
}

func ExampleCompile_errors() {
	_, err := tools.Compile([]tools.Tool{{
		Name:        "bad name!",
		Handler:     tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) { return nil, nil }),
		InputSchema: json.RawMessage(`{"type":"array"}`),
	}})
	var nameErr *tools.ToolNameError
	if errors.As(err, &nameErr) {
		fmt.Println(nameErr.Reason)
	}
	var schemaErr *tools.ToolSchemaError
	if errors.As(err, &schemaErr) {
		fmt.Println(schemaErr.Kind, errors.Unwrap(schemaErr))
	}
	// Output:
	// invalid character ' ' at position 3 (A-Za-z0-9_.- allowed)
	// input root must declare "type": "object"
}

func ExampleStructured() {
	type greetIn struct {
		Name string `json:"name"`
	}
	type greetOut struct {
		Greeting string `json:"greeting"`
	}
	set, _ := tools.Compile([]tools.Tool{{
		Name:         "greet",
		Description:  "Greets someone.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"]}`),
		Handler: tools.Structured(func(ctx context.Context, in greetIn) (greetOut, error) {
			return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
		}),
	}})
	greet, _ := set.Lookup("greet")
	res, _ := greet.Run(context.Background(), &tools.Request{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	fmt.Println(string(res.StructuredContent))
	fmt.Println(res.Content[0].Text)
	// Output:
	// {"greeting":"Hello, Ada!"}
	// {"greeting":"Hello, Ada!"}
}

func ExampleDependency() {
	db := tools.NewDependency("db", func(ctx context.Context) (string, error) {
		return "connection", nil
	})
	set, _ := tools.Compile([]tools.Tool{{
		Name:        "query",
		Description: "Runs a query.",
		Providers:   []tools.Provider{db},
		Handler: tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
			conn, err := db.Get(ctx) // resolved before the handler ran
			if err != nil {
				return nil, err
			}
			return tools.TextResult("ran on " + conn), nil
		}),
	}})
	query, _ := set.Lookup("query")
	res, _ := query.Run(context.Background(), &tools.Request{Tool: "query"})
	fmt.Println(res.Content[0].Text)
	// Output:
	// ran on connection
}
