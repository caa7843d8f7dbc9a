package tools_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/tools"
)

func TestHeaderParams(t *testing.T) {
	tests := []struct {
		name string
		give string
		want []tools.HeaderParam
	}{
		{
			name: "no_schema",
			give: "",
		},
		{
			name: "no_annotation",
			give: `{"type":"object","properties":{"region":{"type":"string"}}}`,
		},
		{
			name: "spec_example",
			give: `{"type":"object","properties":{
				"region":{"type":"string","description":"The region","x-mcp-header":"Region"},
				"query":{"type":"string"}},"required":["region","query"]}`,
			want: []tools.HeaderParam{{Name: "Region", Path: []string{"region"}, Type: "string"}},
		},
		{
			name: "every_type_and_nested_in_schema_order",
			give: `{"type":"object","properties":{
				"tenant":{"type":"object","properties":{"id":{"type":"integer","x-mcp-header":"Tenant-Id"}}},
				"dry":{"type":"boolean","x-mcp-header":"Dry-Run"},
				"a":{"type":"string","x-mcp-header":"!#$%&'*+-.^_` + "`" + `|~09azAZ"}}}`,
			want: []tools.HeaderParam{
				{Name: "!#$%&'*+-.^_`|~09azAZ", Path: []string{"a"}, Type: "string"},
				{Name: "Dry-Run", Path: []string{"dry"}, Type: "boolean"},
				{Name: "Tenant-Id", Path: []string{"tenant", "id"}, Type: "integer"},
			},
		},
		{
			name: "property_named_like_keywords",
			give: `{"type":"object","properties":{
				"items":{"type":"string","x-mcp-header":"Items"},
				"x-mcp-header":{"type":"string","x-mcp-header":"Literal"}}}`,
			want: []tools.HeaderParam{
				{Name: "Items", Path: []string{"items"}, Type: "string"},
				{Name: "Literal", Path: []string{"x-mcp-header"}, Type: "string"},
			},
		},
		{
			name: "data_keywords_hold_no_annotations",
			give: `{"type":"object","default":{"x-mcp-header":"A"},"properties":{
				"p":{"type":"object","const":{"x-mcp-header":"B"},"examples":[{"x-mcp-header":"C"}],
					"properties":{"q":{"type":"string","enum":["x"],"x-mcp-header":"Q"}}}}}`,
			want: []tools.HeaderParam{{Name: "Q", Path: []string{"p", "q"}, Type: "string"}},
		},
		{
			name: "names_of_defs_are_not_annotations",
			give: `{"type":"object","$defs":{"x-mcp-header":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x-mcp-header"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compileOne(t, tools.Tool{Name: "t", InputSchema: raw(tt.give)})
			got := c.HeaderParams()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("HeaderParams() = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestHeaderParamHeader(t *testing.T) {
	if got := (tools.HeaderParam{Name: "Region"}).Header(); got != "Mcp-Param-Region" {
		t.Errorf("Header() = %q", got)
	}
}

func TestHeaderParamsIsACopy(t *testing.T) {
	c := compileOne(t, tools.Tool{Name: "t", InputSchema: raw(`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}`)})
	c.HeaderParams()[0].Name = "B"
	if got := c.HeaderParams()[0].Name; got != "A" {
		t.Errorf("after changing a returned slice: Name = %q, want A", got)
	}
}

// TestHeaderParamsInvalid: every rule of MCP 2026-07-28 for x-mcp-header is a *ToolSchemaError of
// the input schema whose cause names the location and the rule.
func TestHeaderParamsInvalid(t *testing.T) {
	const reach = `x-mcp-header: allowed only on a property reached from the root through "properties" alone`
	tests := []struct {
		name      string
		give      string
		wantCause string // the cause's text starts with it
	}{
		{"empty", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`,
			`properties/a: x-mcp-header: "" must not be empty`},
		{"space", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"My Region"}}}`,
			`properties/a: x-mcp-header: "My Region" has the character ' ' at byte 2 (an RFC 9110 token is A-Za-z0-9 and !#$%&'*+-.^_` + "`" + `|~)`},
		{"colon", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A:B"}}}`,
			`properties/a: x-mcp-header: "A:B" has the character ':' at byte 1`},
		{"carriage_return", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A\rB"}}}`,
			`properties/a: x-mcp-header: "A\rB" has the control character U+000D at byte 1`},
		{"line_feed", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A\nB"}}}`,
			`properties/a: x-mcp-header: "A\nB" has the control character U+000A at byte 1`},
		{"delete", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A\u007f"}}}`,
			`properties/a: x-mcp-header: "A\x7f" has the control character U+007F at byte 1`},
		{"non_ascii", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Région"}}}`,
			`properties/a: x-mcp-header: "Région" has the character 'é' at byte 1`},
		{"not_a_string", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}`,
			`properties/a: x-mcp-header: must be a string, not a number`},
		{"duplicate_case_insensitive", `{"type":"object","properties":{
				"a":{"type":"string","x-mcp-header":"Region"},
				"b":{"type":"object","properties":{"c":{"type":"string","x-mcp-header":"REGION"}}}}}`,
			`properties/b/properties/c: x-mcp-header: "REGION" repeats "Region" of properties/a: names must be unique, compared case-insensitively`},
		{"number", `{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
			`properties/a: x-mcp-header: allowed only on a property of type "string", "integer" or "boolean", not "number"`},
		{"object", `{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`,
			`properties/a: x-mcp-header: allowed only on a property of type "string", "integer" or "boolean"`},
		{"array", `{"type":"object","properties":{"a":{"type":"array","x-mcp-header":"A"}}}`,
			`properties/a: x-mcp-header: allowed only on a property of type "string", "integer" or "boolean"`},
		{"type_list", `{"type":"object","properties":{"a":{"type":["string","null"],"x-mcp-header":"A"}}}`,
			`properties/a: x-mcp-header: allowed only on a property of type "string", "integer" or "boolean" (one type, not a list)`},
		{"no_type", `{"type":"object","properties":{"a":{"enum":["x"],"x-mcp-header":"A"}}}`,
			`properties/a: x-mcp-header: the property must declare "type": "string", "integer" or "boolean"`},
		{"root", `{"type":"object","x-mcp-header":"A"}`, `schema: ` + reach},
		{"items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`,
			`properties/a/items: ` + reach},
		{"items_object", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string","x-mcp-header":"B"}}}}}}`,
			`properties/a/items/properties/b: ` + reach},
		{"prefix_items", `{"type":"object","properties":{"a":{"type":"array","prefixItems":[{"type":"string","x-mcp-header":"A"}]}}}`,
			`properties/a/prefixItems/0: ` + reach},
		{"one_of", `{"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`,
			`oneOf/0/properties/a: ` + reach},
		{"any_of", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string","x-mcp-header":"A"}]}}}`,
			`properties/a/anyOf/0: ` + reach},
		{"all_of", `{"type":"object","allOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`,
			`allOf/0/properties/a: ` + reach},
		{"not", `{"type":"object","not":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`,
			`not/properties/a: ` + reach},
		{"if", `{"type":"object","if":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`,
			`if/properties/a: ` + reach},
		{"then", `{"type":"object","if":true,"then":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`,
			`then/properties/a: ` + reach},
		{"else", `{"type":"object","if":true,"else":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`,
			`else/properties/a: ` + reach},
		{"defs_through_ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/region"}},"$defs":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
			`$defs/region: ` + reach},
		{"definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"r":{"type":"string","x-mcp-header":"R"}}}`,
			`definitions/r: ` + reach},
		{"additional_properties", `{"type":"object","additionalProperties":{"type":"string","x-mcp-header":"A"}}`,
			`additionalProperties: ` + reach},
		{"pattern_properties", `{"type":"object","patternProperties":{"^a":{"type":"string","x-mcp-header":"A"}}}`,
			`patternProperties/^a: ` + reach},
		{"dependent_schemas", `{"type":"object","dependentSchemas":{"a":{"properties":{"b":{"type":"string","x-mcp-header":"B"}}}}}`,
			`dependentSchemas/a/properties/b: ` + reach},
		{"unknown_keyword", `{"type":"object","x-extra":{"type":"string","x-mcp-header":"A"}}`,
			`x-extra: ` + reach},
		{"slash_in_name_escaped", `{"type":"object","properties":{"a/b":{"type":"number","x-mcp-header":"A"}}}`,
			`properties/a~1b: x-mcp-header: allowed only on a property of type`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tools.Compile([]tools.Tool{{Name: "t", InputSchema: raw(tt.give), Handler: okHandler}})
			var schemaErr *tools.ToolSchemaError
			if !errors.As(err, &schemaErr) {
				t.Fatalf("Compile = %v, want a *ToolSchemaError", err)
			}
			if schemaErr.Tool != "t" || schemaErr.Kind != tools.SchemaInput {
				t.Errorf("got {Tool: %q, Kind: %q}, want t, input", schemaErr.Tool, schemaErr.Kind)
			}
			if cause := schemaErr.Err.Error(); !strings.HasPrefix(cause, tt.wantCause) {
				t.Errorf("cause = %q\nwant prefix  %q", cause, tt.wantCause)
			}
		})
	}
}

// TestHeaderParamsEveryProblem: each bad annotation is its own error, and a good one next to them
// does not save the tool.
func TestHeaderParamsEveryProblem(t *testing.T) {
	_, err := tools.Compile([]tools.Tool{{Name: "t", Handler: okHandler, InputSchema: raw(`{"type":"object","properties":{
		"a":{"type":"number","x-mcp-header":"A"},
		"b":{"type":"string","x-mcp-header":"B"},
		"c":{"type":"array","items":{"type":"string","x-mcp-header":"C"}}}}`)}})
	if err == nil {
		t.Fatal("Compile succeeded")
	}
	want := `tool "t": input schema: properties/a: x-mcp-header: allowed only on a property of type "string", "integer" or "boolean", not "number"` + "\n" +
		`tool "t": input schema: properties/c/items: x-mcp-header: allowed only on a property reached from the root through "properties" alone ` +
		`(not through items, allOf, anyOf, oneOf, not, if, then, else, $ref, $defs or any other keyword)`
	if err.Error() != want {
		t.Errorf("Compile error:\n%s\nwant\n%s", err, want)
	}
}

// TestHeaderParamsOnlyForValidSchemas: a schema that does not compile reports that, not its
// annotations.
func TestHeaderParamsOnlyForValidSchemas(t *testing.T) {
	_, err := tools.Compile([]tools.Tool{{Name: "t", Handler: okHandler,
		InputSchema: raw(`{"type":"object","properties":{"a":{"type":5,"x-mcp-header":"A B"}}}`)}})
	if err == nil || strings.Contains(err.Error(), "x-mcp-header") || !strings.Contains(err.Error(), "not a valid JSON Schema") {
		t.Errorf("Compile = %v, want only the metaschema error", err)
	}
}

// TestHeaderParamsAtRunTime: tools added to a set later go through the same checks.
func TestHeaderParamsAtRunTime(t *testing.T) {
	set, err := tools.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = set.With(tools.Tool{Name: "late", Handler: okHandler,
		InputSchema: raw(`{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`)})
	var schemaErr *tools.ToolSchemaError
	if !errors.As(err, &schemaErr) || schemaErr.Tool != "late" {
		t.Fatalf("With = %v, want a *ToolSchemaError for late", err)
	}
	next, err := set.With(tools.Tool{Name: "late", Handler: okHandler,
		InputSchema: raw(`{"type":"object","properties":{"a":{"type":"integer","x-mcp-header":"A"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := next.Lookup("late")
	if got := c.HeaderParams(); len(got) != 1 || got[0].Header() != "Mcp-Param-A" || got[0].Type != "integer" {
		t.Errorf("HeaderParams() = %+v", got)
	}
}
