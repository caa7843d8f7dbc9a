package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// Which components a request sees (package visibility). One predicate decides, [visIndex.visible]:
// a component is visible to a viewer (the caller's identity and the toolsets its request chose)
// unless the request's toolsets leave it out, one of its tags is disabled for the caller's
// principal (tags.go), a rule that applies to it refuses the identity, or (with
// Config.HideForbiddenTools) it is a tool whose Scopes the identity lacks. An invisible
// component is one that does not exist: every list leaves it out, and every place that answers a
// client about a component by name asks here first and answers an invisible one as one nobody
// serves, byte for byte, before anything else of it is looked at. For tools that is
// [Engine.ToolFor] (the engine's tools/call, and the HTTP transport's own checks of a call: the
// step-up challenge, the Mcp-Param headers) and taskVisible (a task's tool); for resources,
// templates and prompts the lookups below. Lists come from views: the visible components of
// every kind for one viewer, cached by what of the viewer the answer depends on (viewKey).
//
// Everything a view depends on is the engine's configuration, the components served and the
// state of the tags, never a client's earlier requests: every member of a cluster with the same
// configuration and tag state (which members exchange) answers a request alike.

// viewer is who asks and how its request narrowed its view.
type viewer struct {
	id *tools.Identity
	// toolsets are the tags the request narrowed its view to, sorted and without duplicates:
	// a component needs one of them. Nil means no narrowing; empty, that nothing is visible.
	toolsets []string
}

// rule is a compiled visibility.Rule.
type rule struct {
	tags    []string
	scopes  []string
	claim   string
	values  []string
	visible func(*tools.Identity, visibility.Component) bool
	key     func(*tools.Identity) string
}

func compileRules(in []visibility.Rule) []rule {
	out := make([]rule, len(in))
	for i, r := range in {
		out[i] = rule{tags: slices.Clone(r.Tags), scopes: slices.Clone(r.Scopes), claim: r.Claim,
			values: slices.Clone(r.Values), visible: r.Visible, key: r.Key}
	}
	return out
}

// appliesTo reports whether the rule applies to a component with the tags list.
func (r *rule) appliesTo(list []string) bool {
	if len(r.tags) == 0 {
		return true
	}
	for _, t := range r.tags {
		if slices.Contains(list, t) {
			return true
		}
	}
	return false
}

// admits reports whether the identity meets the rule's conditions on the identity alone: its
// scopes and its claim.
func (r *rule) admits(id *tools.Identity) bool {
	for _, s := range r.scopes {
		if !id.HasScope(s) {
			return false
		}
	}
	if r.claim != "" {
		ok := false
		for _, v := range id.Claim(r.claim) {
			if slices.Contains(r.values, v) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// visState is the engine's visibility: the rules (fixed), the state of the tags (changing), and
// the index built from them and the components served.
type visState struct {
	rules []rule
	hide  bool // Config.HideForbiddenTools
	// mu serialises the building of indexes and the changes of the tag state, so that an index
	// is never replaced by one built from an older state.
	mu    sync.Mutex
	tags  atomic.Pointer[tagState]
	index atomic.Pointer[visIndex]
}

// visIndex is everything a request's visibility is worked out from: the snapshots of the
// components and the tag state it was built from, each component's applicable rules, and the
// views worked out so far. It is immutable but for its cache of views.
type visIndex struct {
	tools *toolSnapshot
	res   *resources.Set
	prm   *prompts.Set
	tags  *tagState

	// filtering: rules, hiding or a disabled tag make visibility depend on the caller. Without
	// it only a request's toolsets narrow its view.
	filtering bool
	rules     []rule
	hide      bool
	// hideScopes numbers every scope a tool needs, for the key of a view (with hide).
	hideScopes map[string]int

	toolInfo map[*tools.Compiled]*compInfo
	resInfo  map[*resources.CompiledResource]*compInfo
	tplInfo  map[*resources.CompiledTemplate]*compInfo
	prmInfo  map[*prompts.Compiled]*compInfo

	mu    sync.RWMutex
	views map[string]*views

	allOnce sync.Once
	all     *views // every component, for comparing with a narrowed view
}

// compInfo is what the index knows of one component.
type compInfo struct {
	comp  visibility.Component
	rules []int32         // the rules that apply to it, by index
	tool  *tools.Compiled // a tool's, for hiding by its scopes; nil for other kinds
}

// views are the visible components of every kind for one viewer, in list order.
type views struct {
	tools     []*tools.Compiled
	resources []*resources.CompiledResource
	templates []*resources.CompiledTemplate
	prompts   []*prompts.Compiled
}

// maxViews bounds the views one index keeps; past it, views are worked out for each request.
const maxViews = 4096

func (e *Engine) initVisibility() {
	e.vis.rules = compileRules(e.cfg.Visibility.Rules)
	e.vis.hide = e.cfg.HideForbiddenTools
	e.vis.tags.Store(initialTags(e.cfg.Visibility.Disabled))
}

// visIndex returns the index of the components served now and the current tag state, building
// it when either changed since the last one.
func (e *Engine) visIndex() *visIndex {
	x := e.vis.index.Load()
	if x != nil && x.current(e) {
		return x
	}
	e.vis.mu.Lock()
	defer e.vis.mu.Unlock()
	return e.currentIndexLocked()
}

// currentIndexLocked is visIndex with e.vis.mu held.
func (e *Engine) currentIndexLocked() *visIndex {
	x := e.vis.index.Load()
	if x != nil && x.current(e) {
		return x
	}
	x = e.buildIndex(e.reg.tools.Load(), e.reg.resources.Load(), e.reg.prompts.Load(), e.vis.tags.Load())
	e.vis.index.Store(x)
	return x
}

// current reports whether x was built from what the engine serves now.
func (x *visIndex) current(e *Engine) bool {
	return x.tools == e.reg.tools.Load() && x.res == e.reg.resources.Load() && x.prm == e.reg.prompts.Load() &&
		x.tags == e.vis.tags.Load()
}

// buildIndex indexes the given snapshots under the tag state st.
func (e *Engine) buildIndex(ts *toolSnapshot, res *resources.Set, prm *prompts.Set, st *tagState) *visIndex {
	x := &visIndex{tools: ts, res: res, prm: prm, tags: st, rules: e.vis.rules, hide: e.vis.hide,
		views: make(map[string]*views)}
	x.filtering = len(x.rules) > 0 || x.hide || st.anyOff
	list := ts.set.List()
	x.toolInfo = make(map[*tools.Compiled]*compInfo, len(list))
	for _, t := range list {
		x.toolInfo[t] = x.info(visibility.KindTool, t.Name(), t.Tags(), t)
		if x.hide {
			for _, s := range t.Scopes() {
				if x.hideScopes == nil {
					x.hideScopes = make(map[string]int)
				}
				if _, ok := x.hideScopes[s]; !ok {
					x.hideScopes[s] = len(x.hideScopes)
				}
			}
		}
	}
	rs, tpls := res.Resources(), res.Templates()
	x.resInfo = make(map[*resources.CompiledResource]*compInfo, len(rs))
	for _, r := range rs {
		x.resInfo[r] = x.info(visibility.KindResource, r.URI(), r.Tags(), nil)
	}
	x.tplInfo = make(map[*resources.CompiledTemplate]*compInfo, len(tpls))
	for _, t := range tpls {
		x.tplInfo[t] = x.info(visibility.KindTemplate, t.URITemplate(), t.Tags(), nil)
	}
	ps := prm.List()
	x.prmInfo = make(map[*prompts.Compiled]*compInfo, len(ps))
	for _, p := range ps {
		x.prmInfo[p] = x.info(visibility.KindPrompt, p.Name(), p.Tags(), nil)
	}
	return x
}

// info works out a component's compInfo.
func (x *visIndex) info(kind visibility.Kind, name string, list []string, tool *tools.Compiled) *compInfo {
	ci := &compInfo{comp: visibility.Component{Kind: kind, Name: name, Tags: list}, tool: tool}
	for i := range x.rules {
		if x.rules[i].appliesTo(list) {
			ci.rules = append(ci.rules, int32(i))
		}
	}
	return ci
}

// visible is the one predicate: whether the component of ci is visible to v.
func (x *visIndex) visible(ci *compInfo, v *viewer) bool {
	if v.toolsets != nil && !anyIn(ci.comp.Tags, v.toolsets) {
		return false
	}
	if !x.filtering {
		return true
	}
	if x.tags.anyOff && x.tags.disabled(v.id, ci.comp.Tags) {
		return false
	}
	for _, i := range ci.rules {
		r := &x.rules[i]
		if !r.admits(v.id) || r.visible != nil && !r.visible(v.id, ci.comp) {
			return false
		}
	}
	return ci.tool == nil || !x.hide || ci.tool.HasScopes(v.id)
}

// anyIn reports whether one of list is in set.
func anyIn(list, set []string) bool {
	for _, t := range list {
		if slices.Contains(set, t) {
			return true
		}
	}
	return false
}

// open reports whether every component is visible to v: nothing filters, and v did not narrow.
func (x *visIndex) open(v *viewer) bool { return !x.filtering && v.toolsets == nil }

// toolVisible reports whether t, a tool of some snapshot, is visible to v.
func (x *visIndex) toolVisible(t *tools.Compiled, v *viewer) bool {
	if x.open(v) {
		return true
	}
	ci := x.toolInfo[t]
	if ci == nil { // a tool of a snapshot the index was not built from
		ci = x.info(visibility.KindTool, t.Name(), t.Tags(), t)
	}
	return x.visible(ci, v)
}

func (x *visIndex) resourceVisible(r *resources.CompiledResource, v *viewer) bool {
	if x.open(v) {
		return true
	}
	ci := x.resInfo[r]
	if ci == nil {
		ci = x.info(visibility.KindResource, r.URI(), r.Tags(), nil)
	}
	return x.visible(ci, v)
}

func (x *visIndex) templateVisible(t *resources.CompiledTemplate, v *viewer) bool {
	if x.open(v) {
		return true
	}
	ci := x.tplInfo[t]
	if ci == nil {
		ci = x.info(visibility.KindTemplate, t.URITemplate(), t.Tags(), nil)
	}
	return x.visible(ci, v)
}

func (x *visIndex) promptVisible(p *prompts.Compiled, v *viewer) bool {
	if x.open(v) {
		return true
	}
	ci := x.prmInfo[p]
	if ci == nil {
		ci = x.info(visibility.KindPrompt, p.Name(), p.Tags(), nil)
	}
	return x.visible(ci, v)
}

// viewsFor returns the components visible to v, from the cache when a viewer with the same key
// asked before.
func (x *visIndex) viewsFor(v *viewer) *views {
	var buf [64]byte
	key, cacheable := x.viewKey(v, buf[:0])
	if cacheable {
		x.mu.RLock()
		vs := x.views[string(key)]
		x.mu.RUnlock()
		if vs != nil {
			return vs
		}
	}
	vs := x.work(v)
	if cacheable {
		x.mu.Lock()
		if len(x.views) < maxViews {
			x.views[string(key)] = vs
		}
		x.mu.Unlock()
	}
	return vs
}

// work works out the views of v.
func (x *visIndex) work(v *viewer) *views {
	vs := &views{}
	for _, t := range x.tools.set.List() {
		if x.visible(x.toolInfo[t], v) {
			vs.tools = append(vs.tools, t)
		}
	}
	for _, r := range x.res.Resources() {
		if x.visible(x.resInfo[r], v) {
			vs.resources = append(vs.resources, r)
		}
	}
	for _, t := range x.res.Templates() {
		if x.visible(x.tplInfo[t], v) {
			vs.templates = append(vs.templates, t)
		}
	}
	for _, p := range x.prm.List() {
		if x.visible(x.prmInfo[p], v) {
			vs.prompts = append(vs.prompts, p)
		}
	}
	return vs
}

// viewKey appends to b what of v its views depend on: whether it meets each rule's conditions on
// the identity, each predicate's key, the scopes it holds among those tools need (with hide),
// its principal when that has tags of its own, and its toolsets. Viewers with the same key
// see the same components. It reports false when a rule's predicate has no key: v's views are
// then not cached.
func (x *visIndex) viewKey(v *viewer, b []byte) ([]byte, bool) {
	var bits byte
	n := 0
	flush := func() {
		b = append(b, bits)
		bits, n = 0, 0
	}
	for i := range x.rules {
		r := &x.rules[i]
		if r.visible != nil {
			if r.key == nil {
				return nil, false
			}
			k := r.key(v.id)
			b = appendLen(b, len(k))
			b = append(b, k...)
		}
		if r.admits(v.id) {
			bits |= 1 << n
		}
		if n++; n == 8 {
			flush()
		}
	}
	if n > 0 {
		flush()
	}
	if len(x.hideScopes) > 0 {
		held := make([]byte, (len(x.hideScopes)+7)/8)
		if v.id != nil {
			for _, s := range v.id.Scopes {
				if i, ok := x.hideScopes[s]; ok {
					held[i/8] |= 1 << (i % 8)
				}
			}
		}
		b = append(b, held...)
	}
	if own, client := x.tags.own(v.id); own == nil {
		b = append(b, 0)
	} else {
		kind := byte(1) // a user's, or a client's: the same subject, two principals
		if client {
			kind = 2
		}
		b = append(b, kind)
		b = appendLen(b, len(v.id.Subject))
		b = append(b, v.id.Subject...)
	}
	if v.toolsets == nil {
		return append(b, 0), true
	}
	b = append(b, 1)
	for _, t := range v.toolsets {
		b = appendLen(b, len(t))
		b = append(b, t...)
	}
	return b, true
}

// appendLen appends n as a varint.
func appendLen(b []byte, n int) []byte {
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// ToolFor returns the tool named name from the tools served now as caller, narrowed to toolsets
// (see [ToolsetsFromContext]; nil for none), sees it: false when none has that name, and false
// too when the tool is invisible to that caller (package visibility), so that whoever answers
// the caller answers both alike.
func (e *Engine) ToolFor(name string, caller *tools.Identity, toolsets []string) (*tools.Compiled, bool) {
	return e.lookupTool(e.reg.tools.Load(), name, &viewer{id: caller, toolsets: toolsets})
}

// lookupTool is [Engine.ToolFor] in the snapshot snap.
func (e *Engine) lookupTool(snap *toolSnapshot, name string, v *viewer) (*tools.Compiled, bool) {
	tool, ok := snap.set.Lookup(name)
	if !ok || !e.visIndex().toolVisible(tool, v) {
		return nil, false
	}
	return tool, true
}

// visibleTools returns the tools served now that v sees.
func (e *Engine) visibleTools(v *viewer) []*tools.Compiled {
	x := e.visIndex()
	return x.viewsOrAll(v).tools
}

// visibleResources returns the fixed resources served now that v sees.
func (e *Engine) visibleResources(v *viewer) []*resources.CompiledResource {
	x := e.visIndex()
	return x.viewsOrAll(v).resources
}

// visibleTemplates returns the resource templates served now that v sees.
func (e *Engine) visibleTemplates(v *viewer) []*resources.CompiledTemplate {
	x := e.visIndex()
	return x.viewsOrAll(v).templates
}

// visiblePrompts returns the prompts served now that v sees.
func (e *Engine) visiblePrompts(v *viewer) []*prompts.Compiled {
	x := e.visIndex()
	return x.viewsOrAll(v).prompts
}

// resolveResource finds what serves uri among the resources and templates v sees: the fixed
// resource with that URI, else the first matching template. A URI that only invisible ones
// serve is a URI nothing serves.
func (e *Engine) resolveResource(uri string, v *viewer) (resources.Reader, *resources.ReadRequest, bool) {
	return e.visIndex().resolve(uri, v)
}

// resolve is [Engine.resolveResource] in x.
func (x *visIndex) resolve(uri string, v *viewer) (resources.Reader, *resources.ReadRequest, bool) {
	if x.open(v) {
		return x.res.Resolve(uri)
	}
	return x.res.ResolveVisible(uri, func(r *resources.CompiledResource, t *resources.CompiledTemplate) bool {
		if r != nil {
			return x.resourceVisible(r, v)
		}
		return x.templateVisible(t, v)
	})
}

// resourceFor returns the fixed resource with the URI uri when v sees it.
func (e *Engine) resourceFor(uri string, v *viewer) (*resources.CompiledResource, bool) {
	x := e.visIndex()
	r, ok := x.res.Resource(uri)
	if !ok || !x.resourceVisible(r, v) {
		return nil, false
	}
	return r, true
}

// templateFor returns the template whose URI template is uriTemplate when v sees it.
func (e *Engine) templateFor(uriTemplate string, v *viewer) (*resources.CompiledTemplate, bool) {
	x := e.visIndex()
	t, ok := x.res.Template(uriTemplate)
	if !ok || !x.templateVisible(t, v) {
		return nil, false
	}
	return t, true
}

// promptFor returns the prompt named name when v sees it.
func (e *Engine) promptFor(name string, v *viewer) (*prompts.Compiled, bool) {
	x := e.visIndex()
	p, ok := x.prm.Lookup(name)
	if !ok || !x.promptVisible(p, v) {
		return nil, false
	}
	return p, true
}

// updateVisible reports whether an update of the resource uri may be told to v: unless uri is
// served only by resources and templates invisible to v, whose updates would tell they exist. A
// URI nothing serves is told, as it always was, to those who subscribed to it. It takes no lock
// but the index's own.
func (x *visIndex) updateVisible(uri string, v *viewer) bool {
	if x.open(v) {
		return true
	}
	if _, _, served := x.res.Resolve(uri); !served {
		return true
	}
	_, _, ok := x.resolve(uri, v)
	return ok
}

// connViewer is the viewer of the connection's latest request, or one without identity.
func (c *Connection) connViewer() *viewer {
	if v := c.viewer.Load(); v != nil {
		return v
	}
	return &viewer{}
}

// taskVisible reports whether caller may know of a task that runs the tool named tool: unless
// that tool, as served now, is invisible to caller (its toolsets aside: they narrow what a
// request lists and calls, not the tasks made already). A task whose tool is no longer served
// stays visible to its owner.
func (e *Engine) taskVisible(tool string, caller *tools.Identity) bool {
	t, ok := e.Tool(tool)
	return !ok || e.visIndex().toolVisible(t, &viewer{id: caller})
}

// errUnknownTool answers a tools/call of a tool the caller cannot see: none has that name, or
// it is invisible to the caller. The message names the name requested.
func errUnknownTool(name string) *protocol.WireError {
	return protocol.ErrInvalidParams("unknown tool %q", name)
}

// toolsetsKey is the context key of the toolsets a transport read from a request.
type toolsetsKey struct{}

// WithToolsets returns a context that carries the toolsets a request narrowed its view to (the
// tags of package visibility, sorted and without duplicates, as visibility.ParseTags returns
// them): a transport passes it to [Connection.DeliverWith] and the like. A nil list returns ctx
// unchanged; an empty one narrows the view to nothing.
func WithToolsets(ctx context.Context, list []string) context.Context {
	if list == nil {
		return ctx
	}
	return context.WithValue(ctx, toolsetsKey{}, list)
}

// ToolsetsFromContext returns the toolsets of [WithToolsets], or nil.
func ToolsetsFromContext(ctx context.Context) []string {
	if ctx == nil {
		return nil
	}
	list, _ := ctx.Value(toolsetsKey{}).([]string)
	return list
}

// noteViewer records the caller and the toolsets of a request delivered to the connection: its
// view is the one a change of the tags is compared in. A stateless connection, whose requests
// are many clients', has none.
func (c *Connection) noteViewer(id *tools.Identity, toolsets []string) {
	if c.stateless {
		return
	}
	if cur := c.viewer.Load(); cur != nil && cur.id == id && slices.Equal(cur.toolsets, toolsets) &&
		(cur.toolsets == nil) == (toolsets == nil) {
		return
	}
	c.viewer.Store(&viewer{id: id, toolsets: toolsets})
}
