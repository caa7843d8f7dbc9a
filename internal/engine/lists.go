package engine

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/toolgrain/toolgrain/protocol"
)

// Cursors of the lists beyond tools are opaque to clients: base64url of a letter naming the
// list ('r' resources, 'u' resource templates, 'p' prompts) and the offset of the next entry.
// Lists may change between pages; a cursor past the end gives an empty last page.
func encodeListCursor(kind byte, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(string(kind) + strconv.Itoa(offset)))
}

func decodeListCursor(kind byte, cur string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil || len(b) < 2 || b[0] != kind {
		return 0, false
	}
	off, err := strconv.Atoi(string(b[1:]))
	if err != nil || off <= 0 {
		return 0, false
	}
	return off, true
}

// page reads a list request's cursor and returns the bounds of the page to send, the next
// cursor (or ""), or false after answering the request with -32602.
func (c *connectionActor) page(m *protocol.Message, s Stream, kind byte, n int) (start, end int, next string, ok bool) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, &p); err != nil {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("%s params must be an object with an optional string cursor", m.Method)))
			return 0, 0, "", false
		}
	}
	if p.Cursor != "" {
		off, valid := decodeListCursor(kind, p.Cursor)
		if !valid {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("invalid cursor")))
			return 0, 0, "", false
		}
		start = min(off, n)
	}
	end = min(start+c.eng.cfg.PageSize, n)
	if end < n {
		next = encodeListCursor(kind, end)
	}
	return start, end, next, true
}

// serverCapabilities are what every connection is offered: tools, resources (with subscriptions)
// and prompts, each announcing list changes since all three can change at run time, logging,
// and completions.
func serverCapabilities() protocol.ServerCapabilities {
	return protocol.ServerCapabilities{
		Tools:       &protocol.ListChangedCapability{ListChanged: true},
		Prompts:     &protocol.ListChangedCapability{ListChanged: true},
		Resources:   &protocol.ResourcesCapability{Subscribe: true, ListChanged: true},
		Logging:     &struct{}{},
		Completions: &struct{}{},
	}
}

// sessionCapabilities are the capabilities a legacy client declared at initialize, as the
// revision it negotiated (version) defines them: a request that revision does not have is
// refused as undeclared.
func sessionCapabilities(version string, raw json.RawMessage) *protocol.ClientCapabilities {
	return protocol.RevisionOf(version).ClientCapabilities(protocol.ParseClientCapabilities(raw))
}
