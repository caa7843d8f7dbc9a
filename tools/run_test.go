package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// returning makes a handler that returns r and no error.
func returning(r *tools.Result) tools.Handler {
	return tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) { return r, nil })
}

// run compiles def as tool "x" and runs it once with empty arguments.
func run(tb testing.TB, def tools.Tool) (*protocol.CallToolResult, error) {
	tb.Helper()
	def.Name = "x"
	return compileOne(tb, def).Run(context.Background(), &tools.Request{Tool: "x", Arguments: raw(`{}`)})
}

func TestRunResults(t *testing.T) {
	tests := []struct {
		name string
		give tools.Tool
		want string // the result as JSON
	}{
		{
			name: "text",
			give: tools.Tool{Handler: returning(tools.TextResult("hi"))},
			want: `{"content":[{"type":"text","text":"hi"}]}`,
		},
		{
			name: "no_content",
			give: tools.Tool{Handler: returning(&tools.Result{})},
			want: `{"content":[]}`,
		},
		{
			name: "explicit_error_result",
			give: tools.Tool{Handler: returning(tools.ErrorResult("public failure message"))},
			want: `{"content":[{"type":"text","text":"public failure message"}],"isError":true}`,
		},
		{
			name: "error_result_skips_output_schema",
			give: tools.Tool{OutputSchema: raw(greetOutputSchema), Handler: returning(tools.ErrorResult("public failure message"))},
			want: `{"content":[{"type":"text","text":"public failure message"}],"isError":true}`,
		},
		{
			name: "error_result_with_nonconforming_structure",
			give: tools.Tool{OutputSchema: raw(greetOutputSchema), Handler: returning(&tools.Result{IsError: true, StructuredContent: map[string]int{"code": 7}})},
			want: `{"content":[],"structuredContent":{"code":7},"isError":true}`,
		},
		{
			name: "conforming_structure",
			give: tools.Tool{OutputSchema: raw(greetOutputSchema), Handler: returning(&tools.Result{StructuredContent: map[string]string{"greeting": "Hello"}})},
			want: `{"content":[],"structuredContent":{"greeting":"Hello"}}`,
		},
		{
			name: "structure_without_output_schema",
			give: tools.Tool{Handler: returning(&tools.Result{StructuredContent: struct {
				N int `json:"n"`
			}{3}})},
			want: `{"content":[],"structuredContent":{"n":3}}`,
		},
		{
			name: "raw_structure",
			give: tools.Tool{OutputSchema: raw(greetOutputSchema), Handler: returning(&tools.Result{StructuredContent: json.RawMessage(` {"greeting": "Hi"} `)})},
			want: `{"content":[],"structuredContent":{"greeting":"Hi"}}`,
		},
		{
			name: "meta",
			give: tools.Tool{Handler: returning(&tools.Result{Meta: raw(`{"trace":"t1"}`)})},
			want: `{"content":[],"_meta":{"trace":"t1"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := run(t, tt.give)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRunOutputErrors(t *testing.T) {
	const secret = "SECRET-output-value"
	tests := []struct {
		name      string
		give      tools.Tool
		wantCause string
	}{
		{
			name:      "nil_result",
			give:      tools.Tool{Handler: returning(nil)},
			wantCause: "handler returned neither a result nor an error",
		},
		{
			name:      "schema_violation",
			give:      tools.Tool{OutputSchema: raw(greetOutputSchema), Handler: returning(&tools.Result{StructuredContent: map[string]any{"greeting": 5, "extra": secret}})},
			wantCause: "does not conform to the output schema: extra: unexpected property; greeting: must be string, got number",
		},
		{
			name:      "missing_structure",
			give:      tools.Tool{OutputSchema: raw(greetOutputSchema), Handler: returning(tools.TextResult("Hello"))},
			wantCause: "result has no structuredContent but the tool has an output schema",
		},
		{
			name:      "missing_structure_object_only_schema",
			give:      tools.Tool{OutputSchema: raw(`{"type":"object"}`), Handler: returning(tools.TextResult("Hello"))},
			wantCause: "result has no structuredContent but the tool has an output schema",
		},
		{
			name:      "structure_not_object",
			give:      tools.Tool{Handler: returning(&tools.Result{StructuredContent: []string{secret}})},
			wantCause: "structuredContent: must encode to a JSON object, got array",
		},
		{
			name:      "structure_typed_nil",
			give:      tools.Tool{Handler: returning(&tools.Result{StructuredContent: map[string]any(nil)})},
			wantCause: "structuredContent: must encode to a JSON object, got null",
		},
		{
			name:      "structure_unencodable",
			give:      tools.Tool{Handler: returning(&tools.Result{StructuredContent: map[string]any{"c": make(chan int)}})},
			wantCause: "structuredContent: json: unsupported type: chan int",
		},
		{
			name:      "structure_invalid_raw",
			give:      tools.Tool{Handler: returning(&tools.Result{StructuredContent: json.RawMessage(`{"a":`)})},
			wantCause: "structuredContent: invalid JSON",
		},
		{
			name:      "meta_not_object",
			give:      tools.Tool{Handler: returning(&tools.Result{Meta: raw(`["x"]`)})},
			wantCause: "_meta: must be a JSON object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := run(t, tt.give)
			var outErr *tools.OutputError
			if !errors.As(err, &outErr) || res != nil {
				t.Fatalf("got (%v, %v), want only an *OutputError", res, err)
			}
			if outErr.Tool != "x" || errors.Unwrap(outErr) == nil {
				t.Errorf("got Tool %q, cause %v", outErr.Tool, errors.Unwrap(outErr))
			}
			if want := `tool "x": output: ` + tt.wantCause; err.Error() != want {
				t.Errorf("got  %q\nwant %q", err.Error(), want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the output: %v", err)
			}
		})
	}
}

// A handler error is an unexpected failure that Run returns unchanged, dropping any result.
func TestRunHandlerError(t *testing.T) {
	errBoom := errors.New("SECRET-internal-detail")
	res, err := run(t, tools.Tool{Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
		return tools.TextResult("ignored"), errBoom
	})})
	if err != errBoom || res != nil {
		t.Errorf("got (%v, %v), want (nil, the handler's error)", res, err)
	}
}

func TestRunPanic(t *testing.T) {
	res, err := run(t, tools.Tool{Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
		panic("SECRET-internal-detail")
	})})
	var panicErr *tools.PanicError
	if !errors.As(err, &panicErr) || res != nil {
		t.Fatalf("got (%v, %v), want only a *PanicError", res, err)
	}
	if panicErr.Tool != "x" || panicErr.Value != "SECRET-internal-detail" {
		t.Errorf("got {Tool: %q, Value: %v}", panicErr.Tool, panicErr.Value)
	}
	if !strings.Contains(string(panicErr.Stack), "TestRunPanic") {
		t.Errorf("the stack does not show the panicking handler:\n%s", panicErr.Stack)
	}
	if want := `tool "x": panic: SECRET-internal-detail`; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

// A panic while encoding the result (a MarshalJSON method) is contained too.
func TestRunPanicInOutput(t *testing.T) {
	_, err := run(t, tools.Tool{Handler: returning(&tools.Result{StructuredContent: panickingJSON{}})})
	var panicErr *tools.PanicError
	if !errors.As(err, &panicErr) {
		t.Errorf("got %v, want a *PanicError", err)
	}
}

type panickingJSON struct{}

func (panickingJSON) MarshalJSON() ([]byte, error) { panic("marshal") }

// Run hands the handler the defaults it promises, whatever the engine passed.
func TestRunNormalisesRequest(t *testing.T) {
	tests := []struct {
		name string
		give *tools.Request
		want tools.Request
	}{
		{"nil", nil, tools.Request{Tool: "x", Arguments: raw(`{}`)}},
		{"empty", &tools.Request{}, tools.Request{Tool: "x", Arguments: raw(`{}`)}},
		{"complete", &tools.Request{Tool: "x", Arguments: raw(`{"a":1}`), Meta: raw(`{"m":2}`)}, tools.Request{Tool: "x", Arguments: raw(`{"a":1}`), Meta: raw(`{"m":2}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got tools.Request
			c := compileOne(t, tools.Tool{Name: "x", Handler: tools.HandlerFunc(func(_ context.Context, req *tools.Request) (*tools.Result, error) {
				got = *req
				return tools.TextResult("ok"), nil
			})})
			if _, err := c.Run(context.Background(), tt.give); err != nil {
				t.Fatal(err)
			}
			if got.Tool != tt.want.Tool || string(got.Arguments) != string(tt.want.Arguments) || string(got.Meta) != string(tt.want.Meta) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResultEncode(t *testing.T) {
	const text = "invalid arguments: ms: must be <= 600000"
	res, err := tools.ErrorResult(text).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != text || res.StructuredContent != nil {
		t.Errorf("got %+v, want one text block %q with isError", res, text)
	}
	if _, err := (*tools.Result)(nil).Encode(); err == nil {
		t.Error("Encode of a nil result succeeded")
	}
}
