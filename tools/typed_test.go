package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/tools"
)

type greetIn struct {
	Name string `json:"name"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

func greet(_ context.Context, in greetIn) (greetOut, error) {
	return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
}

func TestFunc(t *testing.T) {
	type sleepIn struct {
		MS    int64   `json:"ms"`
		Scale float64 `json:"scale"`
	}
	c := compileOne(t, tools.Tool{
		Name:        "sleep",
		InputSchema: raw(sleepSchema),
		Handler: tools.Func(func(_ context.Context, in sleepIn) (*tools.Result, error) {
			b, _ := json.Marshal(in)
			return tools.TextResult(string(b)), nil
		}),
	})
	args, fb := c.ValidateInput(raw(`{"ms": 250, "unknown": true}`))
	if fb != nil {
		t.Fatal(resultText(t, fb))
	}
	res, err := c.Run(context.Background(), &tools.Request{Tool: "sleep", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Content[0].Text, `{"ms":250,"scale":0}`; got != want {
		t.Errorf("handler received %s, want %s", got, want)
	}
}

// Arguments the schema accepts but the Go type cannot hold are an unexpected failure, and the
// error text does not quote them.
func TestFuncDecodeError(t *testing.T) {
	type in struct {
		Count uint8 `json:"count"`
	}
	tests := []struct {
		name     string
		give     string
		wantText string
	}{
		{"string_for_number", `{"count":"SECRET-value"}`, `tool "x": decode arguments: cannot decode JSON string into field "count" of Go type uint8`},
		{"overflow", `{"count":31337}`, `tool "x": decode arguments: cannot decode JSON number into field "count" of Go type uint8`},
		{"object_for_number", `{"count":{"a":"SECRET-value"}}`, `tool "x": decode arguments: cannot decode JSON object into field "count" of Go type uint8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var called bool
			c := compileOne(t, tools.Tool{
				Name:        "x",
				InputSchema: raw(`{"type":"object"}`),
				Handler: tools.Func(func(context.Context, in) (*tools.Result, error) {
					called = true
					return tools.TextResult("ok"), nil
				}),
			})
			args, fb := c.ValidateInput(raw(tt.give))
			if fb != nil {
				t.Fatal(resultText(t, fb))
			}
			res, err := c.Run(context.Background(), &tools.Request{Tool: "x", Arguments: args})
			var decErr *tools.DecodeError
			if !errors.As(err, &decErr) || res != nil {
				t.Fatalf("got (%v, %v), want only a *DecodeError", res, err)
			}
			var typeErr *json.UnmarshalTypeError
			if decErr.Tool != "x" || !errors.As(err, &typeErr) {
				t.Errorf("got %+v, want tool x wrapping the decoder's error", decErr)
			}
			if err.Error() != tt.wantText {
				t.Errorf("got  %q\nwant %q", err.Error(), tt.wantText)
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "31337") {
				t.Errorf("the error quotes an argument: %v", err)
			}
			if called {
				t.Error("the handler ran with undecodable arguments")
			}
		})
	}
}

// Errors of custom decoders may quote anything, so only their type is shown.
func TestFuncDecodeErrorCustomDecoder(t *testing.T) {
	type in struct {
		When strictTime `json:"when"`
	}
	h := tools.Func(func(context.Context, in) (*tools.Result, error) { return tools.TextResult("ok"), nil })
	_, err := h.Handle(context.Background(), &tools.Request{Tool: "x", Arguments: raw(`{"when":"SECRET-value"}`)})
	var decErr *tools.DecodeError
	if !errors.As(err, &decErr) || !errors.Is(err, errBadTime) {
		t.Fatalf("got %v, want a *DecodeError wrapping the decoder's error", err)
	}
	if want := `tool "x": decode arguments: decoder failed with *errors.errorString`; err.Error() != want {
		t.Errorf("got  %q\nwant %q", err.Error(), want)
	}
}

var errBadTime = errors.New("bad time")

type strictTime struct{}

func (*strictTime) UnmarshalJSON([]byte) error { return errBadTime }

func TestStructured(t *testing.T) {
	c := compileOne(t, tools.Tool{
		Name:         "greet",
		InputSchema:  raw(greetSchema),
		OutputSchema: raw(greetOutputSchema),
		Handler:      tools.Structured(greet),
	})
	res, err := c.Run(context.Background(), &tools.Request{Tool: "greet", Arguments: raw(`{"name":"<Ada>"}`)})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"greeting":"Hello, <Ada>!"}`
	if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != want {
		t.Errorf("content %+v, want one text block %s", res.Content, want)
	}
	if string(res.StructuredContent) != want || res.IsError {
		t.Errorf("structuredContent %s (isError %v), want %s", res.StructuredContent, res.IsError, want)
	}
}

func TestStructuredErrors(t *testing.T) {
	errBoom := errors.New("SECRET-internal-detail")
	tests := []struct {
		name    string
		give    tools.Handler
		wantErr string
	}{
		{
			"handler_error",
			tools.Structured(func(context.Context, greetIn) (greetOut, error) { return greetOut{}, errBoom }),
			"SECRET-internal-detail",
		},
		{
			"not_an_object",
			tools.Structured(func(context.Context, greetIn) (string, error) { return "hello", nil }),
			`tool "x": output: structuredContent: must encode to a JSON object, got string`,
		},
		{
			"nil_pointer",
			tools.Structured(func(context.Context, greetIn) (*greetOut, error) { return nil, nil }),
			`tool "x": output: structuredContent: must encode to a JSON object, got null`,
		},
		{
			"unencodable",
			tools.Structured(func(context.Context, greetIn) (map[string]func(), error) { return map[string]func(){"f": nil}, nil }),
			`tool "x": output: json: unsupported type: func()`,
		},
		{
			"schema_violation",
			tools.Structured(func(context.Context, greetIn) (map[string]int, error) { return map[string]int{"greeting": 1}, nil }),
			`tool "x": output: does not conform to the output schema: greeting: must be string, got number`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := run(t, tools.Tool{OutputSchema: raw(greetOutputSchema), Handler: tt.give})
			if err == nil || res != nil || err.Error() != tt.wantErr {
				t.Errorf("got (%v, %v), want error %q", res, err, tt.wantErr)
			}
		})
	}
}
