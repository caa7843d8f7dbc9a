// Package prompts defines the prompts an MCP server offers: named message templates with
// arguments, listed by prompts/list and rendered by prompts/get.
//
// [Compile] checks the definitions once and returns an immutable [Set]; [Set.With] and
// [Set.Without] derive new sets for servers whose prompts change while they run.
//
// Before a [Handler] runs, the engine checks the arguments against the prompt's declared ones
// ([Set.Check]): every value must be a string, every required argument present and no unknown
// argument given; otherwise the client gets -32602 and the handler is not called. A handler that
// rejects a value itself returns an [*ArgumentError], which the client also sees as -32602 with
// its text. Any other error, or a panic, is an unexpected failure: the client sees only -32603
// "Internal error" and the original goes to the server's OnError.
package prompts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/toolgrain/toolgrain/internal/tags"
	"github.com/toolgrain/toolgrain/protocol"
)

// Prompt is one prompt. Name and Handler are required.
type Prompt struct {
	// Name identifies the prompt in prompts/get; unique in a server.
	Name string
	// Title is a display name; Description tells the user what the prompt does. Clients and
	// conformance suites expect a description.
	Title       string
	Description string
	// Arguments are the prompt's arguments, in the order clients show them.
	Arguments []Argument
	// Icons are images a client may show for the prompt, sent to the clients of MCP
	// 2025-11-25 and later; each must pass protocol.CheckIcons. Nil means none.
	Icons []protocol.Icon
	// Tags group the prompt with other components for the server's visibility rules and
	// toolsets, as a tool's do (package visibility); prompts/list shows them in its _meta. Nil
	// means none.
	Tags []string
	// Handler renders the prompt.
	Handler Handler
}

// Argument is one argument of a [Prompt]. Name is required and unique within the prompt.
type Argument struct {
	Name        string
	Title       string
	Description string
	// Required arguments must be present in every prompts/get.
	Required bool
	// Complete suggests values on completion/complete; nil means no suggestions.
	Complete CompleteFunc
}

// CompleteFunc suggests values for one argument from the partial value the user typed; args
// holds the values of arguments already chosen. It runs on a goroutine of its own and should
// honour ctx. The engine sends at most 100 values and says whether there were more.
type CompleteFunc func(ctx context.Context, value string, args map[string]string) ([]string, error)

// GetRequest is what a [Handler] receives.
type GetRequest struct {
	// Name is the prompt's name.
	Name string
	// Arguments are the checked arguments: every required one is present. Never nil.
	Arguments map[string]string
	// Meta is the client-supplied params._meta, or nil. It is not verified.
	Meta json.RawMessage
}

// GetResult is a rendered prompt.
type GetResult struct {
	Description string
	Messages    []protocol.PromptMessage
	// Meta is the result's _meta; when set it must be a JSON object.
	Meta json.RawMessage
}

// Handler renders a prompt.
//
// Get is called on its own goroutine and may block; its context is cancelled when the client
// cancels the request, the connection closes or the server shuts down, and carries the call's
// client (package client). Return an [*ArgumentError] for an argument value the prompt
// cannot use; any other error is an unexpected failure, private to the operator.
type Handler interface {
	Get(ctx context.Context, req *GetRequest) (*GetResult, error)
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(ctx context.Context, req *GetRequest) (*GetResult, error)

// Get calls f(ctx, req).
func (f HandlerFunc) Get(ctx context.Context, req *GetRequest) (*GetResult, error) {
	return f(ctx, req)
}

var _ Handler = HandlerFunc(nil)

// Text returns a message with one text block.
func Text(role, text string) protocol.PromptMessage {
	return protocol.PromptMessage{Role: role, Content: protocol.TextContent(text)}
}

// ArgumentError is a public rejection of a prompt's arguments: the client gets -32602 with the
// message "Invalid params: argument "<name>": <reason>" (or the reason alone when Argument is
// empty). Its text reaches the client unchanged, so it must not contain anything private.
type ArgumentError struct {
	Argument string
	Reason   string
}

// Error returns the client-facing text.
func (e *ArgumentError) Error() string {
	if e.Argument == "" {
		return e.Reason
	}
	return fmt.Sprintf("argument %q: %s", e.Argument, e.Reason)
}

// DefinitionError reports a prompt that cannot be served: an empty or duplicate name, a bad
// argument list, a nil handler, or an icon that breaks the rules of protocol.CheckIcons (Reason
// "icon N: ..."). [Compile] and [Set.With] return it.
type DefinitionError struct {
	Name   string
	Reason string
}

// Error returns `prompt "<name>": <reason>`.
func (e *DefinitionError) Error() string { return fmt.Sprintf("prompt %q: %s", e.Name, e.Reason) }

// Compiled is a checked [Prompt]. It is immutable.
type Compiled struct {
	def  Prompt
	desc protocol.Prompt
	args map[string]*Argument
}

// Name returns the prompt's name.
func (c *Compiled) Name() string { return c.def.Name }

// Tags returns the prompt's tags, sorted and without duplicates; nil when none. Do not modify
// the slice.
func (c *Compiled) Tags() []string { return c.def.Tags }

// Descriptor returns the prompts/list entry.
func (c *Compiled) Descriptor() protocol.Prompt { return c.desc }

// Handler returns the prompt's handler.
func (c *Compiled) Handler() Handler { return c.def.Handler }

// HasArgument reports whether the prompt declares the argument name.
func (c *Compiled) HasArgument(name string) bool { _, ok := c.args[name]; return ok }

// Completer returns the CompleteFunc of the argument name, or nil.
func (c *Compiled) Completer(name string) CompleteFunc {
	if a, ok := c.args[name]; ok {
		return a.Complete
	}
	return nil
}

// Check decodes and checks the arguments of a prompts/get: raw must be absent, null or an object
// of strings; every required argument must be present and every given one declared. The error is
// an [*ArgumentError].
func (c *Compiled) Check(raw json.RawMessage) (map[string]string, error) {
	args := map[string]string{}
	if p := strings.TrimSpace(string(raw)); p != "" && p != "null" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, &ArgumentError{Reason: "arguments must be an object of strings"}
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if _, ok := c.args[k]; !ok {
				return nil, &ArgumentError{Argument: k, Reason: "unknown argument"}
			}
			var s string
			if err := json.Unmarshal(m[k], &s); err != nil {
				return nil, &ArgumentError{Argument: k, Reason: "must be a string"}
			}
			args[k] = s
		}
	}
	for _, a := range c.def.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return nil, &ArgumentError{Argument: a.Name, Reason: "missing required argument"}
		}
	}
	return args, nil
}

// Set is an immutable list of compiled prompts in registration order. The methods of a nil *Set
// behave as for an empty set.
type Set struct {
	list   []*Compiled
	byName map[string]*Compiled
}

// Compile checks the definitions and returns them as a Set. Every problem is reported, as
// [*DefinitionError] values (several are joined with errors.Join).
func Compile(defs []Prompt) (*Set, error) { return (*Set)(nil).With(defs...) }

// With returns a new Set holding s's prompts followed by defs; a name already in s is a
// duplicate. s is not changed.
func (s *Set) With(defs ...Prompt) (*Set, error) {
	n := &Set{list: slices.Clone(s.List()), byName: make(map[string]*Compiled, s.Len()+len(defs))}
	for _, c := range n.list {
		n.byName[c.def.Name] = c
	}
	var errs []error
	for i := range defs {
		c, err := compile(&defs[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := n.byName[c.def.Name]; dup {
			errs = append(errs, &DefinitionError{Name: c.def.Name, Reason: "duplicate"})
			continue
		}
		n.byName[c.def.Name] = c
		n.list = append(n.list, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return n, nil
}

// Without returns a new Set without the prompts named in names, and how many it removed.
func (s *Set) Without(names ...string) (*Set, int) {
	n := &Set{byName: map[string]*Compiled{}}
	removed := 0
	for _, c := range s.List() {
		if slices.Contains(names, c.def.Name) {
			removed++
			continue
		}
		n.list = append(n.list, c)
		n.byName[c.def.Name] = c
	}
	return n, removed
}

func compile(def *Prompt) (*Compiled, error) {
	fail := func(reason string) error { return &DefinitionError{Name: def.Name, Reason: reason} }
	if def.Name == "" {
		return nil, fail("empty name")
	}
	if def.Handler == nil {
		return nil, fail("no handler")
	}
	if f, ok := def.Handler.(HandlerFunc); ok && f == nil {
		return nil, fail("no handler")
	}
	if err := protocol.CheckIcons(def.Icons); err != nil {
		return nil, fail(err.Error())
	}
	if err := tags.CheckAll(def.Tags); err != nil {
		return nil, fail(err.Error())
	}
	c := &Compiled{def: *def, args: make(map[string]*Argument, len(def.Arguments))}
	c.def.Arguments = slices.Clone(def.Arguments)
	c.def.Icons = protocol.CloneIcons(def.Icons)
	c.desc = protocol.Prompt{Name: def.Name, Title: def.Title, Description: def.Description, Icons: c.def.Icons}
	c.def.Tags = nil
	if len(def.Tags) > 0 {
		c.def.Tags = tags.Normalize(slices.Clone(def.Tags))
		c.desc.Meta = append(append([]byte{'{'}, tags.Meta(tags.MetaTags, c.def.Tags)...), '}')
	}
	for i := range c.def.Arguments {
		a := &c.def.Arguments[i]
		if a.Name == "" {
			return nil, fail(fmt.Sprintf("argument %d has no name", i))
		}
		if _, dup := c.args[a.Name]; dup {
			return nil, fail(fmt.Sprintf("argument %q is declared twice", a.Name))
		}
		c.args[a.Name] = a
		c.desc.Arguments = append(c.desc.Arguments, protocol.PromptArgument{
			Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required,
		})
	}
	return c, nil
}

// List returns the prompts in registration order, in a new slice.
func (s *Set) List() []*Compiled {
	if s == nil {
		return nil
	}
	return slices.Clone(s.list)
}

// Len returns the number of prompts.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.list)
}

// Lookup returns the prompt named name.
func (s *Set) Lookup(name string) (*Compiled, bool) {
	if s == nil {
		return nil, false
	}
	c, ok := s.byName[name]
	return c, ok
}
