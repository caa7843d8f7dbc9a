// Package tools defines the tools an MCP server offers: their names, their schemas (input, output
// and metadata), their handlers and the per-call dependencies those handlers need.
//
// A server is built from a list of [Tool] definitions. [Compile] checks and compiles every
// definition once, at construction, and reports bad names as [*ToolNameError] and bad schemas as
// [*ToolSchemaError]; nothing is compiled or checked again per call. The resulting [Set] and its
// [Compiled] tools are immutable and safe for concurrent use.
//
// For each tools/call the engine asks the [Compiled] tool to validate the arguments
// ([Compiled.ValidateInput]) and the request metadata ([Compiled.ValidateMeta]), then runs it
// ([Compiled.Run]). Invalid input becomes a public error result with validation feedback. A
// handler that wants the client to see a failure returns an explicit public error result
// ([ErrorResult]). Everything else that goes wrong — a handler error, a panic, a provider failure,
// arguments that cannot be decoded, output that breaks the output schema — is an unexpected
// failure: Run returns it as a Go error ([*PanicError], [*ProviderError], [*DecodeError],
// [*OutputError] or the handler's own error), and the engine replaces it with a generic result,
// so its text never reaches a client.
//
// Calling a handler or a provider directly, outside the server, returns its raw error: the
// conversion into a generic result applies only to calls that run through the server.
package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
)

// Tool defines one tool. Only Name and Handler are required; the doc of every other field says
// what its zero value means. [Compile] copies the definition, so changing a Tool after Compile
// has no effect on the compiled tool.
type Tool struct {
	// Name identifies the tool in tools/list and tools/call. It follows the MCP 2025-11-25 rules:
	// 1 to 128 characters from A-Z, a-z, 0-9, '_', '.' and '-', case-sensitive, unique in a
	// server. A name breaking them is a [*ToolNameError].
	Name string

	// Title is a human-readable display name; empty means none.
	Title string

	// Description tells a model what the tool does; empty means none. Clients and conformance
	// suites expect one, so give every tool a description.
	Description string

	// InputSchema is the JSON Schema of the call's "arguments". Its root must declare
	// "type": "object". Nil means the schema inferred from InputType or, without one, from the
	// In of a [Func] or [Structured] handler; for any other handler, {"type":"object"}: any
	// object is accepted.
	//
	// A schema without "$schema" is JSON Schema 2020-12 (MCP SEP-1613); drafts 2019-09, 7, 6
	// and 4 are accepted when named. References ("$ref") must stay inside the schema: external
	// documents are never loaded.
	//
	// A string, integer or boolean property may carry "x-mcp-header": "{Name}" (MCP 2026-07-28):
	// clients on the Streamable HTTP transport then mirror its value into the header
	// Mcp-Param-{Name}, and the server rejects a call whose header and body disagree. [Compile]
	// lists the rules the annotation must follow.
	InputSchema json.RawMessage

	// OutputSchema, when set, is the JSON Schema of the result's structuredContent; its root must
	// declare "type": "object". Every non-error result must then carry structuredContent that
	// conforms to it; a result that does not is an [*OutputError]. Nil means the schema
	// inferred from OutputType or, without one, from the Out of a [Structured] handler; for any
	// other handler, no output schema.
	OutputSchema json.RawMessage

	// InputType, when set and InputSchema is nil, is the Go type whose schema [Compile] infers
	// as the input schema: for a tool whose handler is not typed (an [ActorHandler], a
	// [HandlerFunc]) but whose arguments are a Go type, as reflect.TypeFor[T](). It wins over
	// the In of a typed handler. Nil means the typed handler's In, if any.
	//
	// The inference, done once by [Compile] with github.com/invopop/jsonschema, follows
	// encoding/json, which decodes the arguments:
	//
	//   - a struct is an object whose properties are its exported fields, named by their json
	//     tags, with no other properties allowed ("additionalProperties": false); embedded
	//     structs add their fields; a field tagged json:"-" is left out;
	//   - a field is required unless its json tag says omitempty or omitzero, or it is a
	//     pointer (nil is then absent); jsonschema:"required" makes any field required;
	//   - integers are "integer" (json:",string" makes them strings), floats "number", bool
	//     "boolean", strings "string", []byte a base64 string, time.Time a date-time string,
	//     json.Number a number, slices and arrays "array", maps "object" with their values'
	//     schema, nested structs nested objects;
	//   - a pointer, slice or map field without omitempty also accepts null, which is how
	//     encoding/json sends a nil one;
	//   - any and json.RawMessage accept any JSON value; a type with its own MarshalJSON or
	//     UnmarshalJSON accepts any value (its decoder decides), one with only MarshalText or
	//     UnmarshalText is a string; a type with a JSONSchema() *jsonschema.Schema method
	//     (github.com/invopop/jsonschema) describes itself;
	//   - a recursive type (a tree) is described with "$defs" and "$ref"; every other schema is
	//     inlined;
	//   - the jsonschema struct tag adds keywords, in the generator's syntax:
	//     jsonschema:"description=...,enum=a,enum=b,minimum=0,maximum=600000,default=3"
	//     (also title, example, format, pattern, minLength, maxLength, exclusiveMinimum,
	//     exclusiveMaximum, multipleOf, minItems, maxItems, uniqueItems), and
	//     jsonschema_description:"..." a description that may contain commas;
	//     jsonschema_extras:"x-mcp-header=Region" marks a header argument (see InputSchema);
	//     oneof_required=group in the jsonschema tag makes one of several fields required.
	//
	// The type must encode as a JSON object: a struct, a map, a pointer to one, or any (which
	// accepts any object). A type that no schema can describe — a channel, a function, a
	// complex number, an unsafe pointer, a non-empty interface, a map whose keys encoding/json
	// cannot use — anywhere in it is a [*ToolSchemaError] naming the tool and the field
	// ([ToolSchemaError.Field]), never a panic. The inferred schema is then compiled and
	// validated exactly as a hand-written one, and [Compiled.Descriptor] lists it.
	InputType reflect.Type

	// OutputType, when set and OutputSchema is nil, is the Go type whose schema [Compile] infers
	// as the output schema, by the rules of InputType: for a handler that builds its own
	// results ([Func], [HandlerFunc], an [ActorHandler]) whose structuredContent is a Go type.
	// It wins over the Out of a [Structured] handler. Nil means that Out, if any.
	OutputType reflect.Type

	// MetaSchema, when set, validates the call's params._meta; absent _meta validates as {}.
	// A call failing it gets a public error result with validation feedback, like invalid
	// arguments. Nil means _meta is not validated.
	MetaSchema json.RawMessage

	// Annotations are hints about the tool's behaviour that clients treat as untrusted. Nil
	// means none.
	Annotations *protocol.ToolAnnotations

	// Icons are images a client may show for the tool, sent to the clients of MCP 2025-11-25
	// and later (left out for older revisions). Each must pass protocol.CheckIcons (an https:
	// or data: image, sizes as "48x48" or "any", theme "light" or "dark"); one that does not is
	// a construction error naming the tool and the icon. Nil means none.
	Icons []protocol.Icon

	// Handler runs the tool. It is required.
	Handler Handler

	// Providers are the per-call dependencies the handler needs. They are resolved, in order,
	// before the handler runs; the handler reads them with [Dependency.Get]. A provider failure
	// is a [*ProviderError] and the handler is not called. Nil means none.
	Providers []Provider

	// Timeout limits each call of the tool; the engine cancels the handler's context when it
	// passes. Zero means no per-tool limit, except for an actor-backed tool ([ActorHandler]),
	// which then gets [DefaultActorTimeout]. Negative is a construction error.
	Timeout time.Duration

	// MaxConcurrency limits how many calls of the tool run at once; the engine queues the rest.
	// Zero means unlimited. Negative is a construction error.
	MaxConcurrency int

	// TaskSupport says whether a call may run as a task (the io.modelcontextprotocol/tasks
	// extension of MCP 2026-07-28): answered at once with a task id that the client polls,
	// rather than held open until the handler returns. Zero ([TaskForbidden]) means never; see
	// [TaskSupport] for the others, and for what a task does.
	TaskSupport TaskSupport
	// DeferTask makes a task tool's call start as an ordinary call, which becomes a task only
	// when its handler calls client.StartTask: the handler can first ask the client for input
	// on the call itself (input_required rounds), then go on as a task. False means the task
	// is created before the handler runs. Only for a tool with TaskSupport.
	DeferTask bool
	// Scopes are the OAuth scopes a call of the tool needs, beyond those every request needs
	// (the transport's AuthConfig.Scopes): a call whose caller's identity ([IdentityFromContext])
	// lacks one of them is refused before anything runs. Over Streamable HTTP with auth it gets
	// 403 with the step-up challenge (WWW-Authenticate: Bearer error="insufficient_scope",
	// scope="...", resource_metadata="..."); elsewhere (stdio, in memory, HTTP without auth) a
	// JSON-RPC error naming the missing scopes (protocol.ErrInsufficientScope), a caller with
	// no identity having no scope. Each must be an RFC 6749 scope token (no space, '"' or '\').
	// Nil means the endpoint's scopes are enough.
	Scopes []string

	// Tags group the tool with other components (tools, resources, resource templates,
	// prompts) for the server's visibility rules, the toolsets a client narrows its view to and
	// the tags enabled or disabled at run time (package visibility, docs/visibility.md). Each is
	// 1 to 64 characters from A-Za-z0-9_.- ; tools/list shows them in the tool's _meta under
	// "io.github.toolgrain/tags". Nil means none.
	Tags []string

	// TaskTTL is how long a task of the tool is kept from its creation: its result stays
	// readable until then, and a task still running then is stopped and forgotten. Zero means
	// the server's default (one hour unless configured). Negative is a construction error.
	TaskTTL time.Duration
}

// Request is what a handler receives besides its context.
type Request struct {
	// Tool is the name of the tool being called.
	Tool string

	// Arguments are the call's arguments, already validated against the tool's input schema.
	// They are "{}" when the client sent none.
	Arguments json.RawMessage

	// Meta is the client-supplied params._meta, or nil when absent. It is not verified: never
	// trust it for authorisation.
	Meta json.RawMessage

	// Identity is the caller as the server's token verifier authenticated it, the same as
	// [IdentityFromContext] of the handler's context; nil without auth (stdio, or HTTP without
	// it). It must not be modified.
	Identity *Identity
}

// Handler runs a tool.
//
// Handle is called on its own goroutine and may block. (An [*ActorHandler] is the exception: the
// engine does not call it, it sends messages to the handler's actor.) Its context is cancelled when the client
// cancels the call, the connection closes, the tool's [Tool.Timeout] passes or the server shuts
// down; a handler that blocks should watch it. The context also carries the resolved
// [Provider] values ([Dependency.Get]) and the progress sink ([ReportProgress]).
//
// Handle returns either a [*Result] or an error. A Result reaches the client as it is,
// including an explicit public error result ([ErrorResult]). An error, or a panic, is an
// unexpected failure: the client sees only a generic "Tool execution failed" result and the
// error goes to the server's diagnostics, so its text may be as detailed as is useful. After the
// call was cancelled, nothing Handle returns reaches the client.
type Handler interface {
	Handle(ctx context.Context, req *Request) (*Result, error)
}

// HandlerFunc adapts an ordinary function to a [Handler].
type HandlerFunc func(ctx context.Context, req *Request) (*Result, error)

// Handle calls f(ctx, req).
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (*Result, error) {
	return f(ctx, req)
}

var _ Handler = HandlerFunc(nil)

// Result is an explicit tool result. It reaches the client unchanged (after the output checks
// described at [Compiled.Run]); a Result with IsError is a public error result, whose content the
// client sees as it is.
type Result struct {
	// Content is the list of content blocks; nil is sent as an empty list.
	Content []protocol.Content

	// StructuredContent, when non-nil, is marshalled with encoding/json (a json.RawMessage is
	// used as it is) and must encode to a JSON object. A tool with an output schema must set it
	// on every non-error result, and it must conform to that schema.
	StructuredContent any

	// IsError marks a public error result: the failure is the client's to see.
	IsError bool

	// Meta is the result's _meta; when set it must be a JSON object.
	Meta json.RawMessage
}

// TextResult returns a result with one text content block.
func TextResult(text string) *Result {
	r := &struct {
		Result
		content [1]protocol.Content
	}{}
	r.content[0] = protocol.TextContent(text)
	r.Content = r.content[:] // one allocation for the result and its block
	return &r.Result
}

// ErrorResult returns an explicit public error result: IsError is set and text is its one
// content block. The client sees text unchanged, so it must not contain anything private.
func ErrorResult(text string) *Result {
	return &Result{Content: []protocol.Content{protocol.TextContent(text)}, IsError: true}
}

// Encode converts r into the wire form of a tools/call result without any tool's output schema:
// it marshals StructuredContent and checks that it and Meta are JSON objects. The engine uses it
// for results that did not come from [Compiled.Run], such as validation feedback. A nil r is an
// error.
func (r *Result) Encode() (*protocol.CallToolResult, error) {
	return encodeResult(r)
}
