package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/toolgrain/toolgrain/protocol"
)

// Prefixes of validation feedback. The feedback text is public and stable: clients and tests
// rely on it.
const (
	invalidArgumentsPrefix = "invalid arguments: "
	invalidMetaPrefix      = "invalid _meta: "
)

// ValidateInput validates the arguments of a call against the tool's input schema.
//
// Absent arguments (nil, empty or null) are validated as {}. It returns the arguments to hand to
// the handler ("{}" when absent, raw otherwise) and, when they are invalid, a public error
// result whose text is the validation feedback:
//
//	invalid arguments: <location>: <rule>; <location>: <rule>
//
// Findings are sorted by location: the path inside the arguments with its tokens joined by "/"
// and escaped as in a JSON pointer ("~" as "~0", "/" as "~1"), or "arguments" for the arguments
// themselves; array indices sort by number. Rules quote the schema, never the client's
// values, except for the name of a JSON type: "must be <= 600000", "missing property",
// "must be string, got number", `must be one of "a", "b"`, "unexpected property",
// "arguments: must be an object". At most 20 findings are listed.
//
// Feedback is not a failure of the server: the engine sends it to the client as it is and does
// not report it to diagnostics.
func (c *Compiled) ValidateInput(raw json.RawMessage) (args json.RawMessage, feedback *Result) {
	if isAbsent(raw) {
		raw = json.RawMessage("{}")
		if c.input.sch == nil {
			return raw, nil
		}
		if msg := c.input.validateValue(map[string]any{}); msg != "" {
			return nil, ErrorResult(invalidArgumentsPrefix + msg)
		}
		return raw, nil
	}
	if msg := c.input.validate(raw); msg != "" {
		return nil, ErrorResult(invalidArgumentsPrefix + msg)
	}
	return raw, nil
}

// ValidateMeta validates the call's params._meta against the tool's metadata schema and returns
// a public error result with the feedback ("invalid _meta: ..."; see [Compiled.ValidateInput])
// when it fails. Absent _meta (nil, empty or null) is validated as {}. A tool without a
// metadata schema accepts any _meta.
func (c *Compiled) ValidateMeta(raw json.RawMessage) (feedback *Result) {
	if c.meta == nil {
		return nil
	}
	var msg string
	if isAbsent(raw) {
		msg = c.meta.validateValue(map[string]any{})
	} else {
		msg = c.meta.validate(raw)
	}
	if msg != "" {
		return ErrorResult(invalidMetaPrefix + msg)
	}
	return nil
}

// Run runs one call of the tool: it resolves the tool's providers in order, calls the handler
// and converts its outcome; with middleware ([Compile]), the middleware runs around the
// providers and the handler, and its outcome is converted. It blocks for as long as the providers and the handler do; the
// engine calls it on a goroutine of its own, after [Compiled.ValidateInput] and
// [Compiled.ValidateMeta] accepted the call.
//
// Run returns either a result or an error, never both:
//
//   - A [*Result] from the handler is encoded as it is, public error results included. Its
//     StructuredContent must encode to a JSON object and its Meta must be a JSON object. When
//     the tool has an output schema, a result that is not an error result must carry
//     structuredContent conforming to it. A breach of these rules, or a nil result with a nil
//     error, is an [*OutputError].
//   - An error from the handler is returned as it is.
//   - A provider that fails is a [*ProviderError], and the handler is not called.
//   - A panic in a provider, the handler, a middleware or the encoding of the result is
//     recovered as a [*PanicError] with the stack.
//
// Every error is an unexpected failure: the engine answers the generic "Tool execution failed"
// result and reports the error to diagnostics, never to the client.
//
// req.Arguments should be what ValidateInput returned; empty arguments are handed to the
// handler as "{}". An empty req.Tool is set to the tool's name.
func (c *Compiled) Run(ctx context.Context, req *Request) (result *protocol.CallToolResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			result = nil
			err = &PanicError{Tool: c.def.Name, Value: v, Stack: debug.Stack()}
		}
	}()

	req = c.normalise(req)
	if c.call != nil {
		r, err := c.call.Handle(ctx, req)
		if err != nil {
			return nil, err
		}
		return c.complete(r)
	}
	for _, p := range c.def.Providers {
		next, err := p.resolve(ctx)
		if err != nil {
			return nil, &ProviderError{Tool: c.def.Name, Provider: p.ProviderName(), Err: err}
		}
		ctx = next
	}
	r, err := c.def.Handler.Handle(ctx, req)
	if err != nil {
		return nil, err
	}
	return c.complete(r)
}

// Complete converts a result the tool produced outside [Compiled.Run] — the reply of an
// actor-backed tool ([ActorHandler]) — exactly as Run converts a handler's result: it is
// encoded, its StructuredContent must encode to a JSON object and its Meta must be one, and a
// result that is not an error result must conform to the output schema. A breach, or a nil r,
// is an [*OutputError]; a panic while encoding is a [*PanicError]. It does not block.
func (c *Compiled) Complete(r *Result) (result *protocol.CallToolResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			result = nil
			err = &PanicError{Tool: c.def.Name, Value: v, Stack: debug.Stack()}
		}
	}()
	return c.complete(r)
}

func (c *Compiled) complete(r *Result) (*protocol.CallToolResult, error) {
	if r == nil {
		return nil, &OutputError{Tool: c.def.Name, Err: errors.New("handler returned neither a result nor an error")}
	}
	out, structured, err := encode(r)
	if err == nil && c.output != nil && !r.IsError {
		err = c.checkOutput(structured)
	}
	if err != nil {
		return nil, &OutputError{Tool: c.def.Name, Err: err}
	}
	return out, nil
}

// normalise returns req with the defaults Run promises, copying it only when it must change.
func (c *Compiled) normalise(req *Request) *Request {
	if req == nil {
		return &Request{Tool: c.def.Name, Arguments: json.RawMessage("{}")}
	}
	if req.Tool != "" && len(req.Arguments) != 0 {
		return req
	}
	r := *req
	if r.Tool == "" {
		r.Tool = c.def.Name
	}
	if len(r.Arguments) == 0 {
		r.Arguments = json.RawMessage("{}")
	}
	return &r
}

// checkOutput validates the encoded structured content of a non-error result against the
// output schema.
func (c *Compiled) checkOutput(structured json.RawMessage) error {
	if structured == nil {
		return errors.New("result has no structuredContent but the tool has an output schema")
	}
	if c.output.sch == nil {
		return nil
	}
	v, ok := decodeValue(structured)
	if !ok {
		return errors.New("structuredContent: invalid JSON")
	}
	if msg := c.output.validateValue(v); msg != "" {
		return errors.New("does not conform to the output schema: " + msg)
	}
	return nil
}

// encodeResult is [Result.Encode].
func encodeResult(r *Result) (*protocol.CallToolResult, error) {
	if r == nil {
		return nil, errors.New("nil result")
	}
	out, _, err := encode(r)
	return out, err
}

// encode converts r into its wire form and also returns the encoded structured content.
func encode(r *Result) (*protocol.CallToolResult, json.RawMessage, error) {
	out := &protocol.CallToolResult{Content: r.Content, IsError: r.IsError}
	if out.Content == nil {
		out.Content = []protocol.Content{}
	}
	if r.StructuredContent != nil {
		b, err := marshalObject(r.StructuredContent)
		if err != nil {
			return nil, nil, fmt.Errorf("structuredContent: %w", err)
		}
		out.StructuredContent = b
	}
	if len(r.Meta) > 0 {
		if firstByte(r.Meta) != '{' || !json.Valid(r.Meta) {
			return nil, nil, errors.New("_meta: must be a JSON object")
		}
		out.Meta = r.Meta
	}
	return out, out.StructuredContent, nil
}

// marshalObject encodes v, which must encode to a JSON object. A json.RawMessage is checked and
// used as it is.
func marshalObject(v any) (json.RawMessage, error) {
	var b []byte
	switch v := v.(type) {
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, errors.New("invalid JSON")
		}
		b = bytes.TrimSpace(v)
	default:
		var err error
		if b, err = marshalJSON(v); err != nil {
			return nil, err
		}
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("must encode to a JSON object, got %s", jsonKind(b))
	}
	return b, nil
}

// marshalJSON is json.Marshal without HTML escaping, so that text such as "<name>" stays
// readable where it is shown to people.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonKind names the JSON type of an encoded value, for error messages that must not quote it.
func jsonKind(b []byte) string {
	switch firstByte(b) {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case 0:
		return "nothing"
	default:
		return "number"
	}
}
