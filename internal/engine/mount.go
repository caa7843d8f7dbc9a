package engine

import (
	"fmt"
	"maps"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// Hooks for sources mounted beside the server's own components (package gateway): a source
// replaces what it contributes in one step, so that clients never see a list without it while it
// is re-listed, and get one list_changed per list that changed; its connection is an actor under
// the engine's supervisor.

// ReplaceTools removes the tools named in remove and adds defs, compiled as AddTools compiles
// them, in one step: a call never finds neither the old tool nor the new one, and every
// connection is told once with notifications/tools/list_changed. A name of defs served by a tool
// not in remove is a *tools.ToolNameError ("duplicate"); on any error nothing changes. With
// nothing to remove and nothing to add it does nothing.
func (e *Engine) ReplaceTools(remove []string, defs []tools.Tool) error {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	cur := e.reg.tools.Load()
	kept, n := cur.set.Without(remove...)
	if n == 0 && len(defs) == 0 {
		return nil
	}
	next, err := kept.With(defs...)
	if err != nil {
		return err
	}
	pids := maps.Clone(cur.pids)
	for _, name := range remove {
		delete(pids, name)
	}
	return e.publishTools(&toolSnapshot{set: kept, pids: pids}, next)
}

// ReplaceResources removes the resources whose URI, and the templates whose URI template, is one
// of remove, and adds res and tpls, in one step; every connection is told once with
// notifications/resources/list_changed. On any error nothing changes. With nothing to remove and
// nothing to add it does nothing.
func (e *Engine) ReplaceResources(remove []string, res []resources.Resource, tpls []resources.Template) error {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	kept, n := e.reg.resources.Load().Without(remove...)
	if n == 0 && len(res) == 0 && len(tpls) == 0 {
		return nil
	}
	next, err := kept.With(res, tpls)
	if err != nil {
		return err
	}
	e.reg.resources.Store(next)
	e.broadcast(&listChanged{method: protocol.MethodResourcesListChanged})
	return nil
}

// ReplacePrompts removes the prompts named in remove and adds defs in one step; every connection
// is told once with notifications/prompts/list_changed. On any error nothing changes. With
// nothing to remove and nothing to add it does nothing.
func (e *Engine) ReplacePrompts(remove []string, defs []prompts.Prompt) error {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	kept, n := e.reg.prompts.Load().Without(remove...)
	if n == 0 && len(defs) == 0 {
		return nil
	}
	next, err := kept.With(defs...)
	if err != nil {
		return err
	}
	e.reg.prompts.Store(next)
	e.broadcast(&listChanged{method: protocol.MethodPromptsListChanged})
	return nil
}

// Resource returns the fixed resource with the URI uri from the resources served now.
func (e *Engine) Resource(uri string) (*resources.CompiledResource, bool) {
	return e.reg.resources.Load().Resource(uri)
}

// Template returns the resource template whose URI template is uriTemplate, from those served
// now.
func (e *Engine) Template(uriTemplate string) (*resources.CompiledTemplate, bool) {
	return e.reg.resources.Load().Template(uriTemplate)
}

// Prompt returns the prompt named name from those served now.
func (e *Engine) Prompt(name string) (*prompts.Compiled, bool) {
	return e.reg.prompts.Load().Lookup(name)
}

type (
	// spawnSupervised: engine → supervisor (RequestFuture). Spawn a long-lived actor of a
	// mounted source; the reply is the *actor.PID or an error.
	spawnSupervised struct {
		props  *actor.Props
		prefix string
	}
)

// supervisedActors are the long-lived actors spawned with SpawnSupervised.
type supervisedActors struct {
	mu   sync.Mutex
	pids map[string]bool // by PID id
}

// SpawnSupervised spawns an actor from props as a child of the engine's supervisor, with an id
// that starts with prefix, and returns it; its mailbox runs on the engine's dispatcher. The supervisor restarts it, with its mailbox kept,
// when it panics (props may produce the same instance again, to keep its state), and stops it
// when the engine shuts down, after the connections. Call it from outside any actor; it fails
// once the engine is closed.
func (e *Engine) SpawnSupervised(props *actor.Props, prefix string) (*actor.PID, error) {
	if e.Closed() {
		return nil, ErrClosed
	}
	// Its mailbox runs on the engine's warm workers, as the engine's own actors' do.
	props = props.Configure(actor.WithDispatcher(e.dispatcher))
	res, err := e.system.Root.RequestFuture(e.supervisor, &spawnSupervised{props: props, prefix: prefix}, defaultActorReplyTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("actors: spawn %s: %w", prefix, err)
	}
	switch r := res.(type) {
	case *actor.PID:
		return r, nil
	case error:
		return nil, r
	}
	return nil, fmt.Errorf("actors: spawn %s: unexpected reply %T", prefix, res)
}

// receive handles spawnSupervised on the supervisor's goroutine and reports whether the message
// was one.
func (a *supervisedActors) receive(ctx actor.Context) bool {
	m, ok := ctx.Message().(*spawnSupervised)
	if !ok {
		return false
	}
	pid, err := spawnPrefixed(ctx, m.props, m.prefix)
	if err != nil {
		ctx.Respond(err)
		return true
	}
	a.mu.Lock()
	if a.pids == nil {
		a.pids = make(map[string]bool)
	}
	a.pids[pid.Id] = true
	a.mu.Unlock()
	ctx.Respond(pid)
	return true
}

// spawnPrefixed is ctx.SpawnPrefix that turns protoactor's panic on props it cannot spawn as a
// child into an error.
func spawnPrefixed(ctx actor.Context, props *actor.Props, prefix string) (pid *actor.PID, err error) {
	defer func() {
		if v := recover(); v != nil {
			pid, err = nil, fmt.Errorf("%v", v)
		}
	}()
	return ctx.SpawnPrefix(props, prefix), nil
}

// handleFailure restarts a supervised actor that panicked and reports whether child was one.
func (a *supervisedActors) handleFailure(sup actor.Supervisor, child *actor.PID, reason any, log *zap.Logger) bool {
	a.mu.Lock()
	ok := a.pids[child.Id]
	a.mu.Unlock()
	if !ok {
		return false
	}
	log.Error("mounted source's actor panicked; restarting it", zap.String("actor", child.Id), zap.Any("reason", reason))
	sup.RestartChildren(child)
	return true
}

// forget drops a supervised actor that stopped.
func (a *supervisedActors) forget(pid *actor.PID) {
	a.mu.Lock()
	delete(a.pids, pid.Id)
	a.mu.Unlock()
}
