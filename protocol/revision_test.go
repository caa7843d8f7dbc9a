package protocol_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestRevisionOf(t *testing.T) {
	for _, v := range protocol.ServedVersions {
		if got := protocol.RevisionOf(v).String(); got != v {
			t.Errorf("RevisionOf(%q).String() = %q", v, got)
		}
	}
	for _, v := range []string{"", "2024-10-07", "latest"} {
		if r := protocol.RevisionOf(v); r != 0 {
			t.Errorf("RevisionOf(%q) = %v, want 0", v, r)
		}
	}
}

func TestRevisionHas(t *testing.T) {
	tests := []struct {
		give protocol.Feature
		want []string // the versions that have it
	}{
		{protocol.FeatureBatches, []string{"2025-03-26"}},
		{protocol.FeatureAudio, []string{"2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}},
		{protocol.FeatureStructuredOutput, []string{"2025-06-18", "2025-11-25", "2026-07-28"}},
		{protocol.FeatureIcons, []string{"2025-11-25", "2026-07-28"}},
	}
	for _, tt := range tests {
		var got []string
		for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
			if protocol.RevisionOf(v).Has(tt.give) {
				got = append(got, v)
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("feature %d: in %v, want %v", tt.give, got, tt.want)
		}
	}
	if protocol.Revision(0).Has(protocol.FeatureAudio) {
		t.Error("the zero Revision has a feature")
	}
}

// shaped encodes v as the result of a request of a session in version.
func shaped(t *testing.T, version string, v any) string {
	t.Helper()
	frame, err := protocol.EncodeResultWith(protocol.NewIntID(1), v, protocol.LegacyAnnotation(version))
	if err != nil {
		t.Fatalf("%s: %v", version, err)
	}
	var m struct{ Result json.RawMessage }
	if err := json.Unmarshal(frame, &m); err != nil {
		t.Fatal(err)
	}
	return string(m.Result)
}

func TestShapeTools(t *testing.T) {
	yes := true
	give := &protocol.ListToolsResult{Tools: []protocol.Tool{{
		Name: "t", Title: "T", Description: "d",
		InputSchema:  json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations:  &protocol.ToolAnnotations{ReadOnlyHint: &yes},
		Icons:        []protocol.Icon{{Src: "https://example.com/i.png"}},
		Meta:         json.RawMessage(`{"k":1}`),
	}}}
	tests := []struct{ version, want string }{
		{"2024-11-05", `{"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"}}]}`},
		{"2025-03-26", `{"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"annotations":{"title":"T","readOnlyHint":true}}]}`},
		{"2025-06-18", `{"tools":[{"name":"t","title":"T","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"k":1}}]}`},
		{"2025-11-25", `{"tools":[{"name":"t","title":"T","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"icons":[{"src":"https://example.com/i.png"}],"_meta":{"k":1}}]}`},
	}
	for _, tt := range tests {
		if got := shaped(t, tt.version, give); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.version, got, tt.want)
		}
	}
	if give.Tools[0].Title != "T" || give.Tools[0].Annotations.Title != "" || give.Tools[0].OutputSchema == nil {
		t.Errorf("Shape changed its input: %+v", give.Tools[0])
	}
}

func TestShapeCallToolResult(t *testing.T) {
	give := &protocol.CallToolResult{
		Content: []protocol.Content{
			{Type: protocol.ContentText, Text: "hi", Annotations: json.RawMessage(`{"priority":1,"lastModified":"2025-01-01T00:00:00Z"}`), Meta: json.RawMessage(`{"k":1}`)},
			{Type: protocol.ContentAudio, Data: "AA==", MimeType: "audio/wav"},
			{Type: protocol.ContentResourceLink, URI: "file:///a.txt", Name: "a"},
		},
		StructuredContent: json.RawMessage(`{"n":1}`),
	}
	tests := []struct{ version, want string }{
		{"2024-11-05", `{"content":[{"type":"text","text":"hi","annotations":{"priority":1}},{"type":"text","text":"file:///a.txt"}]}`},
		{"2025-03-26", `{"content":[{"type":"text","text":"hi","annotations":{"priority":1}},{"type":"audio","data":"AA==","mimeType":"audio/wav"},{"type":"text","text":"file:///a.txt"}]}`},
		{"2025-06-18", `{"content":[{"type":"text","text":"hi","annotations":{"priority":1,"lastModified":"2025-01-01T00:00:00Z"},"_meta":{"k":1}},{"type":"audio","data":"AA==","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///a.txt","name":"a"}],"structuredContent":{"n":1}}`},
	}
	for _, tt := range tests {
		if got := shaped(t, tt.version, give); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.version, got, tt.want)
		}
	}
	// Structured content alone: its serialized JSON becomes the text, as 2025-06-18 advises.
	only := &protocol.CallToolResult{StructuredContent: json.RawMessage(`{ "n": 1 }`)}
	if got, want := shaped(t, "2025-03-26", only), `{"content":[{"type":"text","text":"{\"n\":1}"}]}`; got != want {
		t.Errorf("structured only:\n got %s\nwant %s", got, want)
	}
}

func TestShapeInitializeAndLists(t *testing.T) {
	init := &protocol.InitializeResult{
		ProtocolVersion: "2024-11-05",
		Capabilities:    protocol.ServerCapabilities{Tools: &protocol.ListChangedCapability{}, Completions: &struct{}{}},
		ServerInfo:      protocol.Implementation{Name: "s", Title: "S", Version: "1"},
	}
	if got, want := shaped(t, "2024-11-05", init), `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`; got != want {
		t.Errorf("initialize:\n got %s\nwant %s", got, want)
	}
	prompts := &protocol.ListPromptsResult{Prompts: []protocol.Prompt{{Name: "p", Title: "P", Arguments: []protocol.PromptArgument{{Name: "a", Title: "A"}}}}}
	if got, want := shaped(t, "2025-03-26", prompts), `{"prompts":[{"name":"p","arguments":[{"name":"a"}]}]}`; got != want {
		t.Errorf("prompts:\n got %s\nwant %s", got, want)
	}
	if prompts.Prompts[0].Arguments[0].Title != "A" {
		t.Error("Shape changed a prompt argument")
	}
	res := &protocol.ListResourcesResult{Resources: []protocol.Resource{{URI: "a:b", Name: "n", Title: "N",
		Annotations: &protocol.Annotations{LastModified: "2025-01-01T00:00:00Z", Audience: []string{"user"}}}}}
	if got, want := shaped(t, "2025-03-26", res), `{"resources":[{"uri":"a:b","name":"n","annotations":{"audience":["user"]}}]}`; got != want {
		t.Errorf("resources:\n got %s\nwant %s", got, want)
	}
	msgs := &protocol.GetPromptResult{Messages: []protocol.PromptMessage{
		{Role: "user", Content: protocol.Content{Type: protocol.ContentAudio, Data: "AA==", MimeType: "audio/wav"}},
		{Role: "user", Content: protocol.TextContent("x")},
	}}
	if got, want := shaped(t, "2024-11-05", msgs), `{"messages":[{"role":"user","content":{"type":"text","text":"x"}}]}`; got != want {
		t.Errorf("prompt messages:\n got %s\nwant %s", got, want)
	}
}

func TestRevisionClientCapabilities(t *testing.T) {
	caps := protocol.ParseClientCapabilities(json.RawMessage(`{"sampling":{"tools":{}},"elicitation":{"url":{}},"roots":{}}`))
	tests := []struct {
		version            string
		elicit, url, tools bool
	}{
		{"2024-11-05", false, false, false},
		{"2025-03-26", false, false, false},
		{"2025-06-18", true, false, false},
		{"2025-11-25", false, true, true},
	}
	for _, tt := range tests {
		got := protocol.RevisionOf(tt.version).ClientCapabilities(caps)
		if got.HasElicitationForm() != tt.elicit || got.HasElicitationURL() != tt.url || got.HasSamplingTools() != tt.tools || !got.HasRoots() || !got.HasSampling() {
			t.Errorf("%s: form %v, url %v, sampling.tools %v, roots %v, sampling %v", tt.version,
				got.HasElicitationForm(), got.HasElicitationURL(), got.HasSamplingTools(), got.HasRoots(), got.HasSampling())
		}
	}
}

func TestDecodeInput(t *testing.T) {
	m, batch, werr := protocol.DecodeInput([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if werr != nil || batch != nil || m.Method != "ping" {
		t.Fatalf("a message: %v %v %v", m, batch, werr)
	}
	_, batch, werr = protocol.DecodeInput([]byte(` [{"jsonrpc":"2.0","id":1,"method":"ping"}, 7 ,{"jsonrpc":"2.0","id":"x","method":5},{"jsonrpc":"2.0","method":"n"}] `))
	if werr != nil || len(batch) != 4 {
		t.Fatalf("a batch: %v %v", batch, werr)
	}
	if batch[0].Msg.Method != "ping" || batch[1].Err == nil || batch[2].Err == nil || batch[2].Msg.ID.String() != `"x"` || !batch[3].Msg.IsNotification() {
		t.Errorf("items: %+v", batch)
	}
	if _, batch, werr = protocol.DecodeInput([]byte(`[]`)); werr != nil || batch == nil || len(batch) != 0 {
		t.Errorf("empty batch: %v %v", batch, werr)
	}
	if _, _, werr = protocol.DecodeInput([]byte(`[{"jsonrpc":"2.0"`)); werr == nil || werr.Code != protocol.CodeParseError {
		t.Errorf("truncated batch: %v", werr)
	}
	if got, want := string(protocol.EncodeBatch([][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)})), `[{"a":1},{"b":2}]`; got != want {
		t.Errorf("EncodeBatch = %s, want %s", got, want)
	}
}

func TestShapeRequestElicitation(t *testing.T) {
	tests := []struct {
		version, give, want, err string
	}{
		// 2025-06-18 has no mode, nor URL mode's members; the others keep their order and spelling.
		{"2025-06-18", `{"mode":"form","message":"ok?","requestedSchema":{"type":"object"}}`, `{"message":"ok?","requestedSchema":{"type":"object"}}`, ""},
		{"2025-06-18", `{ "message" : "ok?", "\u006dode":"form", "_meta":{"mode":1} }`, `{"message":"ok?","_meta":{"mode":1}}`, ""},
		{"2025-06-18", `{"message":"ok?","requestedSchema":{"type":"object"}}`, `{"message":"ok?","requestedSchema":{"type":"object"}}`, ""},
		{"2025-06-18", `{"mode":"url","message":"Sign in","url":"https://example.com","elicitationId":"e1"}`, "",
			"elicitation/create: url-mode elicitation, which MCP 2025-06-18, the session's revision, does not have"},
		{"2024-11-05", `{"mode":"form","message":"ok?"}`, `{"message":"ok?"}`, ""},
		// From 2025-11-25 the request is sent as it is.
		{"2025-11-25", `{"mode":"form","message":"ok?"}`, `{"mode":"form","message":"ok?"}`, ""},
		{"2026-07-28", `{"mode":"url","message":"Sign in","url":"https://example.com","elicitationId":"e1"}`, `{"mode":"url","message":"Sign in","url":"https://example.com","elicitationId":"e1"}`, ""},
	}
	for _, tt := range tests {
		got, err := protocol.RevisionOf(tt.version).ShapeRequest(protocol.MethodElicitationCreate, json.RawMessage(tt.give))
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s %s: %s, %v; want the error %q", tt.version, tt.give, got, err, tt.err)
			}
		case err != nil || string(got) != tt.want:
			t.Errorf("%s %s:\n got %s, %v\nwant %s", tt.version, tt.give, got, err, tt.want)
		}
	}
	// Other methods are not touched.
	const roots = `{"mode":"form"}`
	if got, err := protocol.RevisionOf("2025-06-18").ShapeRequest(protocol.MethodRootsList, json.RawMessage(roots)); err != nil || string(got) != roots {
		t.Errorf("roots/list: %s, %v", got, err)
	}
}

func TestShapeRequestSampling(t *testing.T) {
	const (
		text  = `{"role":"user","content":{"type":"text","text":"hi"}}`
		audio = `{"role":"user","content":{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}}`
		array = `{"role":"user","content":[{"type":"text","text":"hi"}]}`
		use   = `{"role":"assistant","content":{"type":"tool_use","id":"u1","name":"f","input":{}}}`
	)
	params := func(msgs ...string) string {
		out := `{"messages":[`
		for i, m := range msgs {
			if i > 0 {
				out += ","
			}
			out += m
		}
		return out + `],"maxTokens":10}`
	}
	refused := func(i int, what, version string) string {
		return "sampling/createMessage: messages[" + string(rune('0'+i)) + "] has " + what + ", which MCP " + version + ", the session's revision, does not have"
	}
	tests := []struct {
		version, give, err string
	}{
		{"2024-11-05", params(text), ""},
		{"2024-11-05", params(text, audio), refused(1, "audio content", "2024-11-05")},
		{"2025-03-26", params(text, audio), ""},
		{"2025-06-18", params(array), refused(0, "an array of content blocks", "2025-06-18")},
		{"2025-06-18", params(text, use), refused(1, "tool_use content", "2025-06-18")},
		{"2025-11-25", params(audio, array, use), ""},
		{"2026-07-28", params(audio, array, use), ""},
	}
	for _, tt := range tests {
		got, err := protocol.RevisionOf(tt.version).ShapeRequest(protocol.MethodSamplingCreateMessage, json.RawMessage(tt.give))
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s %s: %v, want the error %q", tt.version, tt.give, err, tt.err)
			}
		case err != nil || string(got) != tt.give:
			t.Errorf("%s %s: %s, %v; want it as it is", tt.version, tt.give, got, err)
		}
	}
}
