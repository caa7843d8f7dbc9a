package e2e_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
)

// The tool author's API end to end: schemas inferred from Go types, through the real server
// over stdio and HTTP, in both protocol eras.

// addIn and addOut are the arguments and the structured output of Example_typedTool's add tool.
type addIn struct {
	A    int    `json:"a" jsonschema:"description=The first term"`
	B    int    `json:"b" jsonschema:"description=The second term"`
	Note string `json:"note,omitempty"`
}

type addOut struct {
	Sum int `json:"sum"`
}

func addTool() tools.Tool {
	return tools.Tool{
		Name:        "add",
		Description: "Adds two integers.",
		Handler: tools.Structured(func(ctx context.Context, in addIn) (addOut, error) {
			return addOut{Sum: in.A + in.B}, nil
		}),
	}
}

// TestTypedToolEndToEnd: the add tool of the tool author's example lists with inferred input
// and output schemas, answers with structuredContent, and gets validation feedback naming the
// field, over every transport and era.
func TestTypedToolEndToEnd(t *testing.T) {
	t.Parallel()
	const descriptor = `{"name":"add","description":"Adds two integers.",` +
		`"inputSchema":{"properties":{"a":{"type":"integer","description":"The first term"},"b":{"type":"integer","description":"The second term"},"note":{"type":"string"}},"additionalProperties":false,"type":"object","required":["a","b"]},` +
		`"outputSchema":{"properties":{"sum":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["sum"]}}`
	forEachTransportAndEra(t, func() toolgrain.Config {
		return toolgrain.Config{Tools: []tools.Tool{addTool()}}
	}, func(t *testing.T, c toolClient) {
		if got := c.list(); !strings.Contains(got, `"tools":[`+descriptor+`]`) {
			t.Errorf("tools/list\n got: %s\nwant the tool %s", got, descriptor)
		}
		tests := []struct{ give, want string }{
			{`{"a":1,"b":2}`, `"content":[{"type":"text","text":"{\"sum\":3}"}],"structuredContent":{"sum":3}`},
			{`{"a":1,"b":2,"note":"n"}`, `"content":[{"type":"text","text":"{\"sum\":3}"}],"structuredContent":{"sum":3}`},
			{`{"a":"x","b":2}`, `"content":[{"type":"text","text":"invalid arguments: a: must be integer, got string"}],"isError":true`},
			{`{"b":2}`, `"content":[{"type":"text","text":"invalid arguments: a: missing property"}],"isError":true`},
			{`{"a":1,"b":2,"c":3}`, `"content":[{"type":"text","text":"invalid arguments: c: unexpected property"}],"isError":true`},
			{`{"a":1,"b":2,"note":7}`, `"content":[{"type":"text","text":"invalid arguments: note: must be string, got number"}],"isError":true`},
		}
		for i, tt := range tests {
			if got := c.call(i+1, "add", tt.give); got != tt.want {
				t.Errorf("add %s\n got: %s\nwant: %s", tt.give, got, tt.want)
			}
		}
	})
}

// TestTypedToolRefused: a type no schema can describe stops NewServer with a
// *tools.ToolSchemaError naming the tool and the field.
func TestTypedToolRefused(t *testing.T) {
	t.Parallel()
	type hooks struct {
		OnDone func() `json:"onDone"`
	}
	type in struct {
		A     int   `json:"a"`
		Hooks hooks `json:"hooks"`
	}
	_, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{addTool(), {
		Name:    "hooked",
		Handler: tools.Func(func(context.Context, in) (*tools.Result, error) { return tools.TextResult(""), nil }),
	}}})
	var se *tools.ToolSchemaError
	if !errors.As(err, &se) || se.Tool != "hooked" || se.Kind != tools.SchemaInput || se.Field != "in.Hooks.OnDone" {
		t.Fatalf("got %v (%+v), want a *tools.ToolSchemaError for hooked, field in.Hooks.OnDone", err, se)
	}
	if want := `tool "hooked": input schema: field in.Hooks.OnDone: func(): a function has no JSON form`; err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
	_, err = toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{{
		Name: "out", OutputType: reflect.TypeFor[chan int](),
		Handler: tools.Func(func(context.Context, addIn) (*tools.Result, error) { return tools.TextResult(""), nil }),
	}}})
	if !errors.As(err, &se) || se.Tool != "out" || se.Kind != tools.SchemaOutput {
		t.Errorf("got %v, want a *tools.ToolSchemaError for the output of out", err)
	}
}
