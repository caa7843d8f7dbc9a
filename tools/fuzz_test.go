package tools_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgrain/toolgrain/tools"
)

// fuzzSchemas are the input schemas FuzzValidateInput validates against: the demonstration
// tools', an empty one, and two that use most of the vocabulary feedback has to describe.
var fuzzSchemas = []string{
	echoSchema,
	sleepSchema,
	failSchema,
	`{"type":"object"}`,
	`{"type":"object","properties":{
		"name":{"type":"string","minLength":1,"maxLength":20,"pattern":"^[a-z]+$"},
		"age":{"type":"integer","minimum":0,"exclusiveMaximum":150},
		"tags":{"type":"array","items":{"type":"string"},"uniqueItems":true,"maxItems":5,"contains":{"const":"x"}},
		"kind":{"enum":["a","b",1,null]},
		"nested":{"type":"object","properties":{"x":{"type":"number","multipleOf":0.5}},"required":["x"],"additionalProperties":false},
		"choice":{"oneOf":[{"type":"string"},{"type":"integer"}]},
		"both":{"allOf":[{"minProperties":1},{"maxProperties":3}]},
		"not":{"not":{"type":"null"}},
		"fixed":{"const":{"k":[1,2]}},
		"when":{"if":{"type":"string"},"then":{"minLength":3},"else":{"type":"boolean"}}
	},"required":["name"],"additionalProperties":{"type":"boolean"},
	"dependentRequired":{"age":["tags"]},"propertyNames":{"maxLength":10}}`,
	`{"type":"object","$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/node"}},"additionalProperties":false}},
	"properties":{"list":{"$ref":"#/$defs/node"},"items":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"}}}}`,
}

// snowman never occurs in a schema above nor in any rule of the feedback.
const snowman = "\u2603"

// FuzzValidateInput checks argument validation against an independent use of the validator,
// and that its feedback never quotes the client's values and stays bounded.
func FuzzValidateInput(f *testing.F) {
	for i, args := range []string{
		`{"text":"hi"}`, `{"ms":700000}`, `{"mode":"nope"}`, `{}`, ``, `null`, `[]`, `"s"`, `{"a":`,
		`{"name":"ab","age":200,"tags":["a","a"],"kind":2,"nested":{"x":0.3,"y":1},"choice":1.5,"extra":"no"}`,
		`{"list":{"v":1,"next":{"v":"x","next":{"w":1}}},"items":[1,"a"]}`,
	} {
		f.Add(uint8(i), []byte(args))
	}
	compiled := make([]*tools.Compiled, len(fuzzSchemas))
	oracles := make([]*jsonschema.Schema, len(fuzzSchemas))
	for i, schema := range fuzzSchemas {
		compiled[i] = compileOne(f, tools.Tool{Name: "fuzz", InputSchema: json.RawMessage(schema), MetaSchema: json.RawMessage(schema)})
		oracles[i] = compileOracle(f, schema)
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		i := int(which) % len(fuzzSchemas)
		schema, c := fuzzSchemas[i], compiled[i]

		got, fb := c.ValidateInput(args)
		if (fb == nil) != wantValid(oracles[i], args) {
			t.Fatalf("ValidateInput(%q) against %s: feedback %q, the validator disagrees", args, schema, feedbackText(fb))
		}
		if mfb := c.ValidateMeta(args); (mfb == nil) != (fb == nil) {
			t.Fatalf("ValidateMeta and ValidateInput disagree on %q", args)
		}
		if fb == nil {
			if !json.Valid(got) || bytes.TrimSpace(got)[0] != '{' {
				t.Fatalf("accepted arguments %q are handed on as %q", args, got)
			}
			return
		}
		text := feedbackText(fb)
		if !fb.IsError || !strings.HasPrefix(text, "invalid arguments: ") || !utf8.ValidString(text) {
			t.Fatalf("feedback %q", text)
		}
		if limit := 20*(len(args)+200) + 100; len(text) > limit {
			t.Fatalf("feedback of %d bytes for %d bytes of arguments", len(text), len(args))
		}

		// Mark every string value of the arguments: a mark in the feedback is a quoted value.
		var v any
		if json.Unmarshal(args, &v) != nil || keysHold(v, snowman) {
			return
		}
		marked, err := json.Marshal(mark(v))
		if err != nil {
			t.Fatal(err)
		}
		if _, fb := c.ValidateInput(marked); fb != nil && strings.Contains(feedbackText(fb), snowman) {
			t.Fatalf("feedback quotes a value of the arguments %s: %s", marked, feedbackText(fb))
		}
	})
}

// compileOracle compiles schema with the validator alone, as the oracle of FuzzValidateInput.
func compileOracle(tb testing.TB, schema string) *jsonschema.Schema {
	tb.Helper()
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.AddResource("mem:///oracle.json", doc); err != nil {
		tb.Fatal(err)
	}
	sch, err := c.Compile("mem:///oracle.json")
	if err != nil {
		tb.Fatal(err)
	}
	return sch
}

// wantValid validates args the way the engine promises to: absent arguments are {}, anything
// else must be JSON holding an object that the schema accepts.
func wantValid(sch *jsonschema.Schema, args []byte) bool {
	var v any = map[string]any{}
	var err error
	if trimmed := bytes.Trim(args, " \t\r\n"); len(trimmed) > 0 && string(trimmed) != "null" {
		if !json.Valid(args) {
			return false
		}
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(args)); err != nil {
			return false
		}
	}
	if _, ok := v.(map[string]any); !ok {
		return false
	}
	return sch.Validate(v) == nil
}

func feedbackText(r *tools.Result) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// mark prefixes every string value (not key) of v with the snowman.
func mark(v any) any {
	switch v := v.(type) {
	case string:
		return snowman + v
	case []any:
		for i := range v {
			v[i] = mark(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = mark(v[k])
		}
	}
	return v
}

// keysHold reports whether a key anywhere in v contains s.
func keysHold(v any, s string) bool {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if keysHold(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, s) || keysHold(e, s) {
				return true
			}
		}
	}
	return false
}
