// Package resources defines the resources an MCP server offers: fixed resources, each with its
// URI, and resource templates (RFC 6570 URI templates such as "file:///logs/{day}") that serve a
// family of URIs. Each has a [Reader] that produces its contents on resources/read.
//
// [Compile] checks the definitions once and returns an immutable [Set]; [Set.With] and
// [Set.Without] derive new sets for servers whose resources change while they run.
//
// The error model follows the tools': a Reader that returns [ErrNotFound] (or an error wrapping
// it) gives the client the JSON-RPC error -32002 "Resource not found"; any other error, or a
// panic, is an unexpected failure that the client sees only as -32603 "Internal error" while the
// original goes to the server's OnError.
package resources

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/toolgrain/toolgrain/internal/tags"
	"github.com/toolgrain/toolgrain/protocol"
)

// ErrNotFound is what a [Reader] returns (or wraps) for a URI it has nothing for. The client gets
// -32002 "Resource not found".
var ErrNotFound = errors.New("resource not found")

// Resource is one fixed resource. URI, Name and Reader are required.
type Resource struct {
	// URI identifies the resource: an absolute URI (with a scheme), unique in the server.
	URI string
	// Name is the resource's programmatic name; Title its display name (empty means none).
	Name  string
	Title string
	// Description and MimeType are optional.
	Description string
	MimeType    string
	// Annotations are optional hints (audience, priority, lastModified).
	Annotations *protocol.Annotations
	// Icons are images a client may show for the resource, sent to the clients of MCP
	// 2025-11-25 and later; each must pass protocol.CheckIcons. Nil means none.
	Icons []protocol.Icon
	// Tags group the resource with other components for the server's visibility rules and
	// toolsets, as [tools.Tool].Tags do (package visibility); resources/list shows them in its
	// _meta. Nil means none.
	//
	// [tools.Tool]: https://pkg.go.dev/github.com/toolgrain/toolgrain/tools#Tool
	Tags []string
	// Reader produces the contents on resources/read.
	Reader Reader
}

// Template is a family of resources under one RFC 6570 URI template. The engine matches a read
// URI against the expressions {var} (level 1: one path segment's worth of text, no '/', '?' or
// '#') and {+var} (level 2: any text); other operators are refused by [Compile]. URITemplate,
// Name and Reader are required.
type Template struct {
	// URITemplate is the template, unique among the server's templates.
	URITemplate string
	// Name, Title, Description and MimeType describe the family, as for [Resource].
	Name        string
	Title       string
	Description string
	MimeType    string
	Annotations *protocol.Annotations
	// Icons are the family's icons, as for [Resource].
	Icons []protocol.Icon
	// Tags group the template with other components, as [Resource].Tags do; a URI the template
	// serves is visible to a caller when the template is. Nil means none.
	Tags []string
	// Reader produces the contents of a matching URI; [ReadRequest].Vars holds the variables.
	Reader Reader
	// Complete suggests values for the template's variables on completion/complete, by
	// variable name. A variable without one gets no suggestions. Nil means none.
	Complete map[string]CompleteFunc
}

// CompleteFunc suggests values for one variable from the partial value the user typed; args
// holds the values of variables already chosen. It runs on a goroutine of its own and should
// honour ctx. The engine sends at most 100 values and says whether there were more.
type CompleteFunc func(ctx context.Context, value string, args map[string]string) ([]string, error)

// ReadRequest is what a [Reader] receives.
type ReadRequest struct {
	// URI is the URI the client asked for.
	URI string
	// Vars are the percent-decoded values of a template's variables; nil for a fixed resource.
	Vars map[string]string
	// Meta is the client-supplied params._meta, or nil. It is not verified.
	Meta json.RawMessage
}

// ReadResult is the answer to a resources/read.
type ReadResult struct {
	// Contents are the resource's contents: one entry, or several for a resource that holds
	// several parts. Each needs its URI (usually the requested one).
	Contents []protocol.ResourceContents
	// Meta is the result's _meta; when set it must be a JSON object.
	Meta json.RawMessage
}

// Reader produces a resource's contents.
//
// Read is called on its own goroutine and may block; its context is cancelled when the client
// cancels the read, the connection closes or the server shuts down. It carries the call's client
// (package client) for logs and requests to the client. Return [ErrNotFound] for a
// URI that does not exist; any other error is an unexpected failure, private to the operator.
type Reader interface {
	Read(ctx context.Context, req *ReadRequest) (*ReadResult, error)
}

// ReaderFunc adapts a function to a [Reader].
type ReaderFunc func(ctx context.Context, req *ReadRequest) (*ReadResult, error)

// Read calls f(ctx, req).
func (f ReaderFunc) Read(ctx context.Context, req *ReadRequest) (*ReadResult, error) {
	return f(ctx, req)
}

var _ Reader = ReaderFunc(nil)

// Text returns a result with one text entry.
func Text(uri, mimeType, text string) *ReadResult {
	return &ReadResult{Contents: []protocol.ResourceContents{{URI: uri, MimeType: mimeType, Text: text}}}
}

// Blob returns a result with one binary entry, base64-encoded.
func Blob(uri, mimeType string, data []byte) *ReadResult {
	return &ReadResult{Contents: []protocol.ResourceContents{{URI: uri, MimeType: mimeType, Blob: base64.StdEncoding.EncodeToString(data)}}}
}

// Static returns a Reader that always answers text (or, when blob is non-nil, blob) for the URI
// it is asked for.
func Static(mimeType, text string, blob []byte) Reader {
	return ReaderFunc(func(_ context.Context, req *ReadRequest) (*ReadResult, error) {
		if blob != nil {
			return Blob(req.URI, mimeType, blob), nil
		}
		return Text(req.URI, mimeType, text), nil
	})
}

// DefinitionError reports a resource or template that cannot be served: a missing or invalid
// URI, template or name, a duplicate, a nil reader, or an icon that breaks the rules of
// protocol.CheckIcons (Reason "icon N: ..."). [Compile] and [Set.With] return it.
type DefinitionError struct {
	// Kind is "resource" or "template".
	Kind string
	// Key is the URI or URI template as given.
	Key string
	// Reason says what is wrong.
	Reason string
}

// Error returns `<kind> "<key>": <reason>`.
func (e *DefinitionError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Kind, e.Key, e.Reason)
}

// CompiledResource is a checked [Resource]. It is immutable.
type CompiledResource struct {
	def  Resource
	desc protocol.Resource
}

// URI returns the resource's URI.
func (r *CompiledResource) URI() string { return r.def.URI }

// Tags returns the resource's tags, sorted and without duplicates; nil when none. Do not modify
// the slice.
func (r *CompiledResource) Tags() []string { return r.def.Tags }

// Descriptor returns the resources/list entry.
func (r *CompiledResource) Descriptor() protocol.Resource { return r.desc }

// Reader returns the resource's reader.
func (r *CompiledResource) Reader() Reader { return r.def.Reader }

// CompiledTemplate is a checked [Template]. It is immutable.
type CompiledTemplate struct {
	def  Template
	tpl  *uriTemplate
	desc protocol.ResourceTemplate
}

// URITemplate returns the template as given.
func (t *CompiledTemplate) URITemplate() string { return t.def.URITemplate }

// Tags returns the template's tags, sorted and without duplicates; nil when none. Do not modify
// the slice.
func (t *CompiledTemplate) Tags() []string { return t.def.Tags }

// Descriptor returns the resources/templates/list entry.
func (t *CompiledTemplate) Descriptor() protocol.ResourceTemplate { return t.desc }

// Reader returns the template's reader.
func (t *CompiledTemplate) Reader() Reader { return t.def.Reader }

// Match returns the decoded variables of uri when it matches the template.
func (t *CompiledTemplate) Match(uri string) (map[string]string, bool) { return t.tpl.match(uri) }

// HasVar reports whether the template has the variable name.
func (t *CompiledTemplate) HasVar(name string) bool { return t.tpl.hasVar(name) }

// Completer returns the CompleteFunc of the variable name, or nil.
func (t *CompiledTemplate) Completer(name string) CompleteFunc { return t.def.Complete[name] }

// Set is an immutable list of compiled resources and templates, each in registration order. The
// methods of a nil *Set behave as for an empty set.
type Set struct {
	resources []*CompiledResource
	byURI     map[string]*CompiledResource
	templates []*CompiledTemplate
	byTpl     map[string]*CompiledTemplate
}

// Compile checks the definitions and returns them as a Set. Every problem is reported, as
// [*DefinitionError] values (several are joined with errors.Join).
func Compile(res []Resource, tpls []Template) (*Set, error) {
	return (*Set)(nil).With(res, tpls)
}

// With returns a new Set holding s's resources and templates followed by the given ones. A URI
// or URI template already in s is a duplicate. s is not changed.
func (s *Set) With(res []Resource, tpls []Template) (*Set, error) {
	n := &Set{
		resources: slices.Clone(s.list()),
		byURI:     make(map[string]*CompiledResource, s.lenResources()+len(res)),
		templates: slices.Clone(s.tplList()),
		byTpl:     make(map[string]*CompiledTemplate, s.lenTemplates()+len(tpls)),
	}
	for _, r := range n.resources {
		n.byURI[r.def.URI] = r
	}
	for _, t := range n.templates {
		n.byTpl[t.def.URITemplate] = t
	}
	var errs []error
	for i := range res {
		r, err := compileResource(&res[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := n.byURI[r.def.URI]; dup {
			errs = append(errs, &DefinitionError{Kind: "resource", Key: r.def.URI, Reason: "duplicate"})
			continue
		}
		n.byURI[r.def.URI] = r
		n.resources = append(n.resources, r)
	}
	for i := range tpls {
		t, err := compileTemplate(&tpls[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := n.byTpl[t.def.URITemplate]; dup {
			errs = append(errs, &DefinitionError{Kind: "template", Key: t.def.URITemplate, Reason: "duplicate"})
			continue
		}
		n.byTpl[t.def.URITemplate] = t
		n.templates = append(n.templates, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return n, nil
}

// Without returns a new Set without the resources whose URI, and the templates whose URI
// template, is one of keys, and how many entries it removed. s is not changed.
func (s *Set) Without(keys ...string) (*Set, int) {
	drop := make(map[string]bool, len(keys))
	for _, k := range keys {
		drop[k] = true
	}
	n := &Set{byURI: map[string]*CompiledResource{}, byTpl: map[string]*CompiledTemplate{}}
	removed := 0
	for _, r := range s.list() {
		if drop[r.def.URI] {
			removed++
			continue
		}
		n.resources = append(n.resources, r)
		n.byURI[r.def.URI] = r
	}
	for _, t := range s.tplList() {
		if drop[t.def.URITemplate] {
			removed++
			continue
		}
		n.templates = append(n.templates, t)
		n.byTpl[t.def.URITemplate] = t
	}
	return n, removed
}

func compileResource(def *Resource) (*CompiledResource, error) {
	fail := func(reason string) error { return &DefinitionError{Kind: "resource", Key: def.URI, Reason: reason} }
	switch {
	case def.URI == "":
		return nil, fail("empty URI")
	case !isAbsoluteURI(def.URI):
		return nil, fail("not an absolute URI")
	case def.Name == "":
		return nil, fail("empty name")
	case def.Reader == nil || isNilFunc(def.Reader):
		return nil, fail("no reader")
	}
	if err := protocol.CheckIcons(def.Icons); err != nil {
		return nil, fail(err.Error())
	}
	if err := tags.CheckAll(def.Tags); err != nil {
		return nil, fail(err.Error())
	}
	r := &CompiledResource{def: *def}
	r.def.Icons = protocol.CloneIcons(def.Icons)
	r.def.Tags = normalizeTags(def.Tags)
	r.desc = protocol.Resource{
		URI: def.URI, Name: def.Name, Title: def.Title, Description: def.Description,
		MimeType: def.MimeType, Annotations: def.Annotations, Icons: r.def.Icons, Meta: tagsMeta(r.def.Tags),
	}
	return r, nil
}

func compileTemplate(def *Template) (*CompiledTemplate, error) {
	fail := func(reason string) error {
		return &DefinitionError{Kind: "template", Key: def.URITemplate, Reason: reason}
	}
	if def.Name == "" {
		return nil, fail("empty name")
	}
	if def.Reader == nil || isNilFunc(def.Reader) {
		return nil, fail("no reader")
	}
	if err := protocol.CheckIcons(def.Icons); err != nil {
		return nil, fail(err.Error())
	}
	tpl, err := parseTemplate(def.URITemplate)
	if err != nil {
		return nil, fail(err.Error())
	}
	for name := range def.Complete {
		if !tpl.hasVar(name) {
			return nil, fail(fmt.Sprintf("completion for unknown variable %q", name))
		}
	}
	if err := tags.CheckAll(def.Tags); err != nil {
		return nil, fail(err.Error())
	}
	t := &CompiledTemplate{def: *def, tpl: tpl}
	t.def.Icons = protocol.CloneIcons(def.Icons)
	t.def.Tags = normalizeTags(def.Tags)
	t.def.Complete = make(map[string]CompleteFunc, len(def.Complete))
	for k, v := range def.Complete {
		t.def.Complete[k] = v
	}
	t.desc = protocol.ResourceTemplate{
		URITemplate: def.URITemplate, Name: def.Name, Title: def.Title, Description: def.Description,
		MimeType: def.MimeType, Annotations: def.Annotations, Icons: t.def.Icons, Meta: tagsMeta(t.def.Tags),
	}
	return t, nil
}

// normalizeTags returns a sorted copy of list without duplicates; nil for none.
func normalizeTags(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	return tags.Normalize(slices.Clone(list))
}

// tagsMeta is the _meta of a listed entry with the tags list: nil for none.
func tagsMeta(list []string) json.RawMessage {
	if len(list) == 0 {
		return nil
	}
	return append(append([]byte{'{'}, tags.Meta(tags.MetaTags, list)...), '}')
}

func isAbsoluteURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != ""
}

func isNilFunc(r Reader) bool {
	f, ok := r.(ReaderFunc)
	return ok && f == nil
}

func (s *Set) list() []*CompiledResource {
	if s == nil {
		return nil
	}
	return s.resources
}

func (s *Set) tplList() []*CompiledTemplate {
	if s == nil {
		return nil
	}
	return s.templates
}

func (s *Set) lenResources() int { return len(s.list()) }
func (s *Set) lenTemplates() int { return len(s.tplList()) }

// Resources returns the resources in registration order, in a new slice.
func (s *Set) Resources() []*CompiledResource { return slices.Clone(s.list()) }

// Templates returns the templates in registration order, in a new slice.
func (s *Set) Templates() []*CompiledTemplate { return slices.Clone(s.tplList()) }

// Resource returns the fixed resource with the given URI.
func (s *Set) Resource(uri string) (*CompiledResource, bool) {
	if s == nil {
		return nil, false
	}
	r, ok := s.byURI[uri]
	return r, ok
}

// Template returns the template whose URI template is exactly uriTemplate.
func (s *Set) Template(uriTemplate string) (*CompiledTemplate, bool) {
	if s == nil {
		return nil, false
	}
	t, ok := s.byTpl[uriTemplate]
	return t, ok
}

// Resolve finds what serves uri: the fixed resource with that URI, else the first template, in
// registration order, that matches it. It returns the reader and the request to give it, or
// false when nothing serves uri.
func (s *Set) Resolve(uri string) (Reader, *ReadRequest, bool) {
	if r, ok := s.Resource(uri); ok {
		return r.def.Reader, &ReadRequest{URI: uri}, true
	}
	for _, t := range s.tplList() {
		if vars, ok := t.tpl.match(uri); ok {
			return t.def.Reader, &ReadRequest{URI: uri, Vars: vars}, true
		}
	}
	return nil, nil, false
}

// ResolveVisible is [Set.Resolve] among the resources and templates visible says may serve:
// the fixed resource with the URI uri when visible lets it, else the first template, in
// registration order, that matches uri and that visible lets serve it. visible is called with
// one of r and t set.
func (s *Set) ResolveVisible(uri string, visible func(r *CompiledResource, t *CompiledTemplate) bool) (Reader, *ReadRequest, bool) {
	if r, ok := s.Resource(uri); ok && visible(r, nil) {
		return r.def.Reader, &ReadRequest{URI: uri}, true
	}
	for _, t := range s.tplList() {
		if vars, ok := t.tpl.match(uri); ok && visible(nil, t) {
			return t.def.Reader, &ReadRequest{URI: uri, Vars: vars}, true
		}
	}
	return nil, nil, false
}
