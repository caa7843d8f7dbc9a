package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/toolgrain/toolgrain/internal/tags"
	"github.com/toolgrain/toolgrain/protocol"
)

// maxNameLength is the longest tool name MCP 2025-11-25 allows.
const maxNameLength = 128

// defaultInputSchema is the input schema of a tool that declares none.
var defaultInputSchema = json.RawMessage(`{"type":"object"}`)

// Set is a compiled list of tools, made by [Compile]. It is immutable and safe for concurrent
// use. The methods of a nil *Set behave as for an empty set.
type Set struct {
	list   []*Compiled
	byName map[string]*Compiled
	mw     []Middleware // around every tool's calls, also of the tools added by With
}

// Compiled is one tool after [Compile]: its definition, its precomputed tools/list descriptor
// and its compiled schemas. It is immutable and safe for concurrent use.
type Compiled struct {
	def     Tool
	desc    protocol.Tool
	input   schema        // always set; sch is nil when any object is accepted
	output  *schema       // nil without an output schema
	meta    *schema       // nil without a metadata schema
	headers []HeaderParam // the input schema's x-mcp-header arguments; nil without any
	call    Handler       // the middleware around handle; nil without middleware
}

// Compile checks every definition and compiles its schemas, once, so that nothing is parsed or
// compiled per call. It never panics. It reports:
//
//   - a name that is empty, longer than 128 characters, uses a character outside
//     A-Za-z0-9_.- or repeats an earlier name, as a [*ToolNameError];
//   - a schema that is not valid JSON, whose root does not declare "type": "object" (input and
//     output schemas), that fails its metaschema, names an unsupported "$schema" or refers to an
//     external document, as a [*ToolSchemaError] with its [SchemaKind];
//   - an "x-mcp-header" annotation in the input schema that breaks one of the rules below, as
//     a [*ToolSchemaError] of kind [SchemaInput] naming its location and the rule, one per
//     annotation;
//   - a Go type from which no schema can be inferred ([Tool.InputType] lists the rules), as a
//     [*ToolSchemaError] naming the field ([ToolSchemaError.Field]);
//   - a nil handler as `tool "<name>": no handler`, and a nil provider, a negative timeout, a
//     negative concurrency limit, an [ActorHandler] without an actor, or one with providers
//     likewise, as plain errors;
//   - a nil [Middleware], and a middleware that panics or returns a nil Handler when it wraps a
//     tool's handler, as plain errors;
//   - an icon that breaks the rules of protocol.CheckIcons, as an error naming the tool that
//     wraps a *protocol.IconError.
//
// The middleware mw wraps the calls of every tool of the Set, and of the tools later added with
// [Set.With], the first outermost ([Middleware] says where it runs); [Compiled.Run] applies it.
//
// Compile reports every problem it finds: one error as it is, several joined with errors.Join.
// Find a specific one with errors.As.
//
// Schemas are JSON Schema 2020-12 unless their "$schema" names another draft (MCP SEP-1613).
// External references ("$ref" to an http, https or file URL, or to a relative URL) are refused
// rather than loaded. Patterns use Go's regexp syntax (RE2), so look-around is rejected at
// Compile. The "format" keyword is an annotation and is not asserted.
//
// An input schema may designate arguments that clients of the Streamable HTTP transport mirror
// into Mcp-Param-{Name} headers (MCP 2026-07-28): a property schema with "x-mcp-header":
// "{Name}". Compile requires, as the revision does, that the annotation be on a property reached
// from the root through a chain of "properties" members only (never under items, allOf, anyOf,
// oneOf, not, if, then, else, $defs, or any other keyword), that its value be a non-empty RFC
// 9110 token (no spaces, delimiters or control characters), unique in the schema compared
// case-insensitively, and that the property declare one "type": "string", "integer" or
// "boolean" ("number" is not allowed). [Compiled.HeaderParams] lists the annotations.
//
// A schema left nil is inferred from the tool's Go types, when it has some ([Tool.InputType],
// [Tool.OutputType], [Func], [Structured]), and then compiled as if it had been written by hand.
//
// Compile copies the definitions and their schemas: the Set does not change when defs does.
// Descriptors keep each schema verbatim as given.
func Compile(defs []Tool, mw ...Middleware) (*Set, error) {
	s := &Set{
		list:   make([]*Compiled, 0, len(defs)),
		byName: make(map[string]*Compiled, len(defs)),
		mw:     slices.Clone(mw),
	}
	var errs []error
	if err := checkMiddleware(mw); err != nil {
		errs = append(errs, err)
		mw = nil
	}
	seen := make(map[string]bool, len(defs))
	for i := range defs {
		name := defs[i].Name
		c, toolErrs := compileTool(&defs[i], mw)
		errs = append(errs, toolErrs...)
		if seen[name] {
			errs = append(errs, &ToolNameError{Name: name, Reason: "duplicate"})
			continue
		}
		seen[name] = checkName(name) == ""
		if c != nil {
			s.byName[name] = c
			s.list = append(s.list, c)
		}
	}
	switch len(errs) {
	case 0:
		return s, nil
	case 1:
		return nil, errs[0]
	default:
		return nil, errors.Join(errs...)
	}
}

func compileTool(def *Tool, mw []Middleware) (*Compiled, []error) {
	var errs []error
	if reason := checkName(def.Name); reason != "" {
		errs = append(errs, &ToolNameError{Name: def.Name, Reason: reason})
	}
	if isNilHandler(def.Handler) {
		errs = append(errs, fmt.Errorf("tool %q: no handler", def.Name))
	}
	for i, p := range def.Providers {
		if err := checkProvider(p); err != nil {
			errs = append(errs, fmt.Errorf("tool %q: provider %d: %w", def.Name, i, err))
		}
	}
	if err := checkActorHandler(def); err != nil {
		errs = append(errs, fmt.Errorf("tool %q: %w", def.Name, err))
	}
	if def.Timeout < 0 {
		errs = append(errs, fmt.Errorf("tool %q: negative timeout %v", def.Name, def.Timeout))
	}
	if def.MaxConcurrency < 0 {
		errs = append(errs, fmt.Errorf("tool %q: negative concurrency limit %d", def.Name, def.MaxConcurrency))
	}
	if err := checkTask(def); err != nil {
		errs = append(errs, fmt.Errorf("tool %q: %w", def.Name, err))
	}
	if err := checkScopes(def.Scopes); err != nil {
		errs = append(errs, fmt.Errorf("tool %q: %w", def.Name, err))
	}
	if err := protocol.CheckIcons(def.Icons); err != nil {
		errs = append(errs, fmt.Errorf("tool %q: %w", def.Name, err))
	}
	if err := tags.CheckAll(def.Tags); err != nil {
		errs = append(errs, fmt.Errorf("tool %q: %w", def.Name, err))
	}

	c := &Compiled{def: *def}
	c.def.Scopes = slices.Clone(def.Scopes)
	if def.Tags != nil {
		c.def.Tags = tags.Normalize(slices.Clone(def.Tags))
	}
	c.def.InputSchema = clone(def.InputSchema)
	c.def.OutputSchema = clone(def.OutputSchema)
	c.def.MetaSchema = clone(def.MetaSchema)
	c.def.Providers = slices.Clone(def.Providers)
	c.def.Icons = protocol.CloneIcons(def.Icons)
	if def.Annotations != nil {
		a := *def.Annotations
		c.def.Annotations = &a
	}

	inferSchemas(c, &errs)
	c.input.root = "arguments"
	if c.def.InputSchema != nil {
		sch, err := compileSchema(c.def.InputSchema, SchemaInput, true)
		if err != nil {
			errs = append(errs, &ToolSchemaError{Tool: def.Name, Kind: SchemaInput, Err: err})
		} else if doc, ok := decodeValue(c.def.InputSchema); ok {
			var headerErrs []error
			c.headers, headerErrs = scanHeaderParams(doc)
			for _, err := range headerErrs {
				errs = append(errs, &ToolSchemaError{Tool: def.Name, Kind: SchemaInput, Err: err})
			}
		}
		c.input.sch = sch
		if sch != nil {
			c.input.flat = newSchema(c.input.root, sch, c.def.InputSchema).flat
		}
	}
	if c.def.OutputSchema != nil {
		sch, err := compileSchema(c.def.OutputSchema, SchemaOutput, true)
		if err != nil {
			errs = append(errs, &ToolSchemaError{Tool: def.Name, Kind: SchemaOutput, Err: err})
		}
		c.output = newSchema("structuredContent", sch, c.def.OutputSchema)
	}
	if c.def.MetaSchema != nil {
		sch, err := compileSchema(c.def.MetaSchema, SchemaMetadata, false)
		if err != nil {
			errs = append(errs, &ToolSchemaError{Tool: def.Name, Kind: SchemaMetadata, Err: err})
		}
		c.meta = newSchema("_meta", sch, c.def.MetaSchema)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(mw) > 0 {
		call, err := chain(HandlerFunc(c.handle), mw)
		if err != nil {
			return nil, []error{fmt.Errorf("tool %q: %w", def.Name, err)}
		}
		c.call = call
	}

	c.desc = protocol.Tool{
		Name:         c.def.Name,
		Title:        c.def.Title,
		Description:  c.def.Description,
		InputSchema:  c.def.InputSchema,
		OutputSchema: c.def.OutputSchema,
		Annotations:  c.def.Annotations,
		Icons:        c.def.Icons,
	}
	if c.desc.InputSchema == nil {
		c.desc.InputSchema = defaultInputSchema
	}
	if len(c.def.Tags) > 0 {
		m := tags.Meta(tags.MetaTags, c.def.Tags)
		c.desc.Meta = append(append([]byte{'{'}, m...), '}')
	}
	return c, nil
}

// inferSchemas sets the input and output schemas that c's definition leaves nil from the Go
// types it declares ([Tool.InputType], [Tool.OutputType]) or its typed handler's.
func inferSchemas(c *Compiled, errs *[]error) {
	in, out := c.def.InputType, c.def.OutputType
	if th, ok := c.def.Handler.(typedHandler); ok {
		if in == nil {
			in = th.argumentType()
		}
		if out == nil {
			out = th.outputType()
		}
	}
	infer := func(t reflect.Type, k SchemaKind) json.RawMessage {
		raw, ie := inferSchema(t)
		if ie != nil {
			*errs = append(*errs, &ToolSchemaError{Tool: c.def.Name, Kind: k, Field: ie.field, Err: ie.err})
		}
		return raw
	}
	if c.def.InputSchema == nil && in != nil {
		c.def.InputSchema = infer(in, SchemaInput)
	}
	if c.def.OutputSchema == nil && out != nil {
		c.def.OutputSchema = infer(out, SchemaOutput)
	}
}

// checkName returns why name breaks the MCP tool-name rules, or "".
func checkName(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > maxNameLength:
		return fmt.Sprintf("longer than %d characters", maxNameLength)
	}
	for i, r := range name {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_', r == '.', r == '-':
			continue
		}
		// Every earlier character is ASCII, so the byte offset i is also the character position.
		if r == utf8.RuneError {
			return fmt.Sprintf("invalid UTF-8 at position %d (A-Za-z0-9_.- allowed)", i)
		}
		return fmt.Sprintf("invalid character %q at position %d (A-Za-z0-9_.- allowed)", r, i)
	}
	return ""
}

func isNilHandler(h Handler) bool {
	if h == nil {
		return true
	}
	switch h := h.(type) {
	case HandlerFunc:
		return h == nil
	case *ActorHandler:
		return h == nil
	}
	return false
}

func checkProvider(p Provider) error {
	if p == nil {
		return errors.New("nil")
	}
	if c, ok := p.(interface{ check() error }); ok {
		if err := c.check(); err != nil {
			return err
		}
	}
	if p.ProviderName() == "" {
		return errors.New("empty name")
	}
	return nil
}

func clone(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	return slices.Clone(raw)
}

// Lookup returns the tool named name.
func (s *Set) Lookup(name string) (*Compiled, bool) {
	if s == nil {
		return nil, false
	}
	c, ok := s.byName[name]
	return c, ok
}

// List returns the tools in registration order, in a new slice.
func (s *Set) List() []*Compiled {
	if s == nil {
		return nil
	}
	return slices.Clone(s.list)
}

// Len returns the number of tools.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.list)
}

// Name returns the tool's name.
func (c *Compiled) Name() string { return c.def.Name }

// Def returns the tool's definition, as copied by [Compile]. Do not mutate it.
func (c *Compiled) Def() *Tool { return &c.def }

// Descriptor returns the tool as tools/list describes it, computed once at [Compile]: the input
// schema is {"type":"object"} when the definition has none, and every schema is kept verbatim as
// given. The schemas share memory with the Set: do not mutate them.
func (c *Compiled) Descriptor() protocol.Tool { return c.desc }
