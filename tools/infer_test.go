package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/toolgrain/toolgrain/tools"
)

// The types of the tool-author example: inputs a and b required integers, note optional.
type AddIn struct {
	A    int    `json:"a"`
	B    int    `json:"b"`
	Note string `json:"note,omitempty"`
}

type AddOut struct {
	Sum int `json:"sum"`
}

func add(_ context.Context, in AddIn) (AddOut, error) { return AddOut{Sum: in.A + in.B}, nil }

type (
	inferTags struct {
		Count int     `json:"count" jsonschema:"description=how many,minimum=1,maximum=10,default=3"`
		Mode  string  `json:"mode" jsonschema:"enum=fast,enum=slow"`
		Ratio float64 `json:"ratio" jsonschema:"exclusiveMinimum=0"`
		Text  string  `json:"text,omitempty" jsonschema_description:"free text, with commas"`
		Code  string  `json:"code,omitempty" jsonschema:"pattern=^[a-z]+$,minLength=2"`
	}
	inferOptional struct {
		Plain    string  `json:"plain"`
		Omit     string  `json:"omit,omitempty"`
		Zero     int     `json:"zero,omitzero"`
		Ptr      *int    `json:"ptr"`
		PtrOmit  *int    `json:"ptrOmit,omitempty"`
		Forced   *string `json:"forced" jsonschema:"required"`
		Skipped  string  `json:"-"`
		Untagged bool
		//lint:ignore U1000 an unexported field, which inference leaves out
		hidden int
	}
	inferInner struct {
		X int `json:"x"`
	}
	inferEmbedded struct {
		E string `json:"e"`
	}
	inferNested struct {
		Inner    inferInner            `json:"inner"`
		List     []inferInner          `json:"list"`
		ByName   map[string]inferInner `json:"byName,omitempty"`
		Optional *inferInner           `json:"optional"`
		inferEmbedded
	}
	inferKinds struct {
		When   time.Time       `json:"when"`
		Bytes  []byte          `json:"bytes,omitempty"`
		Raw    json.RawMessage `json:"raw"`
		Any    any             `json:"any"`
		Num    json.Number     `json:"num"`
		Addr   netip.Addr      `json:"addr"`
		U8     uint8           `json:"u8"`
		AsText int             `json:"asText,string"`
		Fixed  [2]bool         `json:"fixed"`
	}
	inferTree struct {
		Name     string       `json:"name"`
		Children []*inferTree `json:"children,omitempty"`
	}
)

// TestInferSchema pins each rule of the inference, schema by schema.
func TestInferSchema(t *testing.T) {
	tests := []struct {
		name string
		give reflect.Type
		want string
	}{
		{"required and optional", reflect.TypeFor[AddIn](),
			`{"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"note":{"type":"string"}},"additionalProperties":false,"type":"object","required":["a","b"]}`},
		{"pointer to a struct", reflect.TypeFor[*AddIn](),
			`{"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"note":{"type":"string"}},"additionalProperties":false,"type":"object","required":["a","b"]}`},
		{"tags", reflect.TypeFor[inferTags](),
			`{"properties":{"count":{"type":"integer","maximum":10,"minimum":1,"description":"how many","default":3},` +
				`"mode":{"type":"string","enum":["fast","slow"]},"ratio":{"type":"number","exclusiveMinimum":0},` +
				`"text":{"type":"string","description":"free text, with commas"},"code":{"type":"string","minLength":2,"pattern":"^[a-z]+$"}},` +
				`"additionalProperties":false,"type":"object","required":["count","mode","ratio"]}`},
		{"optionality", reflect.TypeFor[inferOptional](),
			`{"properties":{"plain":{"type":"string"},"omit":{"type":"string"},"zero":{"type":"integer"},"ptr":{"type":["integer","null"]},` +
				`"ptrOmit":{"type":"integer"},"forced":{"type":["string","null"]},"Untagged":{"type":"boolean"}},` +
				`"additionalProperties":false,"type":"object","required":["plain","forced","Untagged"]}`},
		{"nested", reflect.TypeFor[inferNested](),
			`{"properties":{"inner":{"properties":{"x":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["x"]},` +
				`"list":{"items":{"properties":{"x":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["x"]},"type":["array","null"]},` +
				`"byName":{"additionalProperties":{"properties":{"x":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["x"]},"type":"object"},` +
				`"optional":{"properties":{"x":{"type":"integer"}},"additionalProperties":false,"required":["x"],"type":["object","null"]},` +
				`"e":{"type":"string"}},"additionalProperties":false,"type":"object","required":["inner","list","e"]}`},
		{"kinds", reflect.TypeFor[inferKinds](),
			`{"properties":{"when":{"type":"string","format":"date-time"},"bytes":{"type":"string","contentEncoding":"base64"},"raw":true,"any":true,` +
				`"num":{"type":"number"},"addr":{"type":"string"},"u8":{"type":"integer"},"asText":{"type":"string"},` +
				`"fixed":{"items":{"type":"boolean"},"type":"array","maxItems":2,"minItems":2}},` +
				`"additionalProperties":false,"type":"object","required":["when","raw","any","num","addr","u8","asText","fixed"]}`},
		{"recursive", reflect.TypeFor[inferTree](),
			`{"$defs":{"inferTree":{"properties":{"name":{"type":"string"},"children":{"items":{"$ref":"#/$defs/inferTree"},"type":"array"}},"additionalProperties":false,"type":"object","required":["name"]}},` +
				`"properties":{"name":{"type":"string"},"children":{"items":{"$ref":"#/$defs/inferTree"},"type":"array"}},"additionalProperties":false,"type":"object","required":["name"]}`},
		{"map", reflect.TypeFor[map[string]int](), `{"additionalProperties":{"type":"integer"},"type":"object"}`},
		{"any", reflect.TypeFor[any](), `{"type":"object"}`},
		{"raw message", reflect.TypeFor[json.RawMessage](), `{"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compileOne(t, tools.Tool{Name: "t", InputType: tt.give, OutputType: tt.give})
			d := c.Descriptor()
			if got := string(d.InputSchema); got != tt.want {
				t.Errorf("input schema\n got: %s\nwant: %s", got, tt.want)
			}
			if got := string(d.OutputSchema); got != tt.want {
				t.Errorf("output schema\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

// TestInferFromHandlers: Func gives the input schema, Structured both; a hand-written schema
// wins, and so does a declared type.
func TestInferFromHandlers(t *testing.T) {
	const addInSchema = `{"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"note":{"type":"string"}},"additionalProperties":false,"type":"object","required":["a","b"]}`
	const addOutSchema = `{"properties":{"sum":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["sum"]}`
	funcAdd := tools.Func(func(context.Context, AddIn) (*tools.Result, error) { return tools.TextResult("x"), nil })
	tests := []struct {
		name            string
		give            tools.Tool
		wantIn, wantOut string
	}{
		{"Func", tools.Tool{Handler: funcAdd}, addInSchema, ""},
		{"Structured", tools.Tool{Handler: tools.Structured(add)}, addInSchema, addOutSchema},
		{"hand-written input wins", tools.Tool{InputSchema: raw(`{"type":"object"}`), Handler: tools.Structured(add)}, `{"type":"object"}`, addOutSchema},
		{"hand-written output wins", tools.Tool{OutputSchema: raw(`{"type":"object"}`), Handler: tools.Structured(add)}, addInSchema, `{"type":"object"}`},
		{"declared types win", tools.Tool{InputType: reflect.TypeFor[AddOut](), OutputType: reflect.TypeFor[AddIn](), Handler: tools.Structured(add)}, addOutSchema, addInSchema},
		{"declared output type of a Func", tools.Tool{OutputType: reflect.TypeFor[AddOut](), Handler: funcAdd}, addInSchema, addOutSchema},
		{"untyped handler", tools.Tool{Handler: okHandler}, `{"type":"object"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.give.Name = "add"
			d := compileOne(t, tt.give).Descriptor()
			if got := string(d.InputSchema); got != tt.wantIn {
				t.Errorf("input schema\n got: %s\nwant: %s", got, tt.wantIn)
			}
			if got := string(d.OutputSchema); got != tt.wantOut {
				t.Errorf("output schema\n got: %s\nwant: %s", got, tt.wantOut)
			}
		})
	}
}

type (
	refusedChan struct {
		C chan int `json:"c"`
	}
	refusedDeep struct {
		Opts refusedOpts `json:"opts"`
	}
	refusedOpts struct {
		Hooks []func() `json:"hooks"`
	}
	refusedComplex struct{ Z complex128 }
	refusedIface   struct {
		Err error `json:"err"`
	}
	refusedMap struct {
		M map[[2]int]string `json:"m"`
	}
	refusedUnsafe struct {
		P unsafe.Pointer `json:"p"`
	}
	refusedIgnored struct {
		C chan int `json:"-"`
		//lint:ignore U1000 an unexported field, which inference leaves out
		f  func()
		OK int `json:"ok"`
	}
)

// TestInferRefused: a type no schema can describe is a *ToolSchemaError naming the tool and
// the field, for input and output alike, never a panic.
func TestInferRefused(t *testing.T) {
	tests := []struct {
		name      string
		give      reflect.Type
		wantField string
		wantText  string
	}{
		{"channel", reflect.TypeFor[refusedChan](), "refusedChan.C", "field refusedChan.C: chan int: a channel has no JSON form"},
		{"function deep inside", reflect.TypeFor[refusedDeep](), "refusedDeep.Opts.Hooks[]", "field refusedDeep.Opts.Hooks[]: func(): a function has no JSON form"},
		{"complex", reflect.TypeFor[refusedComplex](), "refusedComplex.Z", "complex128: a complex number has no JSON form"},
		{"non-empty interface", reflect.TypeFor[refusedIface](), "refusedIface.Err", "error: a non-empty interface cannot be decoded from JSON"},
		{"map key", reflect.TypeFor[refusedMap](), "refusedMap.M", "encoding/json cannot use [2]int as the key of a JSON object"},
		{"unsafe pointer", reflect.TypeFor[refusedUnsafe](), "refusedUnsafe.P", "an unsafe pointer has no JSON form"},
		{"not an object", reflect.TypeFor[[]int](), "", "[]int does not encode as a JSON object"},
		{"a string", reflect.TypeFor[string](), "", "string does not encode as a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kind := range []tools.SchemaKind{tools.SchemaInput, tools.SchemaOutput} {
				def := tools.Tool{Name: "bad", Handler: okHandler}
				if kind == tools.SchemaInput {
					def.InputType = tt.give
				} else {
					def.OutputType = tt.give
				}
				_, err := tools.Compile([]tools.Tool{def})
				var se *tools.ToolSchemaError
				if !errors.As(err, &se) {
					t.Fatalf("%s: got %v, want a *ToolSchemaError", kind, err)
				}
				if se.Tool != "bad" || se.Kind != kind || se.Field != tt.wantField {
					t.Errorf("%s: got {Tool: %q, Kind: %q, Field: %q}, want {bad, %s, %q}", kind, se.Tool, se.Kind, se.Field, kind, tt.wantField)
				}
				if !strings.HasPrefix(err.Error(), `tool "bad": `+string(kind)+" schema: ") || !strings.Contains(err.Error(), tt.wantText) {
					t.Errorf("%s: text %q, want it to contain %q", kind, err.Error(), tt.wantText)
				}
			}
		})
	}
	// Fields the encoding leaves out are not looked at.
	c := compileOne(t, tools.Tool{Name: "ok", InputType: reflect.TypeFor[refusedIgnored]()})
	if got, want := string(c.Descriptor().InputSchema), `{"properties":{"ok":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["ok"]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestInferredValidation: an inferred schema validates with the same field-by-field feedback
// as a hand-written one.
func TestInferredValidation(t *testing.T) {
	type in struct {
		AddIn
		Limit *int         `json:"limit"`
		Mode  string       `json:"mode" jsonschema:"enum=x,enum=y"`
		Tree  *inferTree   `json:"tree,omitempty"`
		Ms    int64        `json:"ms" jsonschema:"minimum=0,maximum=600000"`
		Inner []inferInner `json:"inner,omitempty"`
	}
	c := compileOne(t, tools.Tool{Name: "v", Handler: tools.Func(func(context.Context, in) (*tools.Result, error) { return tools.TextResult("ok"), nil })})
	tests := []struct {
		give string
		want string // "" means valid
	}{
		{`{"a":1,"b":2,"mode":"x","ms":0}`, ""},
		{`{"a":1,"b":2,"mode":"x","ms":0,"limit":null,"note":"n"}`, ""},
		{`{"a":1,"b":2,"mode":"x","ms":0,"tree":{"name":"r","children":[{"name":"c","children":[]}]}}`, ""},
		{`{"a":"x","b":2,"mode":"x","ms":0}`, "invalid arguments: a: must be integer, got string"},
		{`{"b":2,"mode":"x","ms":0}`, "invalid arguments: a: missing property"},
		{`{"a":1,"b":2,"mode":"z","ms":700000,"extra":1}`, `invalid arguments: extra: unexpected property; mode: must be one of "x", "y"; ms: must be <= 600000`},
		{`{"a":1,"b":2,"mode":"x","ms":0,"tree":{"name":"r","children":[{"children":[]}]}}`, "invalid arguments: tree/children/0/name: missing property"},
		{`{"a":1,"b":2,"mode":"x","ms":0,"inner":[{"x":1.5}]}`, "invalid arguments: inner/0/x: must be integer, got number"},
	}
	for _, tt := range tests {
		_, fb := c.ValidateInput(raw(tt.give))
		got := ""
		if fb != nil {
			got = resultText(t, fb)
		}
		if got != tt.want {
			t.Errorf("%s\n got: %q\nwant: %q", tt.give, got, tt.want)
		}
	}
}

// TestInferredOutput: a Structured tool's output is checked against the schema of Out, and
// what encoding/json makes of nil pointers, slices and maps conforms to it.
func TestInferredOutput(t *testing.T) {
	type out struct {
		Sum   int            `json:"sum"`
		Ptr   *int           `json:"ptr"`
		List  []string       `json:"list"`
		Attrs map[string]int `json:"attrs"`
		When  time.Time      `json:"when"`
	}
	c := compileOne(t, tools.Tool{Name: "o", Handler: tools.Structured(func(context.Context, AddIn) (out, error) { return out{Sum: 3}, nil })})
	res, err := c.Run(context.Background(), &tools.Request{Arguments: raw(`{"a":1,"b":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.StructuredContent), `{"sum":3,"ptr":null,"list":null,"attrs":null,"when":"0001-01-01T00:00:00Z"}`; got != want {
		t.Errorf("structuredContent %s, want %s", got, want)
	}
	// A Func that declares its output type gets the output checked.
	bad := compileOne(t, tools.Tool{Name: "b", OutputType: reflect.TypeFor[AddOut](),
		Handler: tools.Func(func(context.Context, AddIn) (*tools.Result, error) {
			return &tools.Result{StructuredContent: map[string]any{"sum": "three"}}, nil
		})})
	_, err = bad.Run(context.Background(), &tools.Request{Arguments: raw(`{"a":1,"b":2}`)})
	var oe *tools.OutputError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "sum: must be integer, got string") {
		t.Errorf("got %v, want an *OutputError naming sum", err)
	}
}

// TestInferHeaderParam: the x-mcp-header annotation of MCP 2026-07-28 is written with the
// generator's jsonschema_extras tag, and Compile checks it as in a hand-written schema.
func TestInferHeaderParam(t *testing.T) {
	type in struct {
		Region string `json:"region" jsonschema_extras:"x-mcp-header=Region"`
		Query  string `json:"query"`
	}
	c := compileOne(t, tools.Tool{Name: "h", InputType: reflect.TypeFor[in]()})
	if got, want := string(c.Descriptor().InputSchema), `{"properties":{"region":{"type":"string","x-mcp-header":"Region"},"query":{"type":"string"}},"additionalProperties":false,"type":"object","required":["region","query"]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if hp := c.HeaderParams(); len(hp) != 1 || hp[0].Name != "Region" {
		t.Errorf("header params %+v, want Region", hp)
	}
	type bad struct {
		Ratio float64 `json:"ratio" jsonschema_extras:"x-mcp-header=Ratio"`
	}
	_, err := tools.Compile([]tools.Tool{{Name: "b", InputType: reflect.TypeFor[bad](), Handler: okHandler}})
	var se *tools.ToolSchemaError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "x-mcp-header") {
		t.Errorf("a number header: got %v, want a *ToolSchemaError about x-mcp-header", err)
	}
}
