package engine

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
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

// ResolveResource returns the reader that serves uri now, as a read finds it: the fixed
// resource with that URI, else the first template that matches it.
func (e *Engine) ResolveResource(uri string) (resources.Reader, bool) {
	r, _, ok := e.reg.resources.Load().Resolve(uri)
	return r, ok
}

// Prompt returns the prompt named name from those served now.
func (e *Engine) Prompt(name string) (*prompts.Compiled, bool) {
	return e.reg.prompts.Load().Lookup(name)
}

// CallStarter is a tool handler that can start a call without a goroutine of its own: a
// mounted tool's, whose call waits for another server rather than computes. The request actor
// calls StartCall on its own goroutine instead of running Handle on one. StartCall must not
// block; it returns the call it started, or nil, without calling done, for a call it leaves to
// Handle. A tool with middleware always runs Handle.
type CallStarter interface {
	tools.Handler
	// StartCall starts the call; done.CallDone is then called once, from any goroutine, with
	// what Handle would have returned.
	StartCall(ctx context.Context, req *tools.Request, done CallDone) StartedCall
}

// CallDone receives the outcome of a call a CallStarter started.
type CallDone interface {
	CallDone(result *tools.Result, err error)
}

// StartedCall is a call a CallStarter started. ctx of StartCall ends as a handler's context
// does, but with no goroutine waiting on it: the request actor calls Abandon instead, on its
// own goroutine, when the call is cancelled, times out, is answered otherwise (an input round)
// or its actor stops before the outcome came. Abandon must not block, and the outcome must
// follow, with the error Handle would return (ctx's cause).
type StartedCall interface {
	Abandon(cause error)
}

// startCall starts the call of tool on its handler's StartCall when it has one, and returns
// it; the outcome then reaches the request actor as a handler's does (handlerDone), after the
// checks of tools.Compiled.Run (CallDone). A panic in StartCall is the handler's.
func (r *requestActor) startCall(hctx context.Context, req *tools.Request) (started StartedCall) {
	h, ok := r.tool.Def().Handler.(CallStarter)
	if !ok || r.tool.Wrapped() {
		return nil
	}
	r.eng.handlers.Add(1) // as for a handler goroutine: Shutdown waits for the outcome
	defer func() {
		if v := recover(); v != nil {
			started = panicked{}
			r.CallDone(nil, &tools.PanicError{Tool: r.tool.Name(), Value: v, Stack: debug.Stack()})
		}
	}()
	if started = h.StartCall(hctx, req, r); started == nil {
		r.eng.handlers.Done()
	}
	return started
}

// CallDone takes the outcome of the started call, once, on any goroutine: it reads only what
// does not change after startCall.
func (r *requestActor) CallDone(res *tools.Result, err error) {
	if !r.callDone.CompareAndSwap(false, true) {
		return
	}
	defer r.eng.handlers.Done()
	var out *protocol.CallToolResult
	if err == nil {
		out, err = r.tool.Complete(res)
	}
	// The goroutine that brings the outcome (the upstream's reader) takes the actor's next
	// step itself.
	r.mailbox.postHere(&handlerDone{result: out, err: err})
}

// panicked is a call whose StartCall panicked: its outcome, the panic, is on its way already.
type panicked struct{}

func (panicked) Abandon(error) {}

// abandonStarted tells the started call, if any, that its context ended.
func (r *requestActor) abandonStarted() {
	if s := r.startedCall; s != nil {
		r.startedCall = nil
		s.Abandon(context.Cause(r.hctx))
	}
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
