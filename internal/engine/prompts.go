package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

func (c *connectionActor) listPrompts(m *protocol.Message, s Stream, caller *tools.Identity) {
	all := c.eng.visiblePrompts(c.viewer(caller))
	start, end, next, ok := c.page(m, s, 'p', len(all))
	if !ok {
		return
	}
	res := protocol.ListPromptsResult{Prompts: make([]protocol.Prompt, 0, end-start), NextCursor: next}
	for _, p := range all[start:end] {
		res.Prompts = append(res.Prompts, p.Descriptor())
	}
	c.cacheableResult(s, m.ID, &res)
}

// getPrompt checks the name and the arguments here (-32602 for an unknown prompt, a prompt
// invisible to the caller included, a missing required argument, an unknown argument or a value
// that is not a string) and runs the handler in an operation actor.
func (c *connectionActor) getPrompt(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity) {
	var p protocol.GetPromptParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Name == "" {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("prompts/get needs params with a string name")))
		return
	}
	prompt, ok := c.eng.promptFor(p.Name, c.viewer(caller))
	if !ok {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("unknown prompt %q", p.Name)))
		return
	}
	args, err := prompt.Check(p.Arguments)
	if err != nil {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("%s", err.Error())))
		return
	}
	var input *callInput
	if c.modern != nil {
		var werr *protocol.WireError
		if input, werr = c.inputFor(m, protocol.MethodPromptsGet, p.Name, p.Arguments, p.InputParams, caller); werr != nil {
			reply(s, protocol.EncodeError(m.ID, werr))
			return
		}
	}
	req := &prompts.GetRequest{Name: p.Name, Arguments: args, Meta: p.Meta}
	handler := prompt.Handler()
	c.spawnOperation(ctx, m, s, caller, p.Name, p.Meta, input, false, func(ctx context.Context) (any, error) {
		res, err := handler.Get(ctx, req)
		var argErr *prompts.ArgumentError
		switch {
		case errors.As(err, &argErr):
			return nil, &publicError{protocol.ErrInvalidParams("%s", argErr.Error())}
		case err != nil:
			return nil, err
		case res == nil:
			return nil, fmt.Errorf("prompt %q: handler returned neither a result nor an error", req.Name)
		}
		if len(res.Meta) > 0 && !isJSONObject(res.Meta) {
			return nil, fmt.Errorf("prompt %q: result _meta must be a JSON object", req.Name)
		}
		return &protocol.GetPromptResult{Description: res.Description, Messages: res.Messages, Meta: res.Meta}, nil
	})
}
