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
