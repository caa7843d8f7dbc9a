package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/tools"
)

// The feedback text goes to clients as the text of an isError result: it is contract.
func TestValidateInputFeedback(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		give   string
		want   string // "" means valid
	}{
		{"sleep_maximum", sleepSchema, `{"ms": 700000}`, "invalid arguments: ms: must be <= 600000"},
		{"sleep_minimum", sleepSchema, `{"ms": -1}`, "invalid arguments: ms: must be >= 0"},
		{"sleep_integer", sleepSchema, `{"ms": 1.5}`, "invalid arguments: ms: must be integer, got number"},
		{"sleep_valid", sleepSchema, `{"ms": 600000}`, ""},
		{"greet_missing", greetSchema, `{}`, "invalid arguments: name: missing property"},
		{"greet_absent", greetSchema, ``, "invalid arguments: name: missing property"},
		{"greet_null", greetSchema, `null`, "invalid arguments: name: missing property"},
		{"echo_type", echoSchema, `{"text": 5}`, "invalid arguments: text: must be string, got number"},
		{"echo_null_value", echoSchema, `{"text": null}`, "invalid arguments: text: must be string, got null"},
		{"fail_enum", failSchema, `{"mode": "boom"}`, `invalid arguments: mode: must be one of "result", "error", "panic", "bad-output", "provider"`},
		{"fail_valid", failSchema, `{"mode": "panic"}`, ""},
		{
			"unexpected_property",
			`{"type":"object","properties":{"text":{"type":"string"}},"additionalProperties":false}`,
			`{"text":"x","extra":1,"more":2}`,
			"invalid arguments: extra: unexpected property; more: unexpected property",
		},
		{"array", echoSchema, `[1, 2]`, "invalid arguments: arguments: must be an object"},
		{"string", echoSchema, `"text"`, "invalid arguments: arguments: must be an object"},
		{"number", echoSchema, ` 5`, "invalid arguments: arguments: must be an object"},
		{"invalid_json", echoSchema, `{"text":`, "invalid arguments: arguments: must be valid JSON"},
		{
			"sorted_by_location",
			`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"},"c":{"type":"object","properties":{"d":{"type":"integer"}}}},"required":["z"]}`,
			`{"b":1,"a":2,"c":{"d":"x"}}`,
			"invalid arguments: a: must be string, got number; b: must be string, got number; c/d: must be integer, got string; z: missing property",
		},
		{
			"root_first_indices_numeric",
			`{"type":"object","properties":{"list":{"type":"array","items":{"type":"string"}}},"minProperties":2}`,
			`{"list":[1,"a","b","c","d","e","f","g","h","i",10]}`,
			"invalid arguments: arguments: must have at least 2 properties; list/0: must be string, got number; list/10: must be string, got number",
		},
		{
			"escaped_location",
			`{"type":"object","additionalProperties":false}`,
			`{"a/b~c":1}`,
			"invalid arguments: a~1b~0c: unexpected property",
		},
		{
			"any_of_types",
			`{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`,
			`{"v":true}`,
			"invalid arguments: v: must be string or number, got boolean",
		},
		{
			"any_of_one_candidate",
			`{"type":"object","properties":{"v":{"anyOf":[{"type":"string","maxLength":3},{"type":"null"}]}}}`,
			`{"v":"long"}`,
			"invalid arguments: v: must be at most 3 characters long",
		},
		{
			"any_of_shapes",
			`{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`,
			`{}`,
			"invalid arguments: arguments: must match one of the allowed shapes",
		},
		{
			"one_of_none",
			`{"type":"object","properties":{"v":{"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["b"]}]}}}`,
			`{"v":{}}`,
			"invalid arguments: v: must match one of the allowed shapes",
		},
		{
			"one_of_many",
			`{"type":"object","properties":{"v":{"oneOf":[{"type":"integer"},{"type":"number"}]}}}`,
			`{"v":1}`,
			"invalid arguments: v: must match exactly one of the allowed shapes",
		},
		{
			"all_of_transparent",
			`{"type":"object","allOf":[{"required":["a"]},{"required":["b"]}]}`,
			`{}`,
			"invalid arguments: a: missing property; b: missing property",
		},
		{
			"ref_transparent",
			`{"type":"object","properties":{"p":{"$ref":"#/$defs/point"}},"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"}},"required":["x","y"]}}}`,
			`{"p":{"x":"1"}}`,
			"invalid arguments: p/x: must be number, got string; p/y: missing property",
		},
		{
			"string_rules",
			`{"type":"object","properties":{"a":{"minLength":2},"b":{"maxLength":1},"c":{"pattern":"^[a-z]+$"},"d":{"const":"on"}}}`,
			`{"a":"x","b":"xy","c":"X","d":"off"}`,
			`invalid arguments: a: must be at least 2 characters long; b: must be at most 1 character long; c: must match pattern "^[a-z]+$"; d: must be "on"`,
		},
		{
			"number_rules",
			`{"type":"object","properties":{"a":{"exclusiveMinimum":0},"b":{"exclusiveMaximum":1.5},"c":{"multipleOf":0.25}}}`,
			`{"a":0,"b":1.5,"c":0.3}`,
			"invalid arguments: a: must be > 0; b: must be < 1.5; c: must be a multiple of 0.25",
		},
		{
			"array_rules",
			`{"type":"object","properties":{"a":{"minItems":2},"b":{"maxItems":1},"c":{"uniqueItems":true},"d":{"contains":{"type":"string"}},"e":{"prefixItems":[{}],"items":false}}}`,
			`{"a":[1],"b":[1,2],"c":[1,2,1],"d":[1],"e":[1,2]}`,
			"invalid arguments: a: must have at least 2 items; b: must have at most 1 item; c: must not contain duplicates (items 0 and 2 are equal); d: must contain a matching item; e/1: not allowed",
		},
		{
			"dependent_required",
			`{"type":"object","dependentRequired":{"card":["expiry"]}}`,
			`{"card":"x"}`,
			`invalid arguments: expiry: missing property (required when "card" is present)`,
		},
		{
			"property_names",
			`{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}`,
			`{"Bad":1}`,
			"invalid arguments: Bad: property name not allowed",
		},
		{
			"not",
			`{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`,
			`{"a":"x"}`,
			"invalid arguments: a: must not match the excluded shape",
		},
		{
			"enum_of_objects",
			`{"type":"object","properties":{"a":{"enum":[{"k":1},[2]]}}}`,
			`{"a":1}`,
			"invalid arguments: a: must be one of the allowed values",
		},
		{
			"html_in_rule",
			`{"type":"object","properties":{"a":{"enum":["<b>","&"]}}}`,
			`{"a":"x"}`,
			`invalid arguments: a: must be one of "<b>", "&"`,
		},
		{"object_only_valid", `{"type":"object"}`, `{"anything":[1,2]}`, ""},
		{"object_only_array", `{"type":"object","description":"anything"}`, `[]`, "invalid arguments: arguments: must be an object"},
		{"object_only_invalid_json", `{"type":"object"}`, `{"a":}`, "invalid arguments: arguments: must be valid JSON"},
		{"no_schema_absent", ``, ``, ""},
		{"no_schema_object", ``, `{"a":1}`, ""},
		{"no_schema_array", ``, `[]`, "invalid arguments: arguments: must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compileOne(t, tools.Tool{Name: "x", InputSchema: raw(tt.schema)})
			args, fb := c.ValidateInput(raw(tt.give))
			var got string
			if fb != nil {
				got = resultText(t, fb)
				if !fb.IsError || fb.StructuredContent != nil {
					t.Errorf("feedback must be a plain public error result, got %+v", fb)
				}
				if args != nil {
					t.Errorf("got arguments %s with feedback", args)
				}
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// The arguments handed to the handler are "{}" when the client sent none, and raw otherwise.
func TestValidateInputArguments(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		give   string
		want   string
	}{
		{"absent_no_schema", ``, ``, `{}`},
		{"null_no_schema", ``, `null`, `{}`},
		{"blank_no_schema", ``, "  \n", `{}`},
		{"absent_with_schema", `{"type":"object","properties":{"a":{"type":"string"}}}`, ``, `{}`},
		{"given", echoSchema, `{"text":"hi"}`, `{"text":"hi"}`},
		{"given_object_only", `{"type":"object"}`, `{"x":1}`, `{"x":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compileOne(t, tools.Tool{Name: "x", InputSchema: raw(tt.schema)})
			args, fb := c.ValidateInput(raw(tt.give))
			if fb != nil {
				t.Fatalf("unexpected feedback %q", resultText(t, fb))
			}
			if string(args) != tt.want {
				t.Errorf("got %s, want %s", args, tt.want)
			}
		})
	}
}

// Feedback quotes rules, never the client's values.
func TestValidateInputDoesNotEchoValues(t *testing.T) {
	const secret = "SECRET-client-value"
	c := compileOne(t, tools.Tool{
		Name:        "x",
		InputSchema: raw(`{"type":"object","properties":{"a":{"pattern":"^[a-z]+$"},"b":{"enum":["x"]},"c":{"const":"y"},"d":{"maxLength":3},"e":{"type":"integer"}}}`),
	})
	_, fb := c.ValidateInput(raw(fmt.Sprintf(`{"a":%[1]q,"b":%[1]q,"c":%[1]q,"d":%[1]q,"e":%[1]q}`, secret)))
	if fb == nil {
		t.Fatal("want feedback")
	}
	if text := resultText(t, fb); strings.Contains(text, secret) {
		t.Errorf("feedback echoes the client's value: %s", text)
	}
}

// A huge invalid instance cannot make a huge response.
func TestValidateInputFeedbackIsBounded(t *testing.T) {
	c := compileOne(t, tools.Tool{Name: "x", InputSchema: raw(`{"type":"object","additionalProperties":false}`)})
	var sb strings.Builder
	sb.WriteString("{")
	for i := range 25 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `"p%02d":1`, i)
	}
	sb.WriteString("}")
	_, fb := c.ValidateInput(raw(sb.String()))
	text := resultText(t, fb)
	if !strings.HasPrefix(text, "invalid arguments: p00: unexpected property; p01: ") || !strings.HasSuffix(text, "p19: unexpected property; and 5 more") {
		t.Errorf("got %q", text)
	}
}

func TestValidateMeta(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		give   string
		want   string // "" means valid
	}{
		{"no_schema", ``, `{"anything":1}`, ""},
		{"no_schema_not_object", ``, `[]`, ""},
		{
			"required_present",
			`{"type":"object","properties":{"tenant":{"type":"string"}},"required":["tenant"]}`,
			`{"tenant":"acme","progressToken":1}`,
			"",
		},
		{
			"required_absent",
			`{"type":"object","properties":{"tenant":{"type":"string"}},"required":["tenant"]}`,
			``,
			"invalid _meta: tenant: missing property",
		},
		{
			"wrong_type",
			`{"type":"object","properties":{"tenant":{"type":"string"}}}`,
			`{"tenant":7}`,
			"invalid _meta: tenant: must be string, got number",
		},
		{"not_object", `{"type":"object"}`, `"x"`, "invalid _meta: _meta: must be an object"},
		{"absent_optional", `{"type":"object","properties":{"tenant":{"type":"string"}}}`, ``, ""},
		{"false_schema", `false`, `{}`, "invalid _meta: _meta: not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compileOne(t, tools.Tool{Name: "x", MetaSchema: raw(tt.schema)})
			fb := c.ValidateMeta(raw(tt.give))
			var got string
			if fb != nil {
				got = resultText(t, fb)
				if !fb.IsError {
					t.Error("feedback must be an error result")
				}
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
