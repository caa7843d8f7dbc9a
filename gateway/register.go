package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/tags"
	"github.com/toolgrain/toolgrain/internal/upstream"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// mount is one mounted upstream: its actor, and the registrar that turns its listings into the
// server's components.
type mount struct {
	g          *Gateway
	name       string
	prefix     string
	sep        string
	filter     filter
	transforms map[string]ToolTransform
	tags       []string // Mount.Tags
	timeout    time.Duration
	log        *zap.Logger
	cfg        upstream.Config
	up         *upstream.Upstream
	netAttrs   []attribute.KeyValue // the network attributes of its requests' spans
	owned      *toolgrain.Server    // the server the gateway made of a tool set, closed with the mount

	// What the registrar is to apply next: the latest listing, or nil after Down; set says
	// there is something; running that the registrar's goroutine runs. Guarded by mu.
	mu      sync.Mutex
	next    *upstream.Lists
	set     bool
	running bool
	closing bool
	state   served         // what is served now, for Status; guarded by mu
	regs    sync.WaitGroup // the registrar's goroutine

	// The registrar's own.
	reg registered
}

// served counts what a mount serves.
type served struct {
	listed                               bool
	tools, resources, templates, prompts int
}

// registered is what a mount has put into the server, and the upstream's lists it came from
// (to tell a listing that changed nothing).
type registered struct {
	tools, resources, prompts   []string // names, URIs and URI templates as served
	toolsFrom, resFrom, prmFrom []byte   // the listing they were made from
}

// closeOwned closes the server the gateway made for the mount, if any.
func (m *mount) closeOwned() {
	if m.owned != nil {
		_ = m.owned.Close()
	}
}

func (m *mount) start() error {
	eng := m.g.engine()
	up, err := upstream.Start(eng.System().Root, eng.SpawnSupervised, m.cfg)
	if err != nil {
		return err
	}
	m.up = up
	return nil
}

// Listed implements upstream.Events.
func (m *mount) Listed(l *upstream.Lists) { m.post(l) }

// Down implements upstream.Events.
func (m *mount) Down(error) { m.post(nil) }

// ResourceUpdated implements upstream.Events: the update goes to the clients subscribed to the
// resource as it is served.
func (m *mount) ResourceUpdated(uri string) {
	if served, ok := MountURI(m.prefix, uri); ok {
		m.g.engine().ResourceUpdated(served)
	}
}

func (m *mount) post(l *upstream.Lists) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return
	}
	m.next, m.set = l, true
	if !m.running {
		m.running = true
		m.regs.Add(1)
		// Owned by the mount: it ends when nothing is left to apply; close waits for it.
		go m.registrar()
	}
}

// registrar applies the upstream's listings to the server, one at a time, the latest first:
// compiling schemas and publishing lists happen here, never on the upstream's actor.
func (m *mount) registrar() {
	defer m.regs.Done()
	for {
		m.mu.Lock()
		l, ok := m.next, m.set
		m.next, m.set = nil, false
		if !ok || m.closing {
			m.running = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		m.apply(l)
		m.g.changedNow()
	}
}

// close withdraws the mount's components and closes its upstream.
func (m *mount) close() {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	m.regs.Wait()
	m.apply(nil)
	m.up.Close()
	m.closeOwned()
	m.g.changedNow()
}

func (m *mount) status() MountStatus {
	st := m.up.Status()
	m.mu.Lock()
	sv := m.state
	m.mu.Unlock()
	return MountStatus{
		Name: m.name, State: string(st.State), Err: st.Err, Since: st.Since, Listed: sv.listed,
		Tools: sv.tools, Resources: sv.resources, Templates: sv.templates, Prompts: sv.prompts,
		ProtocolVersion: st.Version, Late: m.up.Stats().Late.Load(), PID: st.PID,
		InFlight: int(m.up.Stats().InFlight.Load()),
	}
}

// apply makes the server serve l (nil: nothing). A list whose listing did not change since the
// last one is left as it is, so its clients get no list_changed.
func (m *mount) apply(l *upstream.Lists) {
	eng := m.g.engine()
	var toolsFrom, resFrom, prmFrom []byte
	if l != nil {
		toolsFrom, _ = json.Marshal(l.Tools)
		resFrom, _ = json.Marshal([]any{l.Resources, l.Templates, l.Capabilities.Completions != nil})
		prmFrom, _ = json.Marshal([]any{l.Prompts, l.Capabilities.Completions != nil})
	}
	sv := served{listed: l != nil}

	if l == nil || !bytes.Equal(toolsFrom, m.reg.toolsFrom) {
		defs := m.toolDefs(l)
		names := m.replaceTools(defs)
		m.reg.tools, m.reg.toolsFrom = names, toolsFrom
	}
	sv.tools = len(m.reg.tools)

	if l == nil || !bytes.Equal(resFrom, m.reg.resFrom) {
		res, tpls := m.resourceDefs(l)
		keys := m.replaceResources(res, tpls)
		m.reg.resources, m.reg.resFrom = keys, resFrom
	}
	for _, k := range m.reg.resources {
		if _, ok := eng.Template(k); ok {
			sv.templates++
		} else {
			sv.resources++
		}
	}

	if l == nil || !bytes.Equal(prmFrom, m.reg.prmFrom) {
		defs := m.promptDefs(l)
		names := m.replacePrompts(defs)
		m.reg.prompts, m.reg.prmFrom = names, prmFrom
	}
	sv.prompts = len(m.reg.prompts)

	m.mu.Lock()
	m.state = sv
	m.mu.Unlock()
	if l != nil {
		m.log.Info("upstream listed", zap.Int("tools", sv.tools), zap.Int("resources", sv.resources),
			zap.Int("templates", sv.templates), zap.Int("prompts", sv.prompts))
	}
}

// replaceTools puts defs in place of the mount's current tools, leaving out (and logging) those
// the server cannot take: a name already served by another source, a name or schema that breaks
// the server's rules. It returns the names now served.
func (m *mount) replaceTools(defs []tools.Tool) []string {
	eng := m.g.engine()
	defs = slices.DeleteFunc(defs, func(d tools.Tool) bool {
		if _, taken := eng.Tool(d.Name); taken && !slices.Contains(m.reg.tools, d.Name) {
			m.log.Warn("upstream tool left out: the name is already served", zap.String("tool", d.Name))
			return true
		}
		return false
	})
	for range 3 {
		err := eng.ReplaceTools(m.reg.tools, defs)
		if err == nil {
			return toolNames(defs)
		}
		bad := badTools(err)
		if len(bad) == 0 {
			break
		}
		defs = slices.DeleteFunc(defs, func(d tools.Tool) bool {
			if e, ok := bad[d.Name]; ok {
				m.log.Warn("upstream tool left out", zap.String("tool", d.Name), zap.Error(e))
				return true
			}
			return false
		})
	}
	if err := eng.ReplaceTools(m.reg.tools, defs); err != nil {
		m.log.Error("upstream tools not served", zap.Error(err))
		_ = eng.ReplaceTools(m.reg.tools, nil)
		return nil
	}
	return toolNames(defs)
}

func toolNames(defs []tools.Tool) []string {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	return names
}

// badTools maps the tools named by the construction errors in err to their error.
func badTools(err error) map[string]error {
	out := map[string]error{}
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var ne *tools.ToolNameError
		var se *tools.ToolSchemaError
		switch {
		case errors.As(e, &ne):
			out[ne.Name] = e
		case errors.As(e, &se):
			out[se.Tool] = e
		}
	}
	walk(err)
	return out
}

func (m *mount) replaceResources(res []resources.Resource, tpls []resources.Template) []string {
	eng := m.g.engine()
	keep := func(key string) bool {
		if slices.Contains(m.reg.resources, key) {
			return true
		}
		_, r := eng.Resource(key)
		_, t := eng.Template(key)
		if r || t {
			m.log.Warn("upstream resource left out: the URI is already served", zap.String("uri", key))
			return false
		}
		return true
	}
	res = slices.DeleteFunc(res, func(r resources.Resource) bool { return !keep(r.URI) })
	tpls = slices.DeleteFunc(tpls, func(t resources.Template) bool { return !keep(t.URITemplate) })
	for range 2 {
		err := eng.ReplaceResources(m.reg.resources, res, tpls)
		if err == nil {
			return resourceKeys(res, tpls)
		}
		bad := map[string]error{}
		walkJoined(err, func(e error) {
			var de *resources.DefinitionError
			if errors.As(e, &de) {
				bad[de.Key] = e
			}
		})
		if len(bad) == 0 {
			m.log.Error("upstream resources not served", zap.Error(err))
			break
		}
		res = slices.DeleteFunc(res, func(r resources.Resource) bool { return logBad(m.log, "resource", bad, r.URI) })
		tpls = slices.DeleteFunc(tpls, func(t resources.Template) bool { return logBad(m.log, "resource template", bad, t.URITemplate) })
	}
	if err := eng.ReplaceResources(m.reg.resources, res, tpls); err != nil {
		m.log.Error("upstream resources not served", zap.Error(err))
		_ = eng.ReplaceResources(m.reg.resources, nil, nil)
		return nil
	}
	return resourceKeys(res, tpls)
}

func resourceKeys(res []resources.Resource, tpls []resources.Template) []string {
	keys := make([]string, 0, len(res)+len(tpls))
	for _, r := range res {
		keys = append(keys, r.URI)
	}
	for _, t := range tpls {
		keys = append(keys, t.URITemplate)
	}
	return keys
}

func (m *mount) replacePrompts(defs []prompts.Prompt) []string {
	eng := m.g.engine()
	defs = slices.DeleteFunc(defs, func(d prompts.Prompt) bool {
		if _, taken := eng.Prompt(d.Name); taken && !slices.Contains(m.reg.prompts, d.Name) {
			m.log.Warn("upstream prompt left out: the name is already served", zap.String("prompt", d.Name))
			return true
		}
		return false
	})
	for range 2 {
		err := eng.ReplacePrompts(m.reg.prompts, defs)
		if err == nil {
			return promptNames(defs)
		}
		bad := map[string]error{}
		walkJoined(err, func(e error) {
			var de *prompts.DefinitionError
			if errors.As(e, &de) {
				bad[de.Name] = e
			}
		})
		if len(bad) == 0 {
			m.log.Error("upstream prompts not served", zap.Error(err))
			break
		}
		defs = slices.DeleteFunc(defs, func(d prompts.Prompt) bool { return logBad(m.log, "prompt", bad, d.Name) })
	}
	if err := eng.ReplacePrompts(m.reg.prompts, defs); err != nil {
		m.log.Error("upstream prompts not served", zap.Error(err))
		_ = eng.ReplacePrompts(m.reg.prompts, nil)
		return nil
	}
	return promptNames(defs)
}

func promptNames(defs []prompts.Prompt) []string {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	return names
}

func walkJoined(err error, f func(error)) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			walkJoined(e, f)
		}
		return
	}
	f(err)
}

func logBad(log *zap.Logger, kind string, bad map[string]error, key string) bool {
	if e, ok := bad[key]; ok {
		log.Warn("upstream "+kind+" left out", zap.String("key", key), zap.Error(e))
		return true
	}
	return false
}

// upstreamTool is the part of a tools/list entry the gateway reads.
type upstreamTool struct {
	Name         string                    `json:"name"`
	Title        string                    `json:"title"`
	Description  string                    `json:"description"`
	InputSchema  json.RawMessage           `json:"inputSchema"`
	OutputSchema json.RawMessage           `json:"outputSchema"`
	Annotations  *protocol.ToolAnnotations `json:"annotations"`
	Meta         json.RawMessage           `json:"_meta"`
}

// tagsOf returns the tags of one of the upstream's components (kind "tool", "resource",
// "resource template" or "prompt", named by the upstream): the mount's, those of extra (a
// tool's transform's), and those the upstream declares in the component's _meta under
// "io.github.toolgrain/tags"; nil when none. A declared tag that is not a tag, or a member that
// is not an array of strings, is dropped, and the log says so.
func (m *mount) tagsOf(kind, name string, meta json.RawMessage, extra []string) []string {
	var out []string
	out = append(append(out, m.tags...), extra...)
	var members map[string]json.RawMessage
	if len(meta) == 0 || json.Unmarshal(meta, &members) != nil {
		return out
	}
	raw, ok := members[tags.MetaTags]
	if !ok {
		return out
	}
	var declared []string
	if err := json.Unmarshal(raw, &declared); err != nil {
		m.log.Warn("upstream tags dropped: not an array of strings", zap.String(kind, name), zap.String("key", tags.MetaTags))
		return out
	}
	for _, t := range declared {
		if reason := tags.Check(t); reason != "" {
			if len(t) > tags.MaxLength+8 {
				t = t[:tags.MaxLength+8] + "..."
			}
			m.log.Warn("upstream tag dropped", zap.String(kind, name), zap.String("tag", t), zap.String("reason", reason))
			continue
		}
		out = append(out, t)
	}
	return out
}

// toolDefs builds the server's definitions of the upstream's tools: filtered, transformed and
// named by the mount's rules, each with a handler that forwards to the upstream.
func (m *mount) toolDefs(l *upstream.Lists) []tools.Tool {
	if l == nil {
		return nil
	}
	seen := map[string]bool{}
	defs := make([]tools.Tool, 0, len(l.Tools))
	for _, raw := range l.Tools {
		var t upstreamTool
		if err := json.Unmarshal(raw, &t); err != nil || t.Name == "" {
			m.log.Warn("upstream tool left out: malformed entry", zap.Error(err))
			continue
		}
		if !m.filter.keeps(t.Name) {
			continue
		}
		seen[t.Name] = true
		schema := t.InputSchema
		if len(schema) == 0 || bytes.Equal(bytes.TrimSpace(schema), []byte("null")) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		base := t.Name
		var plan *argPlan
		var scopes, extra []string
		if tr, ok := m.transforms[t.Name]; ok {
			scopes = append(scopes, tr.Scopes...)
			extra = tr.Tags
			if tr.Name != "" {
				base = tr.Name
			}
			if tr.Title != nil {
				t.Title = *tr.Title
			}
			if tr.Description != nil {
				t.Description = *tr.Description
			}
			var err error
			if schema, plan, err = transformSchema(schema, tr.Arguments); err != nil {
				m.log.Warn("upstream tool left out: its transform does not fit it", zap.String("tool", t.Name), zap.Error(err))
				continue
			}
		}
		out := t.OutputSchema
		if bytes.Equal(bytes.TrimSpace(out), []byte("null")) {
			out = nil
		}
		name := m.componentName(base)
		scopes = append(scopes, m.g.scopes[name]...)
		defs = append(defs, tools.Tool{
			Name: name, Title: t.Title, Description: t.Description, Scopes: scopes,
			Tags: m.tagsOf("tool", t.Name, t.Meta, extra), InputSchema: schema, OutputSchema: out, Annotations: t.Annotations,
			Handler: newToolHandler(m, t.Name, name, plan, len(out) > 0, headerArgs(t.InputSchema)),
		})
	}
	for name := range m.transforms {
		if !seen[name] && m.filter.keeps(name) {
			m.log.Debug("tool transform names no tool of the upstream", zap.String("tool", name))
		}
	}
	return defs
}

// resourceDefs builds the server's definitions of the upstream's resources and templates.
func (m *mount) resourceDefs(l *upstream.Lists) ([]resources.Resource, []resources.Template) {
	if l == nil {
		return nil, nil
	}
	completes := l.Capabilities.Completions != nil
	res := make([]resources.Resource, 0, len(l.Resources))
	for _, r := range l.Resources {
		uri, ok := MountURI(m.prefix, r.URI)
		if !ok {
			m.log.Warn("upstream resource left out: its URI has no scheme", zap.String("uri", r.URI))
			continue
		}
		res = append(res, resources.Resource{
			URI: uri, Name: r.Name, Title: r.Title, Description: r.Description, MimeType: r.MimeType,
			Annotations: r.Annotations, Tags: m.tagsOf("resource", r.URI, r.Meta, nil), Reader: &resourceReader{m: m},
		})
	}
	tpls := make([]resources.Template, 0, len(l.Templates))
	for _, t := range l.Templates {
		uri, ok := MountURI(m.prefix, t.URITemplate)
		if !ok {
			m.log.Warn("upstream resource template left out: it has no scheme", zap.String("uriTemplate", t.URITemplate))
			continue
		}
		tpl := resources.Template{
			URITemplate: uri, Name: t.Name, Title: t.Title, Description: t.Description, MimeType: t.MimeType,
			Annotations: t.Annotations, Tags: m.tagsOf("resource template", t.URITemplate, t.Meta, nil),
			Reader: &resourceReader{m: m},
		}
		if completes {
			tpl.Complete = map[string]resources.CompleteFunc{}
			for _, v := range templateVars(t.URITemplate) {
				tpl.Complete[v] = m.completer(protocol.CompleteReference{Type: protocol.RefResource, URI: t.URITemplate}, v)
			}
		}
		tpls = append(tpls, tpl)
	}
	return res, tpls
}

// promptDefs builds the server's definitions of the upstream's prompts.
func (m *mount) promptDefs(l *upstream.Lists) []prompts.Prompt {
	if l == nil {
		return nil
	}
	completes := l.Capabilities.Completions != nil
	defs := make([]prompts.Prompt, 0, len(l.Prompts))
	for _, p := range l.Prompts {
		def := prompts.Prompt{
			Name: m.componentName(p.Name), Title: p.Title, Description: p.Description,
			Tags:    m.tagsOf("prompt", p.Name, p.Meta, nil),
			Handler: &promptHandler{m: m, name: p.Name},
		}
		for _, a := range p.Arguments {
			arg := prompts.Argument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required}
			if completes {
				arg.Complete = prompts.CompleteFunc(m.completer(protocol.CompleteReference{Type: protocol.RefPrompt, Name: p.Name}, a.Name))
			}
			def.Arguments = append(def.Arguments, arg)
		}
		defs = append(defs, def)
	}
	return defs
}
