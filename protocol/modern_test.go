package protocol_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

const env = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`

func TestReadEnvelope(t *testing.T) {
	tests := []struct {
		give      string
		wantErr   string // a substring of the -32602 message; "" for success
		wantVer   string
		wantLevel string
		wantInfo  string
		wantSamp  bool
	}{
		{give: `{"_meta":{` + env + `}}`, wantVer: "2026-07-28"},
		{give: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}`, wantVer: "v999.0.0", wantSamp: true},
		{give: `{"_meta":{` + env + `,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"warning"}}`, wantVer: "2026-07-28", wantLevel: "warning", wantInfo: "c"},
		{give: ``, wantErr: "needs params with _meta"},
		{give: `null`, wantErr: "needs params with _meta"},
		{give: `[]`, wantErr: "params must be an object"},
		{give: `{}`, wantErr: "params._meta must be an object"},
		{give: `{"_meta":null}`, wantErr: "params._meta must be an object"},
		{give: `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`, wantErr: "protocolVersion must be a non-empty string"},
		{give: `{"_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}}`, wantErr: "protocolVersion must be a non-empty string"},
		{give: `{"_meta":{"io.modelcontextprotocol/protocolVersion":""}}`, wantErr: "protocolVersion must be a non-empty string"},
		{give: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, wantErr: "clientCapabilities must be an object"},
		{give: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`, wantErr: "clientCapabilities must be an object"},
		{give: `{"_meta":{` + env + `,"io.modelcontextprotocol/clientInfo":"me"}}`, wantErr: "clientInfo must be an object"},
		{give: `{"_meta":{` + env + `,"io.modelcontextprotocol/clientInfo":{"name":7}}}`, wantErr: "clientInfo must be an object"},
		{give: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"a\u0062","io.modelcontextprotocol/clientCapabilities":{ }}}`, wantVer: "ab"},
		{give: `{"_meta":{` + env + `,"io.modelcontextprotocol/logLevel":"loud"}}`, wantErr: `invalid log level "loud"`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			e, werr := protocol.ReadEnvelope(json.RawMessage(tt.give))
			if tt.wantErr != "" {
				if werr == nil || werr.Code != protocol.CodeInvalidParams || !strings.Contains(werr.Message, tt.wantErr) {
					t.Fatalf("ReadEnvelope(%s) = %v, want -32602 containing %q", tt.give, werr, tt.wantErr)
				}
				return
			}
			if werr != nil {
				t.Fatalf("ReadEnvelope(%s): %v", tt.give, werr)
			}
			if e.ProtocolVersion != tt.wantVer || e.LogLevel != tt.wantLevel || e.Capabilities.HasSampling() != tt.wantSamp {
				t.Errorf("got version %q level %q sampling %v", e.ProtocolVersion, e.LogLevel, e.Capabilities.HasSampling())
			}
			if (e.ClientInfo == nil) != (tt.wantInfo == "") || (e.ClientInfo != nil && e.ClientInfo.Name != tt.wantInfo) {
				t.Errorf("clientInfo = %+v, want name %q", e.ClientInfo, tt.wantInfo)
			}
		})
	}
}

func TestHasEnvelope(t *testing.T) {
	if !protocol.HasEnvelope(json.RawMessage(`{"_meta":{` + env + `}}`)) {
		t.Error("modern params not recognised")
	}
	if protocol.HasEnvelope(json.RawMessage(`{"name":"echo","_meta":{"progressToken":1}}`)) {
		t.Error("legacy params taken for modern")
	}
}

func TestCheckVersion(t *testing.T) {
	if werr := (&protocol.Envelope{ProtocolVersion: "2026-07-28"}).CheckVersion(); werr != nil {
		t.Fatalf("2026-07-28: %v", werr)
	}
	for _, v := range []string{"v999.0.0", "2025-11-25"} {
		werr := (&protocol.Envelope{ProtocolVersion: v}).CheckVersion()
		if werr == nil || werr.Code != protocol.CodeUnsupportedProtocolVersion {
			t.Fatalf("%s: %v, want -32022", v, werr)
		}
		want := `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"` + v + `"}`
		if string(werr.Data) != want {
			t.Errorf("%s: data %s, want %s", v, werr.Data, want)
		}
	}
}

func TestErrMissingCapability(t *testing.T) {
	frame := protocol.EncodeError(protocol.NewIntID(3), protocol.ErrMissingCapability(json.RawMessage(`{"sampling":{}}`)))
	want := `{"jsonrpc":"2.0","id":3,"error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"sampling":{}}}}}`
	if string(frame) != want {
		t.Errorf("got  %s\nwant %s", frame, want)
	}
}

func TestEncodeResultWith(t *testing.T) {
	meta := protocol.MetaMembers(protocol.Implementation{Name: "s", Version: "1"})
	si := `"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}`
	tests := []struct {
		name string
		give any
		ann  *protocol.Annotation
		want string
	}{
		{"legacy", json.RawMessage(`{}`), nil, `{}`},
		{"empty", json.RawMessage(`{}`), &protocol.Annotation{Meta: meta}, `{"resultType":"complete","_meta":{` + si + `}}`},
		{"members", &protocol.ListToolsResult{}, &protocol.Annotation{Cache: &protocol.CacheHint{}, Meta: meta},
			`{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[],"_meta":{` + si + `}}`},
		{"private", json.RawMessage(`{"a":1}`), &protocol.Annotation{Cache: &protocol.CacheHint{TTLMs: 5, Scope: protocol.CachePrivate}},
			`{"resultType":"complete","ttlMs":5,"cacheScope":"private","a":1}`},
		{"merge", &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("x")}, Meta: json.RawMessage(`{"k":"v"}`)}, &protocol.Annotation{Meta: meta},
			`{"resultType":"complete","content":[{"type":"text","text":"x"}],"_meta":{` + si + `,"k":"v"}}`},
		{"merge empty meta", json.RawMessage(`{"_meta":{},"z":true}`), &protocol.Annotation{Meta: meta},
			`{"resultType":"complete","_meta":{` + si + `},"z":true}`},
		{"input required", &protocol.InputRequiredResult{RequestState: "s"}, &protocol.Annotation{ResultType: protocol.ResultInputRequired, Meta: meta},
			`{"resultType":"input_required","requestState":"s","_meta":{` + si + `}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame, err := protocol.EncodeResultWith(protocol.NewStringID("a"), tt.give, tt.ann)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"jsonrpc":"2.0","id":"a","result":` + tt.want + `}`
			if string(frame) != want {
				t.Errorf("got  %s\nwant %s", frame, want)
			}
			if !json.Valid(frame) {
				t.Errorf("invalid JSON: %s", frame)
			}
		})
	}
	if _, err := protocol.EncodeResultWith(protocol.NewIntID(1), json.RawMessage(`[1]`), &protocol.Annotation{}); err == nil {
		t.Error("an array result was annotated")
	}
}

func TestReadInputResponses(t *testing.T) {
	for _, tt := range []struct {
		give    string
		wantErr string
		wantN   int
	}{
		{give: ``},
		{give: `{}`},
		{give: `{"a":{"action":"accept"},"b":{"roots":[]}}`, wantN: 2},
		{give: `null`, wantErr: "inputResponses must be an object"},
		{give: `[]`, wantErr: "inputResponses must be an object"},
		{give: `{"user_name":12345}`, wantErr: `inputResponses["user_name"] must be a result object`},
		{give: `{"a":null}`, wantErr: `inputResponses["a"] must be a result object`},
	} {
		m, werr := protocol.ReadInputResponses(json.RawMessage(tt.give))
		switch {
		case tt.wantErr != "" && (werr == nil || !strings.Contains(werr.Message, tt.wantErr)):
			t.Errorf("%s: %v, want error %q", tt.give, werr, tt.wantErr)
		case tt.wantErr == "" && (werr != nil || len(m) != tt.wantN):
			t.Errorf("%s: %d responses, %v; want %d", tt.give, len(m), werr, tt.wantN)
		}
	}
}

func TestSubscriptionMeta(t *testing.T) {
	if got := string(protocol.SubscriptionMeta(protocol.NewStringID("L1"))); got != `{"io.modelcontextprotocol/subscriptionId":"L1"}` {
		t.Errorf("got %s", got)
	}
	if got := string(protocol.SubscriptionMeta(protocol.NewIntID(7))); got != `{"io.modelcontextprotocol/subscriptionId":7}` {
		t.Errorf("got %s", got)
	}
}

func BenchmarkReadEnvelope(b *testing.B) {
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello, world"},"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, werr := protocol.ReadEnvelope(params); werr != nil {
			b.Fatal(werr)
		}
	}
}

// BenchmarkReadEnvelopeCapabilities reads the envelope of a client that declares capabilities,
// as the TypeScript client does on every request.
func BenchmarkReadEnvelopeCapabilities(b *testing.B) {
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello, world"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}},"sampling":{"tools":{}},"roots":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, werr := protocol.ReadEnvelope(params); werr != nil {
			b.Fatal(werr)
		}
	}
}

// TestEnvelopeCapabilitiesShared: requests that send the same capabilities object share what
// was decoded from it; a different object decodes to its own capabilities; the objects kept are
// bounded, and past the bound every object is still decoded correctly.
func TestEnvelopeCapabilitiesShared(t *testing.T) {
	read := func(caps string) *protocol.ClientCapabilities {
		t.Helper()
		env, werr := protocol.ReadEnvelope(json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}`))
		if werr != nil {
			t.Fatalf("%s: %v", caps, werr)
		}
		return env.Capabilities
	}
	a, b := read(`{"elicitation":{"form":{}},"sampling":{}}`), read(`{"elicitation":{"form":{}},"sampling":{}}`)
	if a != b {
		t.Error("the same capabilities object decoded twice")
	}
	if string(a.Elicitation) != `{"form":{}}` || string(a.Sampling) != `{}` || a.Roots != nil {
		t.Errorf("decoded %+v", a)
	}
	c := read(`{"roots":{}}`)
	if c == a || string(c.Roots) != `{}` || c.Elicitation != nil {
		t.Errorf("another object: %+v (shared: %v)", c, c == a)
	}
	if e1, e2 := read(`{}`), read(`{ }`); e1 != e2 || e1.Roots != nil || e1.Extensions != nil {
		t.Errorf("empty objects: %+v %+v", e1, e2)
	}
	for i := range protocol.CapabilitiesCacheMax + 10 {
		ext := fmt.Sprintf(`{"extensions":{"x-%d":{}}}`, i)
		if got := read(ext); string(got.Extensions) != fmt.Sprintf(`{"x-%d":{}}`, i) {
			t.Fatalf("object %d decoded %s", i, got.Extensions)
		}
	}
	if n := protocol.CachedCapabilities(); n > protocol.CapabilitiesCacheMax {
		t.Errorf("%d objects kept, bound %d", n, protocol.CapabilitiesCacheMax)
	}
}
