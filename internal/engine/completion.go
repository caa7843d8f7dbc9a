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
