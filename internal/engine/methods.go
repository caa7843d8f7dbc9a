package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// Method is a JSON-RPC method beyond the specification's that the engine serves
// ([Config].Methods), in both eras, with the error model of an operation: its handler runs on a
// goroutine owned by an operation actor, under the limits on calls in flight, cancellable by
// notifications/cancelled (and by the end of a modern HTTP request's stream), and silent after
// a cancellation.
type Method struct {
	// Decode reads the request's params (nil when the request has none); an error it returns
	// reaches the client as it is, -32602 with what is wrong, and the method does not run.
	Decode func(params json.RawMessage) (any, *protocol.WireError)
	// Run serves one call with what Decode returned and returns the result, which must encode
	// as a JSON object. Any error, and a panic, is an unexpected failure: the client gets
	// -32603 and OnError the original, with the method's name.
	Run func(ctx context.Context, params any) (any, error)
}

// customMethod serves a request for one of the engine's custom methods, and reports whether m
// is one.
func (c *connectionActor) customMethod(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity) bool {
	method, ok := c.eng.cfg.Methods[m.Method]
	if !ok {
		return false
	}
	if c.modern == nil && !c.requireInit(m, s) {
		return true
	}
	if c.idBusy(m, s) {
		return true
	}
	slot := c.admit(m, s)
	if slot == nil {
		return true
	}
	params, name := m.Params, m.Method
	meta := requestMeta(params)
	c.spawnOperationIn(ctx, m, s, caller, name, meta, nil, false, slot, func(ctx context.Context) (any, error) {
		v, werr := method.Decode(params)
		if werr != nil {
			return nil, &publicError{werr}
		}
		res, err := method.Run(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return res, nil
	})
	return true
}

// requestMeta returns params._meta when params is an object that has one, else nil.
func requestMeta(params json.RawMessage) json.RawMessage {
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || !isJSONObject(p.Meta) {
		return nil
	}
	return p.Meta
}

// legacyCapabilities are what initialize declares: the capabilities of every connection, and
// the engine's extensions under experimental, the only place the legacy revisions have for
// them.
func (e *Engine) legacyCapabilities() protocol.ServerCapabilities {
	caps := serverCapabilities()
	if len(e.cfg.Extensions) > 0 {
		caps.Experimental = e.cfg.Extensions
	}
	return caps
}

// modernCapabilities are what server/discover declares: the capabilities of every connection,
// and the extensions, the tasks extension among them when it is on.
func (e *Engine) modernCapabilities() protocol.ServerCapabilities {
	caps := serverCapabilities()
	if len(e.cfg.Extensions) > 0 || e.TasksEnabled() {
		caps.Extensions = maps.Clone(e.cfg.Extensions)
		if caps.Extensions == nil {
			caps.Extensions = make(map[string]json.RawMessage, 1)
		}
		if e.TasksEnabled() {
			caps.Extensions[protocol.ExtensionTasks] = json.RawMessage(`{}`)
		}
	}
	return caps
}
