package protocol_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestMCPMarshal(t *testing.T) {
	tests := []struct {
		name string
		give any
		want string
	}{
		{"text_empty", protocol.TextContent(""), `{"type":"text","text":""}`},
		{"text_annotated", protocol.Content{Type: "text", Text: "hi", Annotations: json.RawMessage(`{"audience":["user"]}`)}, `{"type":"text","text":"hi","annotations":{"audience":["user"]}}`},
		{"image", protocol.Content{Type: "image", Data: "AAA=", MimeType: "image/png"}, `{"type":"image","data":"AAA=","mimeType":"image/png"}`},
		{"other_type_fields_dropped", protocol.Content{Type: "text", Text: "t", URI: "x", Data: "y"}, `{"type":"text","text":"t"}`},
		{"unknown_type", protocol.Content{Type: "future", Text: "t", Meta: json.RawMessage(`{}`)}, `{"type":"future","text":"t","_meta":{}}`},
		{"audio_empty", protocol.Content{Type: "audio"}, `{"type":"audio","data":"","mimeType":""}`},
		{"resource_link", protocol.Content{Type: "resource_link", URI: "file:///a", Name: "a", MimeType: "text/plain"}, `{"type":"resource_link","uri":"file:///a","name":"a","mimeType":"text/plain"}`},
		{"resource_text", protocol.Content{Type: "resource", Resource: &protocol.ResourceContents{URI: "test://r"}}, `{"type":"resource","resource":{"uri":"test://r","text":""}}`},
		{"resource_blob", protocol.Content{Type: "resource", Resource: &protocol.ResourceContents{URI: "test://r", MimeType: "image/png", Blob: "AA=="}}, `{"type":"resource","resource":{"uri":"test://r","mimeType":"image/png","blob":"AA=="}}`},
		{"resource_nil", protocol.Content{Type: "resource"}, `{"type":"resource","resource":null}`},
		{"call_result_nil_content", protocol.CallToolResult{}, `{"content":[]}`},
		{"call_result_pointer", &protocol.CallToolResult{IsError: true, Content: []protocol.Content{protocol.TextContent("Tool execution failed")}}, `{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}`},
		{"call_result_structured", protocol.CallToolResult{Content: []protocol.Content{}, StructuredContent: json.RawMessage(`{"n":1}`), Meta: json.RawMessage(`{"k":"v"}`)}, `{"content":[],"structuredContent":{"n":1},"_meta":{"k":"v"}}`},
		{"list_tools_nil", protocol.ListToolsResult{}, `{"tools":[]}`},
		{"tool_default_schema", protocol.Tool{Name: "t", Description: "d"}, `{"name":"t","description":"d","inputSchema":{"type":"object","additionalProperties":false}}`},
		{"tool_full", protocol.Tool{Name: "t", Title: "T", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &protocol.ToolAnnotations{ReadOnlyHint: ptr(false), OpenWorldHint: ptr(true)}, Meta: json.RawMessage(`{}`)}, `{"name":"t","title":"T","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"openWorldHint":true},"_meta":{}}`},
		{"list_tools_cursor", protocol.ListToolsResult{Tools: []protocol.Tool{{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}}, NextCursor: "c1"}, `{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"c1"}`},
		{"initialize_result", protocol.InitializeResult{ProtocolVersion: protocol.LatestLegacyVersion, Capabilities: protocol.ServerCapabilities{Tools: &protocol.ListChangedCapability{ListChanged: true}, Logging: &struct{}{}}, ServerInfo: protocol.Implementation{Name: "toolgrain", Version: "0.1.0"}}, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"toolgrain","version":"0.1.0"}}`},
		{"capabilities_empty", protocol.ServerCapabilities{Resources: &protocol.ResourcesCapability{}, Prompts: &protocol.ListChangedCapability{}}, `{"prompts":{},"resources":{}}`},
		{"cancelled_id_zero", protocol.CancelledParams{RequestID: protocol.NewIntID(0)}, `{"requestId":0}`},
		{"progress", protocol.ProgressParams{ProgressToken: json.RawMessage(`"tok"`), Progress: 0}, `{"progressToken":"tok","progress":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.give)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("json.Marshal =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestCancelledParamsUnmarshal(t *testing.T) {
	tests := []struct {
		give    string
		wantID  string
		wantErr bool
	}{
		{`{"requestId":0,"reason":"user"}`, "0", false},
		{`{"requestId":"abc"}`, `"abc"`, false},
		{`{"requestId":` + bigInt + `}`, bigInt, false},
		{`{"reason":"no id"}`, "null", false},
		{`{"requestId":null}`, "null", true},
		{`{"requestId":1.5}`, "null", true},
		{`{"requestId":true}`, "null", true},
		{`{"requestId":{}}`, "null", true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			var p protocol.CancelledParams
			err := json.Unmarshal([]byte(tt.give), &p)
			if (err != nil) != tt.wantErr {
				t.Errorf("error = %v, want error %v", err, tt.wantErr)
			}
			if got := p.RequestID.String(); got != tt.wantID {
				t.Errorf("RequestID = %s, want %s", got, tt.wantID)
			}
		})
	}
}

func TestCallToolParamsUnmarshal(t *testing.T) {
	var p protocol.CallToolParams
	if err := json.Unmarshal([]byte(`{"name":"test_simple_text"}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "test_simple_text" || p.Arguments != nil || p.Meta != nil {
		t.Errorf("got %+v, want name only", p)
	}
}

func TestReadProgressToken(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		want    string // ID.String()
		wantErr string
	}{
		{"absent_params", ``, "null", ""},
		{"no_meta", `{"name":"x"}`, "null", ""},
		{"no_token", `{"_meta":{"other":1}}`, "null", ""},
		{"null_token", `{"_meta":{"progressToken":null}}`, "null", ""},
		{"null_meta", `{"_meta":null}`, "null", ""},
		{"array_params", `[1,2]`, "null", ""},
		{"int_zero", `{"_meta":{"progressToken":0}}`, "0", ""},
		{"big_int", `{"_meta":{"progressToken":` + bigInt + `}}`, bigInt, ""},
		{"string", `{"name":"x","_meta":{"progressToken":"p-1"}}`, `"p-1"`, ""},
		{"float", `{"_meta":{"progressToken":1.5}}`, "null", "progress token must be a string or an integer"},
		{"object", `{"_meta":{"progressToken":{}}}`, "null", "progress token must be a string or an integer"},
		{"meta_string", `{"_meta":"x"}`, "null", "_meta must be an object"},
		{"params_string", `"x"`, "null", "params must be a JSON object"},
		{"params_invalid", `{"_meta":`, "null", "params must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := protocol.ReadProgressToken(json.RawMessage(tt.give))
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("error = %q, want %q", gotErr, tt.wantErr)
			}
			if got := tok.String(); got != tt.want {
				t.Errorf("token = %s, want %s", got, tt.want)
			}
		})
	}
}

// The method names are the wire contract of MCP 2025-11-25.
func TestMethodNames(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{protocol.MethodInitialize, "initialize"},
		{protocol.MethodInitialized, "notifications/initialized"},
		{protocol.MethodPing, "ping"},
		{protocol.MethodToolsList, "tools/list"},
		{protocol.MethodToolsCall, "tools/call"},
		{protocol.MethodCancelled, "notifications/cancelled"},
		{protocol.MethodProgress, "notifications/progress"},
		{protocol.MethodToolsListChanged, "notifications/tools/list_changed"},
	}
	for _, tt := range tests {
		if tt.give != tt.want {
			t.Errorf("method constant = %q, want %q", tt.give, tt.want)
		}
	}
}

// The hand-built encoding of tool results reads back as the same value, and
// EncodeResult writes the same bytes whether given the struct or its JSON.
func TestCallToolResultRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		give protocol.CallToolResult
	}{
		{"empty", protocol.CallToolResult{Content: []protocol.Content{}}},
		{"text", protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("a\n\"b\"\t\u2028\x01é")}}},
		{"all_types", protocol.CallToolResult{
			Content: []protocol.Content{
				{Type: "text", Text: "t", Annotations: json.RawMessage(`{"priority":0.5}`), Meta: json.RawMessage(`{"k":1}`)},
				{Type: "image", Data: "AAA=", MimeType: "image/png"},
				{Type: "audio", Data: "BBB=", MimeType: "audio/wav"},
				{Type: "resource_link", URI: "test://l", Name: "l", Description: "d", MimeType: "text/plain"},
				{Type: "resource", Resource: &protocol.ResourceContents{URI: "test://t", MimeType: "text/plain", Text: "x"}},
				{Type: "resource", Resource: &protocol.ResourceContents{URI: "test://b", Blob: "AA=="}},
			},
			StructuredContent: json.RawMessage(`{"n":1,"s":["a"]}`),
			IsError:           true,
			Meta:              json.RawMessage(`{"m":true}`),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.give)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			var back protocol.CallToolResult
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("json.Unmarshal(%s): %v", b, err)
			}
			if !reflect.DeepEqual(back, tt.give) {
				t.Errorf("round trip\n got %+v\nwant %+v", back, tt.give)
			}
			direct, err := protocol.EncodeResult(protocol.NewIntID(1), tt.give)
			if err != nil {
				t.Fatal(err)
			}
			viaRaw, err := protocol.EncodeResult(protocol.NewIntID(1), json.RawMessage(b))
			if err != nil {
				t.Fatal(err)
			}
			if string(direct) != string(viaRaw) {
				t.Errorf("EncodeResult(struct) = %s\nEncodeResult(raw) = %s", direct, viaRaw)
			}
		})
	}
}

func TestCallToolResultRawFields(t *testing.T) {
	got, err := json.Marshal(protocol.CallToolResult{StructuredContent: json.RawMessage("{\n  \"n\": 1\n}")})
	if want := `{"content":[],"structuredContent":{"n":1}}`; err != nil || string(got) != want {
		t.Errorf("json.Marshal = %s, %v; want %s", got, err, want)
	}
	tests := []struct {
		name string
		give protocol.CallToolResult
	}{
		{"structured", protocol.CallToolResult{StructuredContent: json.RawMessage(`{`)}},
		{"meta", protocol.CallToolResult{Meta: json.RawMessage(`nope`)}},
		{"annotations", protocol.CallToolResult{Content: []protocol.Content{{Type: "text", Annotations: json.RawMessage(`[`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := protocol.EncodeResult(protocol.NewIntID(1), tt.give); err == nil {
				t.Errorf("EncodeResult = %s, want error", got)
			}
			if got, err := json.Marshal(tt.give); err == nil {
				t.Errorf("json.Marshal = %s, want error", got)
			}
		})
	}
}

func TestSurfaceMarshal(t *testing.T) {
	total := 2
	tests := []struct {
		name string
		give any
		want string
	}{
		{"resources_nil", protocol.ListResourcesResult{}, `{"resources":[]}`},
		{"templates_nil", protocol.ListResourceTemplatesResult{}, `{"resourceTemplates":[]}`},
		{"read_nil", protocol.ReadResourceResult{}, `{"contents":[]}`},
		{"prompts_nil", protocol.ListPromptsResult{}, `{"prompts":[]}`},
		{"prompt_get", protocol.GetPromptResult{Messages: []protocol.PromptMessage{{Role: "user", Content: protocol.TextContent("hi")}}}, `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`},
		{"completion_empty", protocol.CompleteResult{}, `{"completion":{"values":[]}}`},
		{"completion", protocol.CompleteResult{Completion: protocol.CompletionValues{Values: []string{"a"}, Total: &total, HasMore: true}}, `{"completion":{"values":["a"],"total":2,"hasMore":true}}`},
		{"log", protocol.LogMessageParams{Level: "info", Data: json.RawMessage(`"x"`)}, `{"level":"info","data":"x"}`},
		{"create_message", protocol.CreateMessageParams{Messages: []protocol.SamplingMessage{{Role: "user", Content: protocol.TextContent("q")}}, MaxTokens: 10}, `{"messages":[{"role":"user","content":{"type":"text","text":"q"}}],"maxTokens":10}`},
		{"elicit", protocol.ElicitParams{Message: "m", RequestedSchema: json.RawMessage(`{"type":"object"}`)}, `{"message":"m","requestedSchema":{"type":"object"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.give)
			if err != nil || string(got) != tt.want {
				t.Errorf("json.Marshal = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestLogSeverity(t *testing.T) {
	for i, l := range protocol.LogLevels {
		if n, ok := protocol.LogSeverity(l); !ok || n != i {
			t.Errorf("LogSeverity(%q) = %d, %v", l, n, ok)
		}
	}
	if _, ok := protocol.LogSeverity("warn"); ok {
		t.Error(`"warn" is not a level`)
	}
}

func TestCreateMessageResultText(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{`{"type":"text","text":"hi"}`, "hi"},
		{`{"type":"image","data":"AA=="}`, ""},
		{`[{"type":"text","text":"hi"}]`, ""},
	}
	for _, tt := range tests {
		r := &protocol.CreateMessageResult{Content: json.RawMessage(tt.give)}
		if got := r.Text(); got != tt.want {
			t.Errorf("Text(%s) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
