package tools

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/toolgrain/toolgrain/protocol"
)

// Func adapts a function with typed input to a [Handler].
//
// A tool whose Handler is Func[In] and whose [Tool.InputSchema] is nil gets its input schema
// from In, once, when the server compiles its tools; a hand-written InputSchema wins. The rules
// are the official Go SDK's, adjusted to encoding/json ([Tool.InputType] has them in full):
// properties are the exported fields under their json names, and no other is allowed; a field
// is required unless it is omitempty, omitzero or a pointer; integers are "integer", time.Time
// a date-time string, slices arrays, maps and nested structs objects, any and json.RawMessage
// any value; the jsonschema tag adds keywords, as in
// jsonschema:"description=...,enum=a,enum=b,minimum=0,maximum=10,default=3". A channel, a
// function, a complex number or a non-empty interface in In is a [*ToolSchemaError] naming the
// field. The arguments are validated against the schema (with the same field-by-field feedback
// as a hand-written one) before the handler runs, so fn only sees arguments that fit In.
//
// Per call:
//
//   - the validated arguments are decoded into In with encoding/json (unknown fields are
//     ignored: the schema decides what is allowed);
//   - when they cannot be decoded, the handler is not called and the call fails with a
//     [*DecodeError] — an unexpected failure, because the schema accepted the arguments, so the
//     schema and In disagree;
//   - fn's result and error are returned as they are: a [*Result] (an [ErrorResult] included)
//     reaches the client, an error is an unexpected failure.
//
// A nil fn gives a nil Handler, which [Compile] reports.
func Func[In any](fn func(ctx context.Context, in In) (*Result, error)) Handler {
	if fn == nil {
		return nil
	}
	return &funcHandler[In]{fn: fn}
}

type funcHandler[In any] struct {
	fn func(ctx context.Context, in In) (*Result, error)
}

func (h *funcHandler[In]) Handle(ctx context.Context, req *Request) (*Result, error) {
	var in In
	if err := decodeArguments(req, &in); err != nil {
		return nil, err
	}
	return h.fn(ctx, in)
}

func (*funcHandler[In]) argumentType() reflect.Type { return reflect.TypeFor[In]() }
func (*funcHandler[In]) outputType() reflect.Type   { return nil }

// Structured adapts a function with typed input and typed output to a [Handler].
//
// A tool whose Handler is Structured[In, Out] gets its input schema from In, as for [Func], and
// its output schema from Out when its [Tool.OutputSchema] is nil, by the same rules (a pointer,
// slice or map field without omitempty also accepts null, which is how encoding/json sends a
// nil one); hand-written schemas win. Input is handled as by [Func]. The output:
//
//   - is marshalled with encoding/json (without HTML escaping) and sent as the result's
//     structuredContent, which must be a JSON object and conform to the tool's output schema;
//   - is also sent as one text content block holding the same JSON, as MCP asks of tools that
//     return structured content;
//   - cannot be encoded, or breaks the schema: an [*OutputError], an unexpected failure.
//
// An error from fn is returned as it is, and no output is sent. A nil fn gives a nil Handler,
// which [Compile] reports.
func Structured[In, Out any](fn func(ctx context.Context, in In) (Out, error)) Handler {
	if fn == nil {
		return nil
	}
	return &structuredHandler[In, Out]{fn: fn}
}

type structuredHandler[In, Out any] struct {
	fn func(ctx context.Context, in In) (Out, error)
}

func (h *structuredHandler[In, Out]) Handle(ctx context.Context, req *Request) (*Result, error) {
	var in In
	if err := decodeArguments(req, &in); err != nil {
		return nil, err
	}
	out, err := h.fn(ctx, in)
	if err != nil {
		return nil, err
	}
	b, err := marshalJSON(out)
	if err != nil {
		return nil, &OutputError{Tool: req.Tool, Err: err}
	}
	return &Result{
		Content:           []protocol.Content{protocol.TextContent(string(b))},
		StructuredContent: json.RawMessage(b),
	}, nil
}

func (*structuredHandler[In, Out]) argumentType() reflect.Type { return reflect.TypeFor[In]() }
func (*structuredHandler[In, Out]) outputType() reflect.Type   { return reflect.TypeFor[Out]() }

var (
	_ typedHandler = (*funcHandler[struct{}])(nil)
	_ typedHandler = (*structuredHandler[struct{}, struct{}])(nil)
)

func decodeArguments(req *Request, in any) error {
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, in); err != nil {
		return &DecodeError{Tool: req.Tool, Err: err}
	}
	return nil
}
