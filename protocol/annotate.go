package protocol

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Annotation is what the revision of a request makes of its result, the one place where a
// result's shape is decided. For a modern request it is what the result carries besides its own
// members: resultType (first), the cache hints of a cacheable result (tools/list,
// resources/list, resources/templates/list, prompts/list, resources/read, server/discover), and
// members merged into its _meta (the server's identity). For a legacy session of a revision
// older than [LatestLegacyVersion] it is that revision ([LegacyAnnotation]): the result is
// shaped for it ([Revision.Shape]) and nothing is added. A nil *Annotation changes nothing: the
// results of a session of [LatestLegacyVersion] stay as they are.
type Annotation struct {
	// Legacy, when set, is the revision of a legacy session the result is shaped for; the
	// other fields are then ignored.
	Legacy Revision
	// ResultType is the result's resultType; empty means [ResultComplete].
	ResultType string
	// Cache, when set, adds ttlMs and cacheScope.
	Cache *CacheHint
	// Meta are members, `"key":value` separated by commas with no braces, merged into the
	// result's _meta (created when the result has none). See [MetaMembers].
	Meta []byte
}

// legacyAnnotations are the annotations of the legacy revisions that shape their results.
var legacyAnnotations = func() map[Revision]*Annotation {
	m := make(map[Revision]*Annotation)
	for r := Revision20241105; r < Revision20251125; r++ {
		m[r] = &Annotation{Legacy: r}
	}
	return m
}()

// LegacyAnnotation returns the annotation of the results of a legacy session that negotiated
// version: nil for 2025-11-25 (and for a version not served), whose results are encoded as
// they are, else the one annotation of its revision, shared and never changed.
func LegacyAnnotation(version string) *Annotation { return legacyAnnotations[RevisionOf(version)] }

// Modern reports whether a annotates the result of a modern request: it is not nil and not a
// legacy revision's.
func (a *Annotation) Modern() bool { return a != nil && a.Legacy == 0 }

// CacheHint is the freshness of a cacheable result: TTLMs milliseconds (0: stale at once), for
// the audience Scope ([CachePublic] or [CachePrivate]; empty means public).
type CacheHint struct {
	TTLMs int64
	Scope string
}

// MetaMembers returns the _meta member that names the server, for [Annotation].Meta:
// "io.modelcontextprotocol/serverInfo":{...}.
func MetaMembers(server Implementation) []byte {
	b := append([]byte(nil), '"')
	b = append(b, MetaServerInfo...)
	b = append(b, `":`...)
	raw, _ := marshalPayload(&server) // an Implementation always encodes
	return append(b, raw...)
}

// EncodeResultWith is [EncodeResult] with result as a makes it: with the members of a modern
// result added (result must then encode as a JSON object), or shaped for a legacy revision. A
// nil a is EncodeResult.
func EncodeResultWith(id ID, result any, a *Annotation) ([]byte, error) {
	if a != nil && a.Legacy != 0 {
		return EncodeResult(id, a.Legacy.Shape(result))
	}
	if r := callToolResultOf(result); r != nil && a != nil && !id.IsZero() {
		// The common case, a tools/call result: encoded once into a scratch buffer, then
		// annotated into the frame, rather than framed, then copied into a second frame.
		bp := scratchBuffers.Get().(*[]byte)
		obj, err := r.appendJSON((*bp)[:0])
		defer func() {
			if cap(obj) <= 64<<10 { // a rare large result is not kept
				*bp = obj[:0]
				scratchBuffers.Put(bp)
			}
		}()
		if err != nil {
			return nil, fmt.Errorf("protocol: encode result: %w", err)
		}
		const envelope = len(`{"jsonrpc":"2.0","id":,"result":}`)
		b := make([]byte, 0, envelope+len(id.raw)+len(obj)+64+len(a.Meta))
		b = appendResultPrefix(b, id)
		b = a.appendTo(b, obj)
		return append(b, '}'), nil
	}
	frame, err := EncodeResult(id, result)
	if err != nil || a == nil {
		return frame, err
	}
	start := len(`{"jsonrpc":"2.0","id":`) + len(id.raw) + len(`,"result":`)
	obj := frame[start : len(frame)-1]
	if len(obj) < 2 || obj[0] != '{' {
		return nil, errors.New("protocol: encode result: a modern result must be a JSON object")
	}
	b := make([]byte, 0, len(frame)+64+len(a.Meta))
	b = append(b, frame[:start]...)
	b = a.appendTo(b, obj)
	return append(b, '}'), nil
}

// scratchBuffers hold the encoded results EncodeResultWith annotates.
var scratchBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// callToolResultOf returns result as a *CallToolResult when it is one, or nil.
func callToolResultOf(result any) *CallToolResult {
	switch v := result.(type) {
	case CallToolResult:
		return &v
	case *CallToolResult:
		return v
	}
	return nil
}

// Annotate returns the JSON object obj with the members of a modern annotation a added, as
// [EncodeResultWith] adds them. obj must be a compact JSON object, such as this package's
// encoders produce.
func (a *Annotation) Annotate(obj []byte) ([]byte, error) {
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return nil, fmt.Errorf("protocol: annotate: not a JSON object")
	}
	return a.appendTo(make([]byte, 0, len(obj)+64+len(a.Meta)), obj), nil
}

// appendTo appends obj, a JSON object, with resultType and the cache hints as its first members
// and a.Meta merged into its _meta member (added last when it has none).
func (a *Annotation) appendTo(b, obj []byte) []byte {
	rt := a.ResultType
	if rt == "" {
		rt = ResultComplete
	}
	b = appendField(b, '{', "resultType", rt)
	if c := a.Cache; c != nil {
		b = append(b, `,"ttlMs":`...)
		b = strconv.AppendInt(b, max(c.TTLMs, 0), 10)
		scope := c.Scope
		if scope == "" {
			scope = CachePublic
		}
		b = appendField(b, ',', "cacheScope", scope)
	}
	metaAt, metaEnd := -1, -1 // the value of obj's _meta member, if any
	if len(a.Meta) > 0 {
		metaAt, metaEnd = findMember(obj, "_meta")
	}
	inner := obj[1 : len(obj)-1]
	switch {
	case metaAt >= 0 && obj[metaAt] == '{':
		// Merge: the server's members first, then the result's own.
		if len(inner) > 0 {
			b = append(b, ',')
		}
		b = append(b, obj[1:metaAt+1]...)
		b = append(b, a.Meta...)
		if rest := trimSpace(obj[metaAt+1 : metaEnd-1]); len(rest) > 0 {
			b = append(b, ',')
		}
		b = append(b, obj[metaAt+1:len(obj)-1]...)
	default:
		if len(inner) > 0 {
			b = append(b, ',')
			b = append(b, inner...)
		}
		if len(a.Meta) > 0 && metaAt < 0 {
			b = append(b, `,"_meta":{`...)
			b = append(b, a.Meta...)
			b = append(b, '}')
		}
	}
	return append(b, '}')
}

// findMember returns the bounds of the value of the top-level member name of the JSON object
// obj, or -1, -1. obj must be valid JSON.
func findMember(obj []byte, name string) (int, int) {
	n := len(obj)
	i := skipSpace(obj, 1)
	for i < n && obj[i] == '"' {
		ks := i
		i = skipString(obj, i)
		key := obj[ks:i]
		i = skipSpace(obj, i)
		i = skipSpace(obj, i+1) // ':'
		vs := i
		i = skipValue(obj, i)
		if k := key[1 : len(key)-1]; string(k) == name || escapedEquals(key, name) {
			return vs, i
		}
		i = skipSpace(obj, i)
		if i < n && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return -1, -1
}
