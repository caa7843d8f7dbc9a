package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

func (c *connectionActor) listResources(m *protocol.Message, s Stream, caller *tools.Identity) {
	all := c.eng.visibleResources(c.viewer(caller))
	start, end, next, ok := c.page(m, s, 'r', len(all))
	if !ok {
		return
	}
	res := protocol.ListResourcesResult{Resources: make([]protocol.Resource, 0, end-start), NextCursor: next}
	for _, r := range all[start:end] {
		res.Resources = append(res.Resources, r.Descriptor())
	}
	c.cacheableResult(s, m.ID, &res)
}

func (c *connectionActor) listResourceTemplates(m *protocol.Message, s Stream, caller *tools.Identity) {
	all := c.eng.visibleTemplates(c.viewer(caller))
	start, end, next, ok := c.page(m, s, 'u', len(all))
	if !ok {
		return
	}
	res := protocol.ListResourceTemplatesResult{ResourceTemplates: make([]protocol.ResourceTemplate, 0, end-start), NextCursor: next}
	for _, t := range all[start:end] {
		res.ResourceTemplates = append(res.ResourceTemplates, t.Descriptor())
	}
	c.cacheableResult(s, m.ID, &res)
}

// errResourceNotFound is the client's view of a URI nothing serves: -32002 with the URI as data
// in a legacy session, -32602 in the modern era (which removed -32002).
func errResourceNotFound(uri string, modern bool) *protocol.WireError {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	code := protocol.CodeResourceNotFound
	if modern {
		code = protocol.CodeInvalidParams
	}
	return &protocol.WireError{Code: code, Message: "Resource not found", Data: data}
}

// readResource resolves the URI here, answering -32002 at once when nothing the caller sees
// serves it (package visibility: a URI served only by resources and templates invisible to the
// caller is a URI nothing serves), and runs the reader in an operation actor.
func (c *connectionActor) readResource(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity) {
	var p protocol.ReadResourceParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.URI == "" {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("resources/read needs params with a string uri")))
		return
	}
	if u, err := url.Parse(p.URI); err != nil || u.Scheme == "" {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("uri must be an absolute URI")))
		return
	}
	modern := c.modern != nil
	reader, req, ok := c.eng.resolveResource(p.URI, c.viewer(caller))
	if !ok {
		reply(s, protocol.EncodeError(m.ID, errResourceNotFound(p.URI, modern)))
		return
	}
	var input *callInput
	if modern {
		var werr *protocol.WireError
		if input, werr = c.inputFor(m, protocol.MethodResourcesRead, p.URI, nil, p.InputParams, caller); werr != nil {
			reply(s, protocol.EncodeError(m.ID, werr))
			return
		}
	}
	req.Meta = p.Meta
	c.spawnOperation(ctx, m, s, caller, p.URI, p.Meta, input, true, func(ctx context.Context) (any, error) {
		res, err := reader.Read(ctx, req)
		switch {
		case errors.Is(err, resources.ErrNotFound):
			return nil, &publicError{errResourceNotFound(req.URI, modern)}
		case err != nil:
			return nil, err
		case res == nil:
			return nil, fmt.Errorf("resource %q: reader returned neither a result nor an error", req.URI)
		}
		if len(res.Meta) > 0 && !isJSONObject(res.Meta) {
			return nil, fmt.Errorf("resource %q: result _meta must be a JSON object", req.URI)
		}
		return &protocol.ReadResourceResult{Contents: res.Contents, Meta: res.Meta}, nil
	})
}

// MaxSubscriptions bounds the resource subscriptions of one connection.
const MaxSubscriptions = 4096

// subscribe records (or drops) a subscription to a URI. Any absolute URI may be subscribed to,
// served yet or not: resources may appear later. A URI served only by what the caller cannot
// see is subscribed to alike, and its updates are not told to it (updateVisible).
func (c *connectionActor) subscribe(m *protocol.Message, s Stream, on bool) {
	var p protocol.SubscribeParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.URI == "" {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("%s needs params with a string uri", m.Method)))
		return
	}
	if u, err := url.Parse(p.URI); err != nil || u.Scheme == "" {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("uri must be an absolute URI")))
		return
	}
	if on {
		if _, ok := c.subs[p.URI]; !ok && len(c.subs) >= MaxSubscriptions {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("too many subscriptions (the limit is %d per session)", MaxSubscriptions)))
			return
		}
		c.subs[p.URI] = struct{}{}
	} else {
		delete(c.subs, p.URI)
	}
	c.result(s, m.ID, json.RawMessage(`{}`))
}

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
