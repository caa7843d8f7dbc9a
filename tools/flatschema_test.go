package tools

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// flatSchemas have a flat form; FuzzFlatSchema checks it against the validator.
var flatSchemas = []string{
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`,
	`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"],"additionalProperties":false}`,
	`{"type":"object","properties":{"mode":{"enum":["result","error","panic"]}},"required":["mode"]}`,
	`{"type":"object","properties":{"a":{"type":["string","null"],"description":"d"},"b":{"type":"number","minimum":-1.5,"maximum":2.5},"c":true,"d":{"type":"boolean"},"e":{"type":"array"},"f":{"type":"object"},"g":{}},"required":["a","z"]}`,
	`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"integer","minimum":1}},"additionalProperties":true}`,
	`{"type":"object","properties":{"s":{"type":"string","enum":["x","y"]},"i":{"type":["integer","string"]}}}`,
}

func TestCompileFlat(t *testing.T) {
	for _, give := range flatSchemas {
		doc, _ := decodeValue([]byte(give))
		if compileFlat(doc) == nil {
			t.Errorf("%s: no flat form", give)
		}
	}
	for _, give := range []string{
		`{"type":"object","properties":{"s":{"type":"string","minLength":1}}}`,
		`{"type":"object","properties":{"s":{"type":"string","x-mcp-header":"S"}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","properties":{"s":false}}`,
		`{"type":"object","properties":{"s":{"enum":[1]}}}`,
		`{"type":"object","properties":{"s":{"$ref":"#/$defs/x"}},"$defs":{"x":{}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":0}}}`,
		`{"type":"object","properties":{"s":{"type":"strin"}}}`,
		`{"type":"array"}`,
	} {
		doc, _ := decodeValue([]byte(give))
		if compileFlat(doc) != nil {
			t.Errorf("%s: has a flat form", give)
		}
	}
}

// TestFlatAccepts: what the flat form accepts and what it leaves to the validator.
func TestFlatAccepts(t *testing.T) {
	echo := flatOf(t, flatSchemas[0])
	sleep := flatOf(t, flatSchemas[1])
	mode := flatOf(t, flatSchemas[2])
	for _, c := range []struct {
		f    *flatSchema
		give string
		want bool
	}{
		{echo, `{"text":"hi"}`, true},
		{echo, ` { "text" : "h\"i\u00e9" } `, true},
		{echo, `{"text":1}`, false},
		{echo, `{}`, false},
		{echo, `{"text":"a","text":"b"}`, false},
		{echo, `{"text":"a","x":1}`, false},
		{echo, `{"t\u0065xt":"a"}`, false},
		{sleep, `{"ms":600000}`, true},
		{sleep, `{"ms":600001}`, false},
		{sleep, `{"ms":-1}`, false},
		{sleep, `{"ms":1.0}`, false},
		{sleep, `{"ms":1e2}`, false},
		{mode, `{"mode":"panic","other":[1,{"a":"]"}]}`, true},
		{mode, `{"mode":"nope"}`, false},
		{mode, `{"mode":"p\u0061nic"}`, false},
	} {
		if got := c.f.accepts([]byte(c.give)); got != c.want {
			t.Errorf("%s: accepts = %v, want %v", c.give, got, c.want)
		}
	}
}

func flatOf(tb testing.TB, schema string) *flatSchema {
	tb.Helper()
	doc, _ := decodeValue([]byte(schema))
	f := compileFlat(doc)
	if f == nil {
		tb.Fatalf("%s: no flat form", schema)
	}
	return f
}

// FuzzFlatSchema: whatever the flat form accepts, the validator accepts.
func FuzzFlatSchema(f *testing.F) {
	for i, s := range []string{
		`{"text":"hi"}`, `{"ms":5}`, `{"mode":"error"}`, `{"a":null,"b":2.5,"z":[{}],"c":"x"}`,
		`{"n":1}`, `{"s":"x","i":3}`, `{"text":"a","text":1}`, `{"ms":-0}`,
	} {
		f.Add(uint8(i), []byte(s))
	}
	flats := make([]*flatSchema, len(flatSchemas))
	oracles := make([]*jsonschema.Schema, len(flatSchemas))
	for i, s := range flatSchemas {
		flats[i] = flatOf(f, s)
		c := jsonschema.NewCompiler()
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
		if err != nil {
			f.Fatal(err)
		}
		if err := c.AddResource("mem:///flat.json", doc); err != nil {
			f.Fatal(err)
		}
		if oracles[i], err = c.Compile("mem:///flat.json"); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		i := int(which) % len(flatSchemas)
		if !json.Valid(data) || firstByte(data) != '{' || !flats[i].accepts(data) {
			return
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		if err := oracles[i].Validate(v); err != nil {
			t.Fatalf("%s accepts %q, the validator does not: %v", flatSchemas[i], data, err)
		}
	})
}
