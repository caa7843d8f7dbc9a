package tools_test

import (
	"context"
	"testing"

	"github.com/toolgrain/toolgrain/tools"
)

// threePropertySchema is a typical small input schema.
const threePropertySchema = `{
	"type": "object",
	"properties": {
		"query": {"type": "string", "minLength": 1, "maxLength": 200},
		"limit": {"type": "integer", "minimum": 1, "maximum": 100},
		"mode":  {"enum": ["fast", "exact"]}
	},
	"required": ["query"],
	"additionalProperties": false
}`

func BenchmarkValidateInput(b *testing.B) {
	benchmarks := []struct {
		name   string
		schema string
		give   string
	}{
		{"three_properties/valid", threePropertySchema, `{"query":"weather in Paris","limit":10,"mode":"fast"}`},
		{"three_properties/invalid", threePropertySchema, `{"query":"","limit":1000,"mode":"slow","extra":true}`},
		{"flat/valid", `{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100},"mode":{"enum":["fast","full"]}},"required":["query"],"additionalProperties":false}`, `{"query":"weather in Paris","limit":10,"mode":"fast"}`},
		{"flat/invalid", `{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100},"mode":{"enum":["fast","full"]}},"required":["query"],"additionalProperties":false}`, `{"query":"","limit":1000,"mode":"slow","extra":true}`},
		{"object_only/valid", `{"type":"object"}`, `{"query":"weather in Paris","limit":10,"mode":"fast"}`},
		{"no_schema/absent", ``, ``},
	}
	for _, bb := range benchmarks {
		b.Run(bb.name, func(b *testing.B) {
			c := compileOne(b, tools.Tool{Name: "x", InputSchema: raw(bb.schema)})
			args := raw(bb.give)
			b.ReportAllocs()
			for b.Loop() {
				c.ValidateInput(args)
			}
		})
	}
}

func BenchmarkRunStructured(b *testing.B) {
	c := compileOne(b, tools.Tool{
		Name:         "greet",
		InputSchema:  raw(greetSchema),
		OutputSchema: raw(greetOutputSchema),
		Handler:      tools.Structured(greet),
	})
	req := &tools.Request{Tool: "greet", Arguments: raw(`{"name":"Ada"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	defs := []tools.Tool{{Name: "x", Handler: okHandler, InputSchema: raw(threePropertySchema), OutputSchema: raw(greetOutputSchema)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tools.Compile(defs); err != nil {
			b.Fatal(err)
		}
	}
}

// The cost of schemas inferred from Go types. At Compile (once per tool): the inference of
// AddIn and AddOut, against compiling the same schemas written by hand. Per call (validation,
// decoding, the handler, the output check): the Structured add tool with inferred schemas,
// against the same tool with the hand-written schemas, which is the typed path without
// inference; they must not differ.

const (
	addInSchema  = `{"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"note":{"type":"string"}},"additionalProperties":false,"type":"object","required":["a","b"]}`
	addOutSchema = `{"properties":{"sum":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["sum"]}`
)

func addTools() map[string]tools.Tool {
	return map[string]tools.Tool{
		"inferred":     {Name: "add", Handler: tools.Structured(add)},
		"hand-written": {Name: "add", InputSchema: raw(addInSchema), OutputSchema: raw(addOutSchema), Handler: tools.Structured(add)},
	}
}

func BenchmarkCompileTyped(b *testing.B) {
	for _, name := range []string{"hand-written", "inferred"} {
		defs := []tools.Tool{addTools()[name]}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tools.Compile(defs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCallTyped(b *testing.B) {
	for _, name := range []string{"hand-written", "inferred"} {
		c := compileOne(b, addTools()[name])
		b.Run(name, func(b *testing.B) {
			args := raw(`{"a":1,"b":2,"note":"sum"}`)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				valid, fb := c.ValidateInput(args)
				if fb != nil {
					b.Fatal(fb.Content[0].Text)
				}
				if _, err := c.Run(ctx, &tools.Request{Tool: "add", Arguments: valid}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunMiddleware: what a middleware that passes every call on adds to Run, against no
// middleware (the engine's path without Config.Middleware).
func BenchmarkRunMiddleware(b *testing.B) {
	passOn := func(next tools.Handler) tools.Handler {
		return tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
			return next.Handle(ctx, req)
		})
	}
	for _, bb := range []struct {
		name string
		mw   []tools.Middleware
	}{{"none", nil}, {"one", []tools.Middleware{passOn}}, {"three", []tools.Middleware{passOn, passOn, passOn}}} {
		b.Run(bb.name, func(b *testing.B) {
			set, err := tools.Compile([]tools.Tool{addTools()["inferred"]}, bb.mw...)
			if err != nil {
				b.Fatal(err)
			}
			c, _ := set.Lookup("add")
			req := &tools.Request{Tool: "add", Arguments: raw(`{"a":1,"b":2}`)}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Run(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
