package engine

import (
	"encoding/json"

	"github.com/toolgrain/toolgrain/internal/tags"
	"github.com/toolgrain/toolgrain/protocol"
)

// The modern era (MCP 2026-07-28): a request that carries the envelope in params._meta is
// served on its own, whatever came before it on the connection. Its version, capabilities and
// log level are its own; its results say resultType and name the server in _meta, and the
// cacheable ones carry ttlMs and cacheScope. A connection serves both eras at once, deciding per
// message (dual-era): a stdio connection or a legacy HTTP session may be initialized and still
// take modern requests, and the engine's stateless connection serves the modern requests of
// every HTTP client.

// modernReq is the era of the message the connection actor is handling: nil for a legacy
// message, else the request's envelope and how its results are annotated.
type modernReq struct {
	env *protocol.Envelope
	// private: the request was authenticated, so cacheable results are scoped to its
	// authorization context.
	private bool
	// toolsets are the toolsets the request narrowed its view to (nil for none), which its
	// cacheable results name in their _meta.
	toolsets []string
}

// annotation returns what the revision of the request being handled makes of its results: for
// a modern request, resultType and serverInfo, and the cache hints when cacheable; for a legacy
// one, the shape of the session's revision (nil for 2025-11-25, whose results are as encoded).
func (c *connectionActor) annotation(cacheable bool) *protocol.Annotation {
	if c.modern == nil {
		return protocol.LegacyAnnotation(c.version)
	}
	return c.eng.modernAnnotation(c.modern, cacheable)
}

// modernAnnotation returns how a result of the modern request m is annotated.
func (e *Engine) modernAnnotation(m *modernReq, cacheable bool) *protocol.Annotation {
	if !cacheable {
		return e.plainAnn
	}
	a := &protocol.Annotation{Meta: e.serverMeta,
		Cache: &protocol.CacheHint{TTLMs: e.cfg.CacheTTL.Milliseconds(), Scope: protocol.CachePublic}}
	if m.toolsets != nil {
		// What the view was narrowed to: a list, a read or discover says so.
		a.Meta = append(append(append([]byte(nil), e.serverMeta...), ','), tags.Meta(tags.MetaToolsets, m.toolsets)...)
	}
	if m.private {
		a.Cache.Scope = protocol.CachePrivate
	}
	return a
}

// discover answers server/discover: the versions served, the capabilities and instructions.
func (c *connectionActor) discover(m *protocol.Message, s Stream) {
	c.cacheableResult(s, m.ID, &protocol.DiscoverResult{
		SupportedVersions: protocol.ServedVersions,
		Capabilities:      c.eng.modernCapabilities(),
		Instructions:      c.eng.cfg.Instructions,
	})
}

// cacheableResult answers with a result a modern client may cache (a list, a read, discover).
func (c *connectionActor) cacheableResult(s Stream, id protocol.ID, v any) {
	c.resultWith(s, id, v, c.annotation(true))
}

// classify classifies a request on the transport's goroutine: a request whose params carry
// the envelope, or whose method exists only in the modern revision, is modern, and its envelope
// is read here (or the error that answers it).
func (in *inbound) classify() {
	m := in.msg
	if !m.IsRequest() || in.modern {
		return
	}
	if protocol.HasEnvelope(m.Params) || protocol.IsModernOnlyMethod(m.Method) {
		in.modern = true
		in.env, in.envErr = m.Envelope()
	}
}

// capabilityError is the answer of a modern call whose handler needs a client capability the
// request did not declare: -32021 naming it.
func capabilityError(id protocol.ID, required json.RawMessage) []byte {
	return protocol.EncodeError(id, protocol.ErrMissingCapability(required))
}
