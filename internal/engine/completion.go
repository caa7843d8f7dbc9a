package engine

import (
	"context"
	"encoding/json"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// complete answers completion/complete for a prompt argument or a resource-template variable:
// -32602 for an unknown reference (one invisible to the caller included) or argument, an empty list when the argument has no
// completer, and otherwise the completer's values (at most 100, with total and hasMore) from an
// operation actor.
func (c *connectionActor) complete(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity) {
	var p protocol.CompleteParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Argument.Name == "" {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("completion/complete needs params with ref and argument.name")))
		return
	}
	var fn func(ctx context.Context, value string, args map[string]string) ([]string, error)
	switch p.Ref.Type {
	case protocol.RefPrompt:
		prompt, ok := c.eng.promptFor(p.Ref.Name, c.viewer(caller))
		if !ok {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("unknown prompt %q", p.Ref.Name)))
			return
		}
		if !prompt.HasArgument(p.Argument.Name) {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("prompt %q has no argument %q", p.Ref.Name, p.Argument.Name)))
			return
		}
		fn = prompt.Completer(p.Argument.Name)
	case protocol.RefResource:
		v := c.viewer(caller)
		tpl, ok := c.eng.templateFor(p.Ref.URI, v)
		if !ok {
			if _, isResource := c.eng.resourceFor(p.Ref.URI, v); isResource {
				reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("resource %q has no argument %q", p.Ref.URI, p.Argument.Name)))
			} else {
				reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("unknown resource template %q", p.Ref.URI)))
			}
			return
		}
		if !tpl.HasVar(p.Argument.Name) {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("resource template %q has no variable %q", p.Ref.URI, p.Argument.Name)))
			return
		}
		fn = tpl.Completer(p.Argument.Name)
	default:
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("ref.type must be %q or %q", protocol.RefPrompt, protocol.RefResource)))
		return
	}
	if fn == nil {
		c.result(s, m.ID, &protocol.CompleteResult{})
		return
	}
	var args map[string]string
	if p.Context != nil {
		args = p.Context.Arguments
	}
	value := p.Argument.Value
	c.spawnOperation(ctx, m, s, caller, p.Argument.Name, nil, nil, false, func(ctx context.Context) (any, error) {
		values, err := fn(ctx, value, args)
		if err != nil {
			return nil, err
		}
		total := len(values)
		res := &protocol.CompleteResult{Completion: protocol.CompletionValues{Values: values, Total: &total}}
		if total > protocol.MaxCompletionValues {
			res.Completion.Values = values[:protocol.MaxCompletionValues]
			res.Completion.HasMore = true
		}
		return res, nil
	})
}

// setLevel answers logging/setLevel: the connection's log messages are filtered from then on.
func (c *connectionActor) setLevel(m *protocol.Message, s Stream) {
	var p protocol.SetLevelParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("logging/setLevel needs params with a string level")))
		return
	}
	sev, ok := protocol.LogSeverity(p.Level)
	if !ok {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("invalid log level %q", p.Level)))
		return
	}
	c.state.level.Store(int32(sev))
	c.result(s, m.ID, json.RawMessage(`{}`))
}

// handleSurface dispatches the requests beyond tools; it reports whether m was one of them.
func (c *connectionActor) handleSurface(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity) bool {
	switch m.Method {
	case protocol.MethodResourcesList, protocol.MethodResourcesTemplatesList, protocol.MethodResourcesRead,
		protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe,
		protocol.MethodPromptsList, protocol.MethodPromptsGet,
		protocol.MethodLoggingSetLevel, protocol.MethodCompletionComplete:
	default:
		return false
	}
	if !c.requireInit(m, s) {
		return true
	}
	switch m.Method {
	case protocol.MethodResourcesList:
		c.listResources(m, s, caller)
	case protocol.MethodResourcesTemplatesList:
		c.listResourceTemplates(m, s, caller)
	case protocol.MethodResourcesRead:
		c.readResource(ctx, m, s, caller)
	case protocol.MethodResourcesSubscribe:
		c.subscribe(m, s, true)
	case protocol.MethodResourcesUnsubscribe:
		c.subscribe(m, s, false)
	case protocol.MethodPromptsList:
		c.listPrompts(m, s, caller)
	case protocol.MethodPromptsGet:
		c.getPrompt(ctx, m, s, caller)
	case protocol.MethodLoggingSetLevel:
		c.setLevel(m, s)
	case protocol.MethodCompletionComplete:
		c.complete(ctx, m, s, caller)
	}
	return true
}
