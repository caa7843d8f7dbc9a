package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgrain/toolgrain/tools"
)

// Schemas of the demonstration tools (DESIGN.md), whose validation feedback is contract.
const (
	echoSchema  = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`
	greetSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	sleepSchema = `{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"]}`
	failSchema  = `{"type":"object","properties":{"mode":{"enum":["result","error","panic","bad-output","provider"]}},"required":["mode"]}`

	greetOutputSchema = `{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"],"additionalProperties":false}`
)

// okHandler answers every call with the text "ok".
var okHandler = tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
	return tools.TextResult("ok"), nil
})

// compileOne compiles a single definition and returns it, failing the test on any error.
func compileOne(tb testing.TB, def tools.Tool) *tools.Compiled {
	tb.Helper()
	if def.Handler == nil {
		def.Handler = okHandler
	}
	set, err := tools.Compile([]tools.Tool{def})
	if err != nil {
		tb.Fatalf("Compile: %v", err)
	}
	c, ok := set.Lookup(def.Name)
	if !ok {
		tb.Fatalf("Lookup(%q) failed after Compile", def.Name)
	}
	return c
}

// raw turns a string into a json.RawMessage, keeping "" as nil.
func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// resultText returns the text of the only content block of r.
func resultText(tb testing.TB, r *tools.Result) string {
	tb.Helper()
	if r == nil || len(r.Content) != 1 {
		tb.Fatalf("want one content block, got %+v", r)
	}
	return r.Content[0].Text
}
