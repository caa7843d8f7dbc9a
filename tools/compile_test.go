package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

func TestCompileNames(t *testing.T) {
	tests := []struct {
		name       string
		give       string
		wantReason string // "" means the name is valid
	}{
		{"valid", "a.b-c_D9", ""},
		{"single_character", "x", ""},
		{"exactly_128", strings.Repeat("a", 128), ""},
		{"empty", "", "empty"},
		{"129_characters", strings.Repeat("a", 129), "longer than 128 characters"},
		{"space", "bad name!", "invalid character ' ' at position 3 (A-Za-z0-9_.- allowed)"},
		{"unicode", "héllo", "invalid character 'é' at position 1 (A-Za-z0-9_.- allowed)"},
		{"slash", "a/b", "invalid character '/' at position 1 (A-Za-z0-9_.- allowed)"},
		{"invalid_utf8", "a\xffb", "invalid UTF-8 at position 1 (A-Za-z0-9_.- allowed)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tools.Compile([]tools.Tool{{Name: tt.give, Handler: okHandler}})
			var nameErr *tools.ToolNameError
			gotErr := errors.As(err, &nameErr)
			if gotErr != (tt.wantReason != "") {
				t.Fatalf("Compile(%q) = %v, want a name error: %v", tt.give, err, tt.wantReason != "")
			}
			if !gotErr {
				return
			}
			if nameErr.Name != tt.give || nameErr.Reason != tt.wantReason {
				t.Errorf("got {Name: %q, Reason: %q}, want {Name: %q, Reason: %q}", nameErr.Name, nameErr.Reason, tt.give, tt.wantReason)
			}
		})
	}
}

func TestToolNameErrorText(t *testing.T) {
	_, err := tools.Compile([]tools.Tool{{Name: "bad name!", Handler: okHandler}})
	want := `tool name "bad name!": invalid character ' ' at position 3 (A-Za-z0-9_.- allowed)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestCompileDuplicateName(t *testing.T) {
	_, err := tools.Compile([]tools.Tool{
		{Name: "echo", Handler: okHandler},
		{Name: "other", Handler: okHandler},
		{Name: "echo", Handler: okHandler},
	})
	var nameErr *tools.ToolNameError
	if !errors.As(err, &nameErr) {
		t.Fatalf("got %v, want a *ToolNameError", err)
	}
	if nameErr.Name != "echo" || nameErr.Reason != "duplicate" {
		t.Errorf("got %+v, want echo: duplicate", nameErr)
	}
	if want := `tool name "echo": duplicate`; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	tests := []struct {
		name      string
		give      tools.Tool
		wantKind  tools.SchemaKind
		wantCause string // a substring of the cause's text
	}{
		{
			name:      "input_invalid_json",
			give:      tools.Tool{InputSchema: raw(`{"type":"object",`)},
			wantKind:  tools.SchemaInput,
			wantCause: "invalid JSON",
		},
		{
			name:      "input_root_not_object",
			give:      tools.Tool{InputSchema: raw(`{"type":"string"}`)},
			wantKind:  tools.SchemaInput,
			wantCause: `root must declare "type": "object"`,
		},
		{
			name:      "input_root_without_type",
			give:      tools.Tool{InputSchema: raw(`{"properties":{"a":{}}}`)},
			wantKind:  tools.SchemaInput,
			wantCause: `root must declare "type": "object"`,
		},
		{
			name:      "input_root_type_list",
			give:      tools.Tool{InputSchema: raw(`{"type":["object","null"]}`)},
			wantKind:  tools.SchemaInput,
			wantCause: `root must declare "type": "object"`,
		},
		{
			name:      "input_root_boolean",
			give:      tools.Tool{InputSchema: raw(`true`)},
			wantKind:  tools.SchemaInput,
			wantCause: `root must be a JSON object declaring "type": "object"`,
		},
		{
			name:      "input_metaschema",
			give:      tools.Tool{InputSchema: raw(`{"type":"object","properties":{"a":{"type":5}}}`)},
			wantKind:  tools.SchemaInput,
			wantCause: `not a valid JSON Schema: properties/a/type: must be one of "array", "boolean", "integer", "null", "number", "object", "string"`,
		},
		{
			name:      "input_unsupported_dialect",
			give:      tools.Tool{InputSchema: raw(`{"$schema":"https://example.com/my-dialect","type":"object"}`)},
			wantKind:  tools.SchemaInput,
			wantCause: `unsupported $schema "https://example.com/my-dialect"`,
		},
		{
			name:      "input_remote_ref",
			give:      tools.Tool{InputSchema: raw(`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`)},
			wantKind:  tools.SchemaInput,
			wantCause: `cannot load "https://example.com/a.json": external schema documents are never loaded`,
		},
		{
			name:      "input_file_ref",
			give:      tools.Tool{InputSchema: raw(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)},
			wantKind:  tools.SchemaInput,
			wantCause: `cannot load "file:///etc/passwd"`,
		},
		{
			name:      "input_relative_ref",
			give:      tools.Tool{InputSchema: raw(`{"type":"object","$ref":"defs.json"}`)},
			wantKind:  tools.SchemaInput,
			wantCause: "external schema documents are never loaded",
		},
		{
			name:      "input_lookahead_pattern",
			give:      tools.Tool{InputSchema: raw(`{"type":"object","properties":{"a":{"pattern":"(?=x)"}}}`)},
			wantKind:  tools.SchemaInput,
			wantCause: "properties/a/pattern: must be a valid regex",
		},
		{
			name:      "output_root_not_object",
			give:      tools.Tool{OutputSchema: raw(`{"type":"array"}`)},
			wantKind:  tools.SchemaOutput,
			wantCause: `root must declare "type": "object"`,
		},
		{
			name:      "output_metaschema",
			give:      tools.Tool{OutputSchema: raw(`{"type":"object","required":"greeting"}`)},
			wantKind:  tools.SchemaOutput,
			wantCause: "required: must be array, got string",
		},
		{
			name:      "metadata_invalid_json",
			give:      tools.Tool{MetaSchema: raw(`{`)},
			wantKind:  tools.SchemaMetadata,
			wantCause: "invalid JSON",
		},
		{
			name:      "metadata_metaschema",
			give:      tools.Tool{MetaSchema: raw(`{"type":5}`)},
			wantKind:  tools.SchemaMetadata,
			wantCause: "not a valid JSON Schema: type: must be one of",
		},
		{
			name:      "metadata_remote_ref",
			give:      tools.Tool{MetaSchema: raw(`{"$ref":"http://example.com/meta.json"}`)},
			wantKind:  tools.SchemaMetadata,
			wantCause: `cannot load "http://example.com/meta.json"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := tt.give
			def.Name, def.Handler = "x", okHandler
			_, err := tools.Compile([]tools.Tool{def})
			var schemaErr *tools.ToolSchemaError
			if !errors.As(err, &schemaErr) {
				t.Fatalf("got %v, want a *ToolSchemaError", err)
			}
			if schemaErr.Tool != "x" || schemaErr.Kind != tt.wantKind {
				t.Errorf("got {Tool: %q, Kind: %q}, want {Tool: %q, Kind: %q}", schemaErr.Tool, schemaErr.Kind, "x", tt.wantKind)
			}
			cause := errors.Unwrap(schemaErr)
			if cause == nil {
				t.Fatal("errors.Unwrap returned nil")
			}
			if !strings.Contains(cause.Error(), tt.wantCause) {
				t.Errorf("cause %q does not contain %q", cause, tt.wantCause)
			}
			if want := `tool "x": ` + string(tt.wantKind) + " schema: " + cause.Error(); schemaErr.Error() != want {
				t.Errorf("Error() = %q, want %q", schemaErr.Error(), want)
			}
		})
	}
}

// The cause of a metaschema failure keeps the jsonschema error reachable.
func TestToolSchemaErrorUnwrapsJSONSchema(t *testing.T) {
	_, err := tools.Compile([]tools.Tool{{Name: "x", Handler: okHandler, MetaSchema: raw(`{"type":5}`)}})
	var metaErr *jsonschema.SchemaValidationError
	if !errors.As(err, &metaErr) {
		t.Errorf("got %v, want a *jsonschema.SchemaValidationError in the chain", err)
	}
}

// Schemas without "$schema" are 2020-12 (MCP SEP-1613): prefixItems is enforced.
func TestCompileDefaultsToDraft2020(t *testing.T) {
	c := compileOne(t, tools.Tool{
		Name:        "pair",
		InputSchema: raw(`{"type":"object","properties":{"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}}}`),
	})
	_, fb := c.ValidateInput(raw(`{"pair":["a",1]}`))
	if fb != nil {
		t.Fatalf("valid pair rejected: %s", resultText(t, fb))
	}
	_, fb = c.ValidateInput(raw(`{"pair":[1,"a"]}`))
	want := "invalid arguments: pair/0: must be string, got number; pair/1: must be integer, got string"
	if fb == nil || resultText(t, fb) != want {
		t.Errorf("got %+v, want %q", fb, want)
	}
}

// A schema naming an older draft is compiled with that draft's rules: draft-07's array form of
// items is a tuple.
func TestCompileNamedDraft(t *testing.T) {
	c := compileOne(t, tools.Tool{
		Name:        "pair",
		InputSchema: raw(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"pair":{"type":"array","items":[{"type":"string"}]}}}`),
	})
	_, fb := c.ValidateInput(raw(`{"pair":[1]}`))
	want := "invalid arguments: pair/0: must be string, got number"
	if fb == nil || resultText(t, fb) != want {
		t.Errorf("got %+v, want %q", fb, want)
	}
}

func TestCompilePlainErrors(t *testing.T) {
	tests := []struct {
		name string
		give tools.Tool
		want string
	}{
		{"no_handler", tools.Tool{Name: "x"}, `tool "x": no handler`},
		{"nil_handler_func", tools.Tool{Name: "x", Handler: tools.HandlerFunc(nil)}, `tool "x": no handler`},
		{"nil_typed_func", tools.Tool{Name: "x", Handler: tools.Func[struct{}](nil)}, `tool "x": no handler`},
		{"nil_provider", tools.Tool{Name: "x", Handler: okHandler, Providers: []tools.Provider{nil}}, `tool "x": provider 0: nil`},
		{"nil_dependency", tools.Tool{Name: "x", Handler: okHandler, Providers: []tools.Provider{(*tools.Dependency[int])(nil)}}, `tool "x": provider 0: nil`},
		{"dependency_without_func", tools.Tool{Name: "x", Handler: okHandler, Providers: []tools.Provider{tools.NewDependency[int]("db", nil)}}, `tool "x": provider 0: dependency has no provider function`},
		{"negative_timeout", tools.Tool{Name: "x", Handler: okHandler, Timeout: -time.Second}, `tool "x": negative timeout -1s`},
		{"negative_concurrency", tools.Tool{Name: "x", Handler: okHandler, MaxConcurrency: -1}, `tool "x": negative concurrency limit -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tools.Compile([]tools.Tool{tt.give})
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
			var nameErr *tools.ToolNameError
			var schemaErr *tools.ToolSchemaError
			if errors.As(err, &nameErr) || errors.As(err, &schemaErr) {
				t.Errorf("got a construction error type, want a plain error")
			}
		})
	}
}

// Compile reports every problem, so one run of the server shows them all.
func TestCompileReportsEveryProblem(t *testing.T) {
	_, err := tools.Compile([]tools.Tool{
		{Name: "bad name", Handler: okHandler},
		{Name: "ok", Handler: okHandler, OutputSchema: raw(`{"type":"string"}`)},
		{Name: "nohandler"},
	})
	var nameErr *tools.ToolNameError
	var schemaErr *tools.ToolSchemaError
	if !errors.As(err, &nameErr) || !errors.As(err, &schemaErr) || !strings.Contains(err.Error(), `tool "nohandler": no handler`) {
		t.Errorf("got %v, want the name, schema and handler problems", err)
	}
}

func TestSet(t *testing.T) {
	set, err := tools.Compile([]tools.Tool{
		{Name: "b", Handler: okHandler},
		{Name: "a", Handler: okHandler},
		{Name: "c", Handler: okHandler},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range set.List() {
		names = append(names, c.Name())
	}
	if got := strings.Join(names, ","); got != "b,a,c" || set.Len() != 3 {
		t.Errorf("List = %s, Len = %d, want b,a,c in registration order and 3", got, set.Len())
	}
	set.List()[0] = nil
	if c, ok := set.Lookup("b"); !ok || c.Name() != "b" || set.List()[0] == nil {
		t.Error("List must return a copy that does not change the set")
	}
	if _, ok := set.Lookup("nope"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}

	var empty *tools.Set
	if _, ok := empty.Lookup("a"); ok || empty.Len() != 0 || len(empty.List()) != 0 {
		t.Error("a nil *Set must behave as an empty set")
	}
}

func TestDescriptor(t *testing.T) {
	readOnly := true
	annotations := &protocol.ToolAnnotations{ReadOnlyHint: &readOnly}
	spaced := `{ "type": "object",  "properties": { "name": { "type": "string" } } }`
	tests := []struct {
		name string
		give tools.Tool
		want protocol.Tool
	}{
		{
			name: "defaults",
			give: tools.Tool{Name: "x"},
			want: protocol.Tool{Name: "x", InputSchema: raw(`{"type":"object"}`)},
		},
		{
			name: "verbatim",
			give: tools.Tool{Name: "greet", Title: "Greet", Description: "Says hello.", InputSchema: raw(spaced), OutputSchema: raw(greetOutputSchema), MetaSchema: raw(`{"type":"object"}`), Annotations: annotations},
			want: protocol.Tool{Name: "greet", Title: "Greet", Description: "Says hello.", InputSchema: raw(spaced), OutputSchema: raw(greetOutputSchema), Annotations: annotations},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(compileOne(t, tt.give).Descriptor())
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// Compile copies what it keeps: changing the definition afterwards changes nothing.
func TestCompileCopiesDefinition(t *testing.T) {
	def := tools.Tool{Name: "echo", Handler: okHandler, InputSchema: raw(echoSchema), Providers: []tools.Provider{tools.NewDependency("n", func(ctx context.Context) (int, error) { return 1, nil })}}
	c := compileOne(t, def)
	copy(def.InputSchema, strings.Repeat(" ", len(def.InputSchema)))
	def.Providers[0] = nil

	if got := string(c.Descriptor().InputSchema); got != echoSchema {
		t.Errorf("descriptor schema changed to %q", got)
	}
	if string(c.Def().InputSchema) != echoSchema || c.Def().Providers[0] == nil {
		t.Error("Def changed with the caller's definition")
	}
	if _, fb := c.ValidateInput(raw(`{}`)); fb == nil {
		t.Error("compiled schema changed with the caller's definition")
	}
}

// Self-contained schemas compile, whatever their dialect or internal references.
func TestCompileValidSchemas(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"explicit_2020_12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`},
		{"explicit_2020_12_fragment", `{"$schema":"https://json-schema.org/draft/2020-12/schema#","type":"object","properties":{"a":{"type":"string"}}}`},
		{"draft_2019_09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"a":{"type":"string"}}}`},
		{"draft_04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"string"}}}`},
		{"defs_ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`},
		{"id_and_absolute_ref", `{"$id":"https://example.com/s.json","type":"object","properties":{"a":{"$ref":"https://example.com/s.json#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`},
		{"embedded_resource_ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}},"$defs":{"s":{"$id":"https://example.com/s.json","type":"string"}}}`},
		{"metaschema_ref", `{"type":"object","properties":{"schema":{"$ref":"https://json-schema.org/draft/2020-12/schema"}}}`},
		{"annotations_only", `{"type":"object","title":"T","description":"D","$comment":"c","examples":[{}],"default":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tools.Compile([]tools.Tool{{Name: "x", Handler: okHandler, InputSchema: raw(tt.give), OutputSchema: raw(tt.give), MetaSchema: raw(tt.give)}})
			if err != nil {
				t.Errorf("Compile: %v", err)
			}
		})
	}
}

// A Set is used by every connection at once.
func TestCompiledConcurrentUse(t *testing.T) {
	c := compileOne(t, tools.Tool{
		Name:         "greet",
		InputSchema:  raw(greetSchema),
		OutputSchema: raw(greetOutputSchema),
		MetaSchema:   raw(`{"type":"object","properties":{"progressToken":{"type":["string","integer"]}}}`),
		Handler:      tools.Structured(greet),
	})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				args, fb := c.ValidateInput(raw(`{"name":"Ada"}`))
				if fb != nil || c.ValidateMeta(raw(`{"progressToken":1}`)) != nil {
					t.Error("valid call rejected")
					return
				}
				if _, fb := c.ValidateInput(raw(`{"name":5}`)); fb == nil {
					t.Error("invalid call accepted")
					return
				}
				if _, err := c.Run(context.Background(), &tools.Request{Tool: "greet", Arguments: args}); err != nil {
					t.Errorf("goroutine %d call %d: %v", i, j, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
