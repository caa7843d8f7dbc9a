package tools

import (
	"context"
	"encoding/json"

	"github.com/toolgrain/toolgrain/protocol"
)

// Func adapts a function with typed input to a [Handler]:
//
//   - the arguments, already validated against the tool's input schema, are decoded into In
//     with encoding/json (unknown fields are ignored: the schema decides what is allowed);
//   - when they cannot be decoded, the handler is not called and the call fails with a
//     [*DecodeError] — an unexpected failure, because the schema accepted the arguments, so the
//     schema and In disagree;
//   - fn's result and error are returned as they are.
//
// A nil fn gives a nil Handler, which [Compile] reports.
func Func[In any](fn func(ctx context.Context, in In) (*Result, error)) Handler {
	if fn == nil {
		return nil
	}
	return HandlerFunc(func(ctx context.Context, req *Request) (*Result, error) {
		var in In
		if err := decodeArguments(req, &in); err != nil {
			return nil, err
		}
		return fn(ctx, in)
	})
}

// Structured adapts a function with typed input and typed output to a [Handler]. Input is
// handled as by [Func]. The output:
//
//   - is marshalled with encoding/json (without HTML escaping) and sent as the result's
//     structuredContent, which must be a JSON object and, when the tool has an output schema,
//     conform to it;
//   - is also sent as one text content block holding the same JSON, as MCP asks of tools that
//     return structured content;
//   - cannot be encoded: an [*OutputError].
//
// An error from fn is returned as it is, and no output is sent. A nil fn gives a nil Handler,
// which [Compile] reports.
func Structured[In, Out any](fn func(ctx context.Context, in In) (Out, error)) Handler {
	if fn == nil {
		return nil
	}
	return HandlerFunc(func(ctx context.Context, req *Request) (*Result, error) {
		var in In
		if err := decodeArguments(req, &in); err != nil {
			return nil, err
		}
		out, err := fn(ctx, in)
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
	})
}

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
