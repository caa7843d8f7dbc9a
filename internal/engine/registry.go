package engine

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// toolSnapshot is one version of the tool list with the admission actors of its limited tools.
type toolSnapshot struct {
	set  *tools.Set
	pids map[string]*actor.PID // by tool name; only tools with a concurrency limit
}

// registry holds what the server offers. Connection actors read the current snapshot of each
// list with one atomic load; writers (the server's Add and Remove methods, from any goroutine)
// are serialised by mu, build a new snapshot, publish it, and then tell every connection that
// the list changed. Calls running on an older snapshot finish on it.
type registry struct {
	mu        sync.Mutex
	tools     atomic.Pointer[toolSnapshot]
	resources atomic.Pointer[resources.Set]
	prompts   atomic.Pointer[prompts.Set]
	gates     map[string]gateRef // admission actors by tool name, kept across removals; under mu
}

// gateRef is an admission actor and the limit it enforces.
type gateRef struct {
	pid   *actor.PID
	limit int
}

func (e *Engine) initRegistry(toolPIDs map[string]*actor.PID) {
	e.reg.tools.Store(&toolSnapshot{set: e.cfg.Tools, pids: toolPIDs})
	e.reg.resources.Store(e.cfg.Resources)
	e.reg.prompts.Store(e.cfg.Prompts)
	e.reg.gates = make(map[string]gateRef, len(toolPIDs))
	for _, t := range e.cfg.Tools.List() {
		if pid, ok := toolPIDs[t.Name()]; ok {
			e.reg.gates[t.Name()] = gateRef{pid: pid, limit: t.Def().MaxConcurrency}
		}
	}
}

// Tool returns the tool named name from the tools served now, and false when none is. A tool
// added or removed afterwards ([Engine.AddTools], [Engine.RemoveTools]) does not change the
// *tools.Compiled returned.
func (e *Engine) Tool(name string) (*tools.Compiled, bool) {
	return e.reg.tools.Load().set.Lookup(name)
}

// AddTools compiles defs and adds them to the served tools; every connection is told with
// notifications/tools/list_changed. A name already served is a *tools.ToolNameError ("duplicate");
// on any error nothing is added.
func (e *Engine) AddTools(defs ...tools.Tool) error {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	cur := e.reg.tools.Load()
	next, err := cur.set.With(defs...)
	if err != nil {
		return err
	}
	return e.publishTools(cur, next)
}

// publishTools makes next the served tools, cur being the snapshot it was derived from: the
// actor-backed tools defined by Props get their actor and the limited tools their admission
// actor first, then every connection is told. Called with e.reg.mu held.
func (e *Engine) publishTools(cur *toolSnapshot, next *tools.Set) error {
	// Actor-backed tools defined by Props get their actor before they are listed.
	if err := e.startActorTools(next); err != nil {
		return err
	}
	pids := maps.Clone(cur.pids)
	for _, t := range next.List() {
		limit := t.Def().MaxConcurrency
		if _, old := cur.set.Lookup(t.Name()); old || limit <= 0 {
			continue
		}
		g, ok := e.reg.gates[t.Name()]
		if !ok || g.limit != limit {
			pid, err := e.spawnGate(limit)
			if err != nil {
				return err
			}
			g = gateRef{pid: pid, limit: limit}
			e.reg.gates[t.Name()] = g
		}
		pids[t.Name()] = g.pid
	}
	e.reg.tools.Store(&toolSnapshot{set: next, pids: pids})
	e.broadcast(&listChanged{method: protocol.MethodToolsListChanged})
	return nil
}

// RemoveTools stops serving the named tools and returns how many it removed; when any was,
// every connection is told. Calls already running finish.
func (e *Engine) RemoveTools(names ...string) int {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	cur := e.reg.tools.Load()
	next, n := cur.set.Without(names...)
	if n == 0 {
		return 0
	}
	pids := maps.Clone(cur.pids)
	for _, name := range names {
		delete(pids, name)
	}
	e.reg.tools.Store(&toolSnapshot{set: next, pids: pids})
	e.broadcast(&listChanged{method: protocol.MethodToolsListChanged})
	return n
}

// AddResources adds resources and templates; every connection is told with
// notifications/resources/list_changed. On any error nothing is added.
func (e *Engine) AddResources(res []resources.Resource, tpls []resources.Template) error {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	next, err := e.reg.resources.Load().With(res, tpls)
	if err != nil {
		return err
	}
	e.reg.resources.Store(next)
	e.broadcast(&listChanged{method: protocol.MethodResourcesListChanged})
	return nil
}

// RemoveResources removes the resources with the given URIs and the templates with the given
// URI templates, and returns how many it removed; when any was, every connection is told.
func (e *Engine) RemoveResources(keys ...string) int {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	next, n := e.reg.resources.Load().Without(keys...)
	if n == 0 {
		return 0
	}
	e.reg.resources.Store(next)
	e.broadcast(&listChanged{method: protocol.MethodResourcesListChanged})
	return n
}

// AddPrompts adds prompts; every connection is told with notifications/prompts/list_changed. On
// any error nothing is added.
func (e *Engine) AddPrompts(defs ...prompts.Prompt) error {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	next, err := e.reg.prompts.Load().With(defs...)
	if err != nil {
		return err
	}
	e.reg.prompts.Store(next)
	e.broadcast(&listChanged{method: protocol.MethodPromptsListChanged})
	return nil
}

// RemovePrompts removes the named prompts and returns how many it removed; when any was, every
// connection is told.
func (e *Engine) RemovePrompts(names ...string) int {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	next, n := e.reg.prompts.Load().Without(names...)
	if n == 0 {
		return 0
	}
	e.reg.prompts.Store(next)
	e.broadcast(&listChanged{method: protocol.MethodPromptsListChanged})
	return n
}

// ResourceUpdated sends notifications/resources/updated for uri to every connection whose
// client subscribed to it. It never blocks.
func (e *Engine) ResourceUpdated(uri string) {
	e.broadcast(&resourceUpdated{uri: uri})
}

// ElicitationComplete sends notifications/elicitation/complete for the URL-mode elicitation id
// to the connection that requested it, if any. It never blocks.
func (e *Engine) ElicitationComplete(id string) {
	e.broadcast(&elicitationCompleted{id: id})
}

// Deliver tells this engine's connections and listen streams of a list change or resource
// update that happened on another engine (see [Config].Relay): method is one of the
// notifications/.../list_changed methods, with uri "", or notifications/resources/updated with
// the resource's uri. Any other method is ignored. It is not relayed again, and never blocks.
func (e *Engine) Deliver(method, uri string) {
	switch method {
	case protocol.MethodToolsListChanged, protocol.MethodResourcesListChanged, protocol.MethodPromptsListChanged:
		e.send(&listChanged{method: method})
	case protocol.MethodResourcesUpdated:
		if uri != "" {
			e.send(&resourceUpdated{uri: uri})
		}
	}
}

// broadcast sends msg to every open connection actor, and a list change or a resource update
// to every listen stream that asked for it, then relays the latter to [Config].Relay. It never
// blocks.
func (e *Engine) broadcast(msg any) {
	e.send(msg)
	if e.cfg.Relay == nil {
		return
	}
	switch m := msg.(type) {
	case *listChanged:
		e.cfg.Relay(m.method, "")
	case *resourceUpdated:
		e.cfg.Relay(protocol.MethodResourcesUpdated, m.uri)
	}
}

// send is broadcast without the relay.
func (e *Engine) send(msg any) {
	switch m := msg.(type) {
	case *listChanged:
		e.notifyListeners(m.method, "")
	case *resourceUpdated:
		e.notifyListeners(protocol.MethodResourcesUpdated, m.uri)
	}
	switch m := msg.(type) {
	case *listChanged:
		m.frame = m.encoded()
	case *resourceUpdated:
		m.frame = m.encoded()
	}
	e.mu.Lock()
	conns := make([]*Connection, 0, len(e.conns))
	for c := range e.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	for _, c := range conns {
		c.broadcast(msg)
	}
}

// encoded returns the notification of a list change: m.frame, or newly encoded.
func (m *listChanged) encoded() []byte {
	if m.frame != nil {
		return m.frame
	}
	frame, err := protocol.EncodeNotification(m.method, nil)
	if err != nil {
		return nil
	}
	return frame
}

// encoded returns the notification of a resource update: m.frame, or newly encoded.
func (m *resourceUpdated) encoded() []byte {
	if m.frame != nil {
		return m.frame
	}
	frame, err := protocol.EncodeNotification(protocol.MethodResourcesUpdated, &protocol.ResourceUpdatedParams{URI: m.uri})
	if err != nil {
		return nil
	}
	return frame
}

// elicitationCompleteFrame returns notifications/elicitation/complete for id.
func elicitationCompleteFrame(id string) []byte {
	frame, err := protocol.EncodeNotification(protocol.MethodElicitationComplete, &protocol.ElicitationCompleteParams{ElicitationID: id})
	if err != nil {
		return nil
	}
	return frame
}

// spawnGate starts an admission actor for a tool added at run time.
func (e *Engine) spawnGate(limit int) (*actor.PID, error) {
	res, err := e.system.Root.RequestFuture(e.supervisor, &spawnTool{limit: limit}, defaultActorReplyTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("actors: spawn tool actor: %w", err)
	}
	return res.(*actor.PID), nil
}
