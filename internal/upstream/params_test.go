package upstream

import (
	"encoding/json"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

// A request to the upstream, encoded in one pass: the envelope, then params with the caller's
// members, then _meta with the progress token, the caller's _meta members and, in the modern
// era, the envelope of the era; on one line.
func TestRequestFrame(t *testing.T) {
	u := &Upstream{cfg: Config{ClientInfo: protocol.Implementation{Name: "gw", Version: "1"}}}
	u.info, _ = json.Marshal(u.cfg.ClientInfo)
	id := protocol.NewIntID(7)
	for _, c := range []struct {
		name         string
		modern       bool
		params, meta string
		progress     bool
		caps         *protocol.ClientCapabilities
		level, want  string
	}{
		{name: "plain", params: `{"name":"echo","arguments":{}}`, want: `{"name":"echo","arguments":{}}`},
		{name: "none", want: ``},
		{name: "progress", params: `{"name":"x"}`, progress: true, want: `{"name":"x","_meta":{"progressToken":7}}`},
		{name: "meta", params: ` { "a" : 1 } `, meta: `{"trace":"t"}`, want: `{"a" : 1,"_meta":{"trace":"t"}}`},
		{name: "empty params", params: `{}`, meta: `{"k":true}`, progress: true, want: `{"_meta":{"progressToken":7,"k":true}}`},
		{name: "modern", modern: true, params: `{"uri":"u"}`, caps: &protocol.ClientCapabilities{Sampling: json.RawMessage(`{}`)}, level: "info",
			want: `{"uri":"u","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"gw","version":"1"},"io.modelcontextprotocol/logLevel":"info"}}`},
		{name: "line breaks", params: "{\"name\":\"x\",\n\"arguments\":{\"t\":\"a\\nb\"}\r\n}", meta: `{"k":1}`,
			want: `{"name":"x","arguments":{"t":"a\nb"},"_meta":{"k":1}}`},
		{name: "modern, nothing", modern: true,
			want: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"gw","version":"1"}}}`},
	} {
		var params, meta json.RawMessage
		if c.params != "" {
			params = json.RawMessage(c.params)
		}
		if c.meta != "" {
			meta = json.RawMessage(c.meta)
		}
		want := `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`
		if c.want != "" {
			want = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + c.want + `}`
		}
		frame := u.requestFrame(id, "tools/call", params, nil, meta, c.progress, c.caps, c.level, c.modern)
		if cap(frame) == len(frame) {
			t.Errorf("%s: no room for the line's end (len %d)", c.name, len(frame))
		}
		got := string(frame)
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: invalid JSON %s", c.name, got)
		}
	}
}
