package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Construction errors, returned by [Compile].

// ToolNameError reports a tool name that breaks the naming rules of [Tool.Name] or is used twice.
// Callers find it with errors.As.
type ToolNameError struct {
	// Name is the name as registered.
	Name string
	// Reason says which rule the name breaks, for example "empty", "longer than 128
	// characters", "invalid character ' ' at position 3 (A-Za-z0-9_.- allowed)" or "duplicate".
	Reason string
}

// Error returns `tool name "<name>": <reason>`.
func (e *ToolNameError) Error() string {
	return fmt.Sprintf("tool name %q: %s", e.Name, e.Reason)
}

// SchemaKind names which of a tool's schemas a [*ToolSchemaError] is about.
type SchemaKind string

// The schemas of a tool.
const (
	// SchemaInput is [Tool.InputSchema].
	SchemaInput SchemaKind = "input"
	// SchemaOutput is [Tool.OutputSchema].
	SchemaOutput SchemaKind = "output"
	// SchemaMetadata is [Tool.MetaSchema].
	SchemaMetadata SchemaKind = "metadata"
)

// ToolSchemaError reports a schema that cannot be used: invalid JSON, a root that does not
// declare "type": "object" (input and output schemas), a schema that fails its metaschema, an
// unsupported "$schema", a reference to an external document, an input schema's
// "x-mcp-header" annotation that breaks the rules [Compile] lists, or a Go type from which no
// schema can be inferred ([Tool.InputType]). Callers find it with errors.As; Unwrap returns the
// cause, which may in turn wrap an error of the jsonschema package.
type ToolSchemaError struct {
	// Tool is the name of the tool.
	Tool string
	// Kind says which schema is wrong.
	Kind SchemaKind
	// Field is the Go field whose type has no schema, as a path from the inferred type
	// ("AddIn.Options.Hook"; "[]" stands for an element of a slice, an array or a map); empty
	// when the schema was not inferred, or the type itself is at fault.
	Field string
	// Err is the cause.
	Err error
}

// Error returns `tool "<tool>": <kind> schema: <cause>`, or `tool "<tool>": <kind> schema:
// field <field>: <cause>` when Field is set.
func (e *ToolSchemaError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("tool %q: %s schema: field %s: %v", e.Tool, e.Kind, e.Field, e.Err)
	}
	return fmt.Sprintf("tool %q: %s schema: %v", e.Tool, e.Kind, e.Err)
}

// Unwrap returns the cause.
func (e *ToolSchemaError) Unwrap() error { return e.Err }

// Unexpected failures, returned by [Compiled.Run] (and by the typed handlers of [Func] and
// [Structured]). The engine turns each into the generic "Tool execution failed" result and hands
// the error to its diagnostics: their text never reaches a client.

// DecodeError reports arguments that passed the input schema but could not be decoded into the
// Go type of a typed handler ([Func], [Structured]). The schema allowed something the Go type
// does not: the tool definition is wrong, not the client.
//
// Its Error text never contains argument values; Err, the decoder's own error, may.
type DecodeError struct {
	// Tool is the name of the tool.
	Tool string
	// Err is the decoder's error.
	Err error
}

// Error describes the failure without quoting any argument value.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("tool %q: decode arguments: %s", e.Tool, describeDecodeError(e.Err))
}

// Unwrap returns the decoder's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// describeDecodeError renders an encoding/json error without the values it may quote: an
// UnmarshalTypeError names the offending number ("number 300"), and errors of custom
// UnmarshalJSON methods may contain anything, so those are reduced to their type.
func describeDecodeError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case err == nil:
		return "<nil>"
	case errors.As(err, &typeErr):
		what, _, _ := strings.Cut(typeErr.Value, " ")
		var into string
		if typeErr.Type != nil {
			into = typeErr.Type.String()
		}
		if typeErr.Field != "" {
			return fmt.Sprintf("cannot decode JSON %s into field %q of Go type %s", what, typeErr.Field, into)
		}
		return fmt.Sprintf("cannot decode JSON %s into Go type %s", what, into)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("invalid JSON at offset %d", syntaxErr.Offset)
	default:
		var invalid *json.InvalidUnmarshalError
		if errors.As(err, &invalid) {
			return err.Error()
		}
		return fmt.Sprintf("decoder failed with %T", err)
	}
}

// OutputError reports a result the tool must not send: a nil result without an error,
// structuredContent that cannot be encoded, does not encode to a JSON object or fails the
// tool's output schema, a missing structuredContent on a tool with an output schema, or a _meta
// that is not a JSON object.
//
// When the output breaks the schema, the text quotes rules and locations, never output values.
type OutputError struct {
	// Tool is the name of the tool.
	Tool string
	// Err says what is wrong with the output.
	Err error
}

// Error returns `tool "<tool>": output: <cause>`.
func (e *OutputError) Error() string {
	return fmt.Sprintf("tool %q: output: %v", e.Tool, e.Err)
}

// Unwrap returns the cause.
func (e *OutputError) Unwrap() error { return e.Err }

// ProviderError reports a [Provider] that failed to resolve; the handler was not called.
type ProviderError struct {
	// Tool is the name of the tool.
	Tool string
	// Provider is the [Provider.ProviderName] of the provider that failed.
	Provider string
	// Err is the provider's error.
	Err error
}

// Error returns `tool "<tool>": provider "<provider>": <cause>`.
func (e *ProviderError) Error() string {
	return fmt.Sprintf("tool %q: provider %q: %v", e.Tool, e.Provider, e.Err)
}

// Unwrap returns the provider's error.
func (e *ProviderError) Unwrap() error { return e.Err }

// PanicError reports a handler or provider that panicked during [Compiled.Run].
type PanicError struct {
	// Tool is the name of the tool.
	Tool string
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine, from runtime/debug.Stack.
	Stack []byte
}

// Error returns `tool "<tool>": panic: <value>`; it does not include the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %q: panic: %v", e.Tool, e.Value)
}

// PanicStack returns Stack. Diagnostics sinks use it to log the stack of any error that carries
// one, without importing this package.
func (e *PanicError) PanicStack() []byte { return e.Stack }
