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
		MS int `json:"ms" jsonschema:"minimum=0,maximum=600000"`
	}
	set, err := tools.Compile([]tools.Tool{{
		Name:        "sleep",
		Description: "Waits for ms milliseconds.",
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
		Name:        "greet",
		Description: "Greets someone.",
		Handler: tools.Structured(func(ctx context.Context, in greetIn) (greetOut, error) {
			return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
		}),
	}})
	greet, _ := set.Lookup("greet")
	d := greet.Descriptor() // the schemas inferred from greetIn and greetOut
	fmt.Println(string(d.InputSchema))
	fmt.Println(string(d.OutputSchema))
	res, _ := greet.Run(context.Background(), &tools.Request{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	fmt.Println(string(res.StructuredContent))
	fmt.Println(res.Content[0].Text)
	// Output:
	// {"properties":{"name":{"type":"string"}},"additionalProperties":false,"type":"object","required":["name"]}
	// {"properties":{"greeting":{"type":"string"}},"additionalProperties":false,"type":"object","required":["greeting"]}
	// {"greeting":"Hello, Ada!"}
	// {"greeting":"Hello, Ada!"}
}

// The input schema of a Func is inferred from its type, with keywords from jsonschema tags;
// a type that no schema can describe is a *ToolSchemaError naming the field.
func ExampleFunc() {
	type searchIn struct {
		Query string   `json:"query" jsonschema:"description=What to look for,minLength=1"`
		Limit int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=10"`
		Mode  string   `json:"mode,omitempty" jsonschema:"enum=fast,enum=exact"`
		Tags  []string `json:"tags,omitempty"`
	}
	set, err := tools.Compile([]tools.Tool{{
		Name:        "search",
		Description: "Searches the catalogue.",
		Handler: tools.Func(func(ctx context.Context, in searchIn) (*tools.Result, error) {
			return tools.TextResult("found " + in.Query), nil
		}),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	search, _ := set.Lookup("search")
	fmt.Println(string(search.Descriptor().InputSchema))
	_, feedback := search.ValidateInput(json.RawMessage(`{"query":"","limit":0,"mode":"slow"}`))
	fmt.Println(feedback.Content[0].Text)

	type hooked struct {
		OnDone func() `json:"onDone"`
	}
	_, err = tools.Compile([]tools.Tool{{Name: "hooked",
		Handler: tools.Func(func(ctx context.Context, in hooked) (*tools.Result, error) { return nil, nil })}})
	var schemaErr *tools.ToolSchemaError
	if errors.As(err, &schemaErr) {
		fmt.Println(schemaErr.Field, "|", err)
	}
	// Output:
	// {"properties":{"query":{"type":"string","minLength":1,"description":"What to look for"},"limit":{"type":"integer","maximum":100,"minimum":1,"default":10},"mode":{"type":"string","enum":["fast","exact"]},"tags":{"items":{"type":"string"},"type":"array"}},"additionalProperties":false,"type":"object","required":["query"]}
	// invalid arguments: limit: must be >= 1; mode: must be one of "fast", "exact"; query: must be at least 1 character long
	// hooked.OnDone | tool "hooked": input schema: field hooked.OnDone: func(): a function has no JSON form
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
