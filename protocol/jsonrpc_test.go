package protocol_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgrain/toolgrain/protocol"
)

const bigInt = "123456789012345678901234567890" // 30 digits, beyond int64 and float64

func TestParseID(t *testing.T) {
	tests := []struct {
		give       string
		wantString string
		wantKey    string
	}{
		{"0", "0", "0"},
		{"-1", "-1", "-1"},
		{"42", "42", "42"},
		{"-0", "-0", "0"},
		{bigInt, bigInt, bigInt},
		{"-" + bigInt, "-" + bigInt, "-" + bigInt},
		{`""`, `""`, `"`},
		{`"abc"`, `"abc"`, `"abc`},
		{`"\u0061bc"`, `"\u0061bc"`, `"abc`},
		{`"5"`, `"5"`, `"5`},
		{`"a\"b"`, `"a\"b"`, `"a"b`},
		{`"é"`, `"é"`, `"é`},
		{" \t7\r\n", "7", "7"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			id, err := protocol.ParseID([]byte(tt.give))
			if err != nil {
				t.Fatalf("ParseID(%s): %v", tt.give, err)
			}
			if id.IsZero() {
				t.Errorf("ParseID(%s) is zero", tt.give)
			}
			if got := id.String(); got != tt.wantString {
				t.Errorf("String() = %s, want %s", got, tt.wantString)
			}
			if got := id.Key(); got != tt.wantKey {
				t.Errorf("Key() = %q, want %q", got, tt.wantKey)
			}
			b, err := json.Marshal(id)
			if err != nil || string(b) != tt.wantString {
				t.Errorf("json.Marshal = %s, %v; want %s", b, err, tt.wantString)
			}
		})
	}
}

func TestParseIDRejects(t *testing.T) {
	tests := []struct {
		give    string
		wantErr string
	}{
		{"1.5", "id must be an integer, without fraction or exponent"},
		{"1e3", "id must be an integer, without fraction or exponent"},
		{"1E3", "id must be an integer, without fraction or exponent"},
		{"1.0", "id must be an integer, without fraction or exponent"},
		{"-0.0", "id must be an integer, without fraction or exponent"},
		{"01", "id is not a valid JSON number"},
		{"-", "id is not a valid JSON number"},
		{"+1", "id must be a string or an integer"},
		{"true", "id must be a string or an integer, got a boolean"},
		{"false", "id must be a string or an integer, got a boolean"},
		{"null", "id must not be null"},
		{"{}", "id must be a string or an integer, got an object"},
		{"[]", "id must be a string or an integer, got an array"},
		{"", "id must be a string or an integer, got nothing"},
		{`"abc`, "id is not a valid JSON string"},
		{`"a" "b"`, "id is not a valid JSON string"},
		{"\"\xff\"", "id string is not valid UTF-8"},
		{"abc", "id must be a string or an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			id, err := protocol.ParseID([]byte(tt.give))
			if err == nil {
				t.Fatalf("ParseID(%s) = %s, want error", tt.give, id)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("error = %q, want %q", err, tt.wantErr)
			}
			if !id.IsZero() {
				t.Errorf("id = %s, want zero", id)
			}
			var v struct {
				ID protocol.ID `json:"id"`
			}
			if err := json.Unmarshal([]byte(`{"id":`+tt.give+`}`), &v); err == nil {
				t.Errorf("json.Unmarshal accepted id %s as %s", tt.give, v.ID)
			}
		})
	}
}

func TestIDConstructors(t *testing.T) {
	tests := []struct {
		name       string
		give       protocol.ID
		wantString string
		wantKey    string
	}{
		{"zero", protocol.ID{}, "null", ""},
		{"int_0", protocol.NewIntID(0), "0", "0"},
		{"int_neg", protocol.NewIntID(-7), "-7", "-7"},
		{"string_empty", protocol.NewStringID(""), `""`, `"`},
		{"string", protocol.NewStringID("abc"), `"abc"`, `"abc`},
		{"string_escapes", protocol.NewStringID("a\"\\\n<>"), `"a\"\\\n<>"`, "\"a\"\\\n<>"},
		{"string_invalid_utf8", protocol.NewStringID("a\xffb"), `"a\ufffdb"`, "\"a\ufffdb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.give.String(); got != tt.wantString {
				t.Errorf("String() = %s, want %s", got, tt.wantString)
			}
			if got := tt.give.Key(); got != tt.wantKey {
				t.Errorf("Key() = %q, want %q", got, tt.wantKey)
			}
		})
	}
}

func TestIDKeyIdentity(t *testing.T) {
	tests := []struct {
		name     string
		a, b     string
		wantSame bool
	}{
		{"escaped_string", `"abc"`, `"\u0061bc"`, true},
		{"escaped_slash", `"a/b"`, `"a\/b"`, true},
		{"int_vs_string", `5`, `"5"`, false},
		{"zero_vs_empty", `0`, `""`, false},
		{"minus_zero", `0`, `-0`, true},
		{"different", `"a"`, `"b"`, false},
		{"big_ints", bigInt, bigInt + "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, errA := protocol.ParseID([]byte(tt.a))
			b, errB := protocol.ParseID([]byte(tt.b))
			if errA != nil || errB != nil {
				t.Fatalf("ParseID: %v, %v", errA, errB)
			}
			if got := a.Key() == b.Key(); got != tt.wantSame {
				t.Errorf("Key(%s) == Key(%s) is %v, want %v", tt.a, tt.b, got, tt.wantSame)
			}
		})
	}
	if protocol.NewIntID(5).Key() != mustID(t, "5").Key() || protocol.NewStringID("x").Key() != mustID(t, `"\u0078"`).Key() {
		t.Error("constructed and parsed ids disagree on Key")
	}
}

func mustID(t testing.TB, raw string) protocol.ID {
	t.Helper()
	id, err := protocol.ParseID([]byte(raw))
	if err != nil {
		t.Fatalf("ParseID(%s): %v", raw, err)
	}
	return id
}

type wantMessage struct {
	kind   string // request, notification or response
	id     string // ID.String()
	method string
	params string
	result string
	err    *protocol.WireError
}

func kindOf(m *protocol.Message) string {
	var kinds []string
	if m.IsRequest() {
		kinds = append(kinds, "request")
	}
	if m.IsNotification() {
		kinds = append(kinds, "notification")
	}
	if m.IsResponse() {
		kinds = append(kinds, "response")
	}
	return strings.Join(kinds, "+")
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		give string
		want wantMessage
	}{
		{
			name: "request_int_id_zero",
			give: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
			want: wantMessage{kind: "request", id: "0", method: "initialize", params: `{"protocolVersion":"2025-11-25"}`},
		},
		{
			name: "request_string_id_no_params",
			give: `{"jsonrpc":"2.0","id":"abc","method":"ping"}`,
			want: wantMessage{kind: "request", id: `"abc"`, method: "ping"},
		},
		{
			name: "request_empty_string_id",
			give: `{"jsonrpc":"2.0","id":"","method":"ping"}`,
			want: wantMessage{kind: "request", id: `""`, method: "ping"},
		},
		{
			name: "request_big_id",
			give: `{"jsonrpc":"2.0","id":` + bigInt + `,"method":"tools/list","params":{}}`,
			want: wantMessage{kind: "request", id: bigInt, method: "tools/list", params: `{}`},
		},
		{
			name: "request_params_array",
			give: `{"jsonrpc":"2.0","id":-1,"method":"m","params":[1, 2]}`,
			want: wantMessage{kind: "request", id: "-1", method: "m", params: `[1, 2]`},
		},
		{
			name: "members_in_any_order_with_whitespace",
			give: " {\r\n \"method\" : \"tools/call\" ,\t\"params\": {\"name\":\"x\"}, \"id\": 7, \"jsonrpc\": \"2.0\" } \n",
			want: wantMessage{kind: "request", id: "7", method: "tools/call", params: `{"name":"x"}`},
		},
		{
			name: "escaped_member_names_and_values",
			give: `{"\u006asonrpc":"2\u002e0","\u0069d":"\u0061bc","method":"p\u0069ng"}`,
			want: wantMessage{kind: "request", id: `"\u0061bc"`, method: "ping"},
		},
		{
			name: "unknown_members_ignored",
			give: `{"jsonrpc":"2.0","method":"notifications/initialized","extra":{"id":1,"method":"x"},"ID":3}`,
			want: wantMessage{kind: "notification", id: "null", method: "notifications/initialized"},
		},
		{
			name: "notification_with_params",
			give: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"bye"}}`,
			want: wantMessage{kind: "notification", id: "null", method: "notifications/cancelled", params: `{"requestId":3,"reason":"bye"}`},
		},
		{
			name: "response_result",
			give: `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
			want: wantMessage{kind: "response", id: "1", result: `{"content":[]}`},
		},
		{
			name: "response_null_result",
			give: `{"jsonrpc":"2.0","id":"r","result":null}`,
			want: wantMessage{kind: "response", id: `"r"`, result: `null`},
		},
		{
			name: "response_result_with_null_error",
			give: `{"jsonrpc":"2.0","id":2,"result":{},"error":null}`,
			want: wantMessage{kind: "response", id: "2", result: `{}`},
		},
		{
			name: "response_error_with_data",
			give: `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found: x","data":{"a":1}}}`,
			want: wantMessage{kind: "response", id: "3", err: &protocol.WireError{Code: -32601, Message: "Method not found: x", Data: json.RawMessage(`{"a":1}`)}},
		},
		{
			name: "response_error_null_id",
			give: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
			want: wantMessage{kind: "response", id: "null", err: &protocol.WireError{Code: -32700, Message: "Parse error"}},
		},
		{
			name: "response_error_no_id",
			give: `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"}}`,
			want: wantMessage{kind: "response", id: "null", err: &protocol.WireError{Code: -32600, Message: "Invalid Request"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, werr := protocol.Decode([]byte(tt.give))
			if werr != nil {
				t.Fatalf("Decode: %v", werr)
			}
			assertMessage(t, m, tt.want)
		})
	}
}

func assertMessage(t testing.TB, m *protocol.Message, want wantMessage) {
	t.Helper()
	if got := kindOf(m); got != want.kind {
		t.Errorf("kind = %q, want %q", got, want.kind)
	}
	if got := m.ID.String(); got != want.id {
		t.Errorf("ID = %s, want %s", got, want.id)
	}
	if m.Method != want.method {
		t.Errorf("Method = %q, want %q", m.Method, want.method)
	}
	if string(m.Params) != want.params || (want.params == "") != (m.Params == nil) {
		t.Errorf("Params = %q, want %q", m.Params, want.params)
	}
	if string(m.Result) != want.result || (want.result == "") != (m.Result == nil) {
		t.Errorf("Result = %q, want %q", m.Result, want.result)
	}
	switch {
	case (m.Error == nil) != (want.err == nil):
		t.Errorf("Error = %v, want %v", m.Error, want.err)
	case m.Error != nil && (m.Error.Code != want.err.Code || m.Error.Message != want.err.Message || string(m.Error.Data) != string(want.err.Data)):
		t.Errorf("Error = %+v, want %+v", m.Error, want.err)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name     string
		give     string
		wantCode int64
		wantMsg  string
		wantID   string // ID.String() of the returned message; "" when it must be nil
	}{
		{"empty", "", protocol.CodeParseError, "Parse error: empty message", ""},
		{"blank", " \r\n", protocol.CodeParseError, "Parse error: empty message", ""},
		{"truncated", `{"jsonrpc":"2.0","id":1`, protocol.CodeParseError, "Parse error: invalid JSON at byte offset 23", ""},
		{"garbage", `hello`, protocol.CodeParseError, "Parse error: invalid JSON at byte offset 1", ""},
		{"trailing_data", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, protocol.CodeParseError, "Parse error: invalid JSON at byte offset 42", ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, protocol.CodeInvalidRequest, "Invalid Request: batches are not supported", ""},
		{"empty_batch", `[]`, protocol.CodeInvalidRequest, "Invalid Request: batches are not supported", ""},
		{"string", `"x"`, protocol.CodeInvalidRequest, "Invalid Request: message must be a JSON object", ""},
		{"number", `1`, protocol.CodeInvalidRequest, "Invalid Request: message must be a JSON object", ""},
		{"null", `null`, protocol.CodeInvalidRequest, "Invalid Request: message must be a JSON object", ""},
		{"empty_object", `{}`, protocol.CodeInvalidRequest, `Invalid Request: missing "jsonrpc": "2.0"`, ""},
		{"only_jsonrpc", `{"jsonrpc":"2.0"}`, protocol.CodeInvalidRequest, "Invalid Request: message has no method and no id", ""},
		{"missing_jsonrpc", `{"id":4,"method":"ping"}`, protocol.CodeInvalidRequest, `Invalid Request: missing "jsonrpc": "2.0"`, "4"},
		{"jsonrpc_case", `{"JSONRPC":"2.0","id":"k","method":"ping"}`, protocol.CodeInvalidRequest, `Invalid Request: missing "jsonrpc": "2.0"`, `"k"`},
		{"wrong_jsonrpc", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, protocol.CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`, "3"},
		{"jsonrpc_number", `{"jsonrpc":2.0,"id":0,"method":"ping"}`, protocol.CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`, "0"},
		{"method_number", `{"jsonrpc":"2.0","id":5,"method":1}`, protocol.CodeInvalidRequest, "Invalid Request: method must be a string", "5"},
		{"method_null", `{"jsonrpc":"2.0","id":5,"method":null}`, protocol.CodeInvalidRequest, "Invalid Request: method must be a string", "5"},
		{"method_empty", `{"jsonrpc":"2.0","id":6,"method":""}`, protocol.CodeInvalidRequest, "Invalid Request: method must not be empty", "6"},
		{"params_string", `{"jsonrpc":"2.0","id":7,"method":"x","params":"s"}`, protocol.CodeInvalidRequest, "Invalid Request: params must be an object or an array", "7"},
		{"params_null", `{"jsonrpc":"2.0","id":"p","method":"x","params":null}`, protocol.CodeInvalidRequest, "Invalid Request: params must be an object or an array", `"p"`},
		{"params_number_notification", `{"jsonrpc":"2.0","method":"x","params":1}`, protocol.CodeInvalidRequest, "Invalid Request: params must be an object or an array", ""},
		{"request_with_result", `{"jsonrpc":"2.0","id":11,"method":"x","result":{}}`, protocol.CodeInvalidRequest, "Invalid Request: a request or notification must not have result or error", "11"},
		{"response_both", `{"jsonrpc":"2.0","id":8,"result":{},"error":{"code":1,"message":"m"}}`, protocol.CodeInvalidRequest, "Invalid Request: response has both result and error", "8"},
		{"response_params", `{"jsonrpc":"2.0","id":12,"result":{},"params":{}}`, protocol.CodeInvalidRequest, "Invalid Request: response must not have params", "12"},
		{"response_no_id", `{"jsonrpc":"2.0","result":{}}`, protocol.CodeInvalidRequest, "Invalid Request: response with a result must have an id", ""},
		{"response_null_id", `{"jsonrpc":"2.0","id":null,"result":{}}`, protocol.CodeInvalidRequest, "Invalid Request: response with a result must have an id", ""},
		{"id_only", `{"jsonrpc":"2.0","id":9}`, protocol.CodeInvalidRequest, "Invalid Request: message has no method, result or error", "9"},
		{"id_and_null_error", `{"jsonrpc":"2.0","id":9,"error":null}`, protocol.CodeInvalidRequest, "Invalid Request: message has no method, result or error", "9"},
		{"error_code_string", `{"jsonrpc":"2.0","id":10,"error":{"code":"x","message":"m"}}`, protocol.CodeInvalidRequest, "Invalid Request: error must be an object with an integer code and a string message", "10"},
		{"error_code_float", `{"jsonrpc":"2.0","id":10,"error":{"code":1.5,"message":"m"}}`, protocol.CodeInvalidRequest, "Invalid Request: error must be an object with an integer code and a string message", "10"},
		{"error_no_message", `{"jsonrpc":"2.0","id":10,"error":{"code":1}}`, protocol.CodeInvalidRequest, "Invalid Request: error must be an object with an integer code and a string message", "10"},
		{"error_string", `{"jsonrpc":"2.0","id":10,"error":"boom"}`, protocol.CodeInvalidRequest, "Invalid Request: error must be an object with an integer code and a string message", "10"},
		{"id_float", `{"jsonrpc":"2.0","id":1.5,"method":"x"}`, protocol.CodeInvalidRequest, "Invalid Request: id must be an integer, without fraction or exponent", ""},
		{"id_exponent", `{"jsonrpc":"2.0","id":1e3,"method":"x"}`, protocol.CodeInvalidRequest, "Invalid Request: id must be an integer, without fraction or exponent", ""},
		{"id_bool", `{"jsonrpc":"2.0","id":true,"method":"x"}`, protocol.CodeInvalidRequest, "Invalid Request: id must be a string or an integer, got a boolean", ""},
		{"id_object", `{"jsonrpc":"2.0","id":{},"method":"x"}`, protocol.CodeInvalidRequest, "Invalid Request: id must be a string or an integer, got an object", ""},
		{"id_array", `{"jsonrpc":"2.0","id":[1],"method":"x"}`, protocol.CodeInvalidRequest, "Invalid Request: id must be a string or an integer, got an array", ""},
		{"id_null_request", `{"jsonrpc":"2.0","id":null,"method":"x"}`, protocol.CodeInvalidRequest, "Invalid Request: id must not be null", ""},
		{"id_invalid_utf8", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"x\"}", protocol.CodeInvalidRequest, "Invalid Request: id string is not valid UTF-8", ""},
		{"duplicate_id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`, protocol.CodeInvalidRequest, `Invalid Request: duplicate member "id"`, ""},
		{"duplicate_method", `{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, protocol.CodeInvalidRequest, `Invalid Request: duplicate member "method"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, werr := protocol.Decode([]byte(tt.give))
			if werr == nil {
				t.Fatalf("Decode succeeded: %+v", m)
			}
			if werr.Code != tt.wantCode || werr.Message != tt.wantMsg {
				t.Errorf("error = {%d %q}, want {%d %q}", werr.Code, werr.Message, tt.wantCode, tt.wantMsg)
			}
			gotID := ""
			if m != nil {
				gotID = m.ID.String()
			}
			if gotID != tt.wantID {
				t.Errorf("recovered id = %q, want %q", gotID, tt.wantID)
			}
		})
	}
}

// Decode must not keep the caller's buffer: a LineReader reuses it.
func TestDecodeCopies(t *testing.T) {
	buf := []byte(`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"x"}}`)
	m, werr := protocol.Decode(buf)
	if werr != nil {
		t.Fatal(werr)
	}
	for i := range buf {
		buf[i] = 'X'
	}
	assertMessage(t, m, wantMessage{kind: "request", id: `"abc"`, method: "tools/call", params: `{"name":"x"}`})
}

func TestEncodeResult(t *testing.T) {
	tests := []struct {
		name   string
		id     protocol.ID
		result any
		want   string
	}{
		{"struct", protocol.NewIntID(0), protocol.CallToolResult{}, `{"jsonrpc":"2.0","id":0,"result":{"content":[]}}`},
		{"empty_object", protocol.NewStringID(""), struct{}{}, `{"jsonrpc":"2.0","id":"","result":{}}`},
		{"raw", protocol.NewStringID("abc"), json.RawMessage(`{"a":[1,2]}`), `{"jsonrpc":"2.0","id":"abc","result":{"a":[1,2]}}`},
		{"raw_multiline", protocol.NewIntID(-1), json.RawMessage("{\n  \"a\": \"x y\",\r\n  \"b\": [1, 2]\n}\n"), `{"jsonrpc":"2.0","id":-1,"result":{"a":"x y","b":[1,2]}}`},
		{"raw_pointer", protocol.NewIntID(1), ptr(json.RawMessage(`[]`)), `{"jsonrpc":"2.0","id":1,"result":[]}`},
		{"nil", protocol.NewIntID(2), nil, `{"jsonrpc":"2.0","id":2,"result":null}`},
		{"newline_in_string", protocol.NewIntID(3), protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("a\nb")}}, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a\nb"}]}}`},
		{"big_id", mustID(t, bigInt), map[string]int{"n": 1}, `{"jsonrpc":"2.0","id":` + bigInt + `,"result":{"n":1}}`},
		{"escaped_id_kept", mustID(t, `"\u0061bc"`), struct{}{}, `{"jsonrpc":"2.0","id":"\u0061bc","result":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := protocol.EncodeResult(tt.id, tt.result)
			if err != nil {
				t.Fatalf("EncodeResult: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("EncodeResult =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestEncodeResultErrors(t *testing.T) {
	tests := []struct {
		name   string
		id     protocol.ID
		result any
	}{
		{"zero_id", protocol.ID{}, struct{}{}},
		{"invalid_raw", protocol.NewIntID(1), json.RawMessage(`{"a":`)},
		{"unencodable", protocol.NewIntID(1), make(chan int)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := protocol.EncodeResult(tt.id, tt.result); err == nil {
				t.Errorf("EncodeResult = %s, want error", got)
			}
		})
	}
}

func TestEncodeError(t *testing.T) {
	tests := []struct {
		name string
		id   protocol.ID
		give *protocol.WireError
		want string
	}{
		{"null_id", protocol.ID{}, protocol.ErrParse("empty message"), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: empty message"}}`},
		{"int_id", protocol.NewIntID(0), protocol.ErrMethodNotFound("x"), `{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found: x"}}`},
		{"big_id", mustID(t, bigInt), protocol.ErrInternal(), `{"jsonrpc":"2.0","id":` + bigInt + `,"error":{"code":-32603,"message":"Internal error"}}`},
		{"nil_error", protocol.NewStringID("s"), nil, `{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"Internal error"}}`},
		{"data", protocol.NewIntID(1), &protocol.WireError{Code: -32602, Message: "Unsupported protocol version", Data: json.RawMessage(`{"supported":["2025-11-25"],"requested":"1"}`)}, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unsupported protocol version","data":{"supported":["2025-11-25"],"requested":"1"}}}`},
		{"data_multiline", protocol.NewIntID(1), &protocol.WireError{Code: 1, Message: "m", Data: json.RawMessage("[\n1,\n2\n]")}, `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":[1,2]}}`},
		{"data_invalid_dropped", protocol.NewIntID(1), &protocol.WireError{Code: 1, Message: "m", Data: json.RawMessage(`{`)}, `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`},
		{"message_escapes", protocol.NewIntID(1), &protocol.WireError{Code: 1, Message: "a\"b\\c\nd\re\tf\x01g<&>\u2028h\xffi"}, `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"a\"b\\c\nd\re\tf\u0001g<&>\u2028h\ufffdi"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := protocol.EncodeError(tt.id, tt.give); string(got) != tt.want {
				t.Errorf("EncodeError =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestEncodeNotification(t *testing.T) {
	tests := []struct {
		name   string
		method string
		params any
		want   string
	}{
		{"no_params", protocol.MethodToolsListChanged, nil, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`},
		{"empty_raw", protocol.MethodToolsListChanged, json.RawMessage(nil), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`},
		{"nil_pointer", protocol.MethodProgress, (*protocol.ProgressParams)(nil), `{"jsonrpc":"2.0","method":"notifications/progress"}`},
		{"progress", protocol.MethodProgress, protocol.ProgressParams{ProgressToken: json.RawMessage(`0`), Progress: 0.5, Total: ptr(1.0), Message: "half\nway"}, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":0,"progress":0.5,"total":1,"message":"half\nway"}}`},
		{"raw", "x/y", json.RawMessage(`[1]`), `{"jsonrpc":"2.0","method":"x/y","params":[1]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := protocol.EncodeNotification(tt.method, tt.params)
			if err != nil {
				t.Fatalf("EncodeNotification: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("EncodeNotification =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestEncodeRequest(t *testing.T) {
	got, err := protocol.EncodeRequest(protocol.NewIntID(0), protocol.MethodPing, nil)
	if want := `{"jsonrpc":"2.0","id":0,"method":"ping"}`; err != nil || string(got) != want {
		t.Errorf("EncodeRequest = %s, %v; want %s", got, err, want)
	}
	got, err = protocol.EncodeRequest(protocol.NewStringID("r1"), "roots/list", struct{}{})
	if want := `{"jsonrpc":"2.0","id":"r1","method":"roots/list","params":{}}`; err != nil || string(got) != want {
		t.Errorf("EncodeRequest = %s, %v; want %s", got, err, want)
	}
}

func TestEncodeCallErrors(t *testing.T) {
	tests := []struct {
		name   string
		id     protocol.ID
		params any
	}{
		{"request_zero_id", protocol.ID{}, nil},
		{"params_string", protocol.NewIntID(1), "s"},
		{"params_number", protocol.NewIntID(1), 3},
		{"params_invalid_raw", protocol.NewIntID(1), json.RawMessage(`{`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := protocol.EncodeRequest(tt.id, "m", tt.params); err == nil {
				t.Errorf("EncodeRequest = %s, want error", got)
			}
		})
	}
	if got, err := protocol.EncodeNotification("m", "s"); err == nil {
		t.Errorf("EncodeNotification = %s, want error", got)
	}
}

// Every encoder keeps a frame on one line, whatever its strings hold.
func TestEncodersSingleLine(t *testing.T) {
	nasty := "line1\nline2\r\nline3\u2028\u2029\x00end"
	raw := json.RawMessage("{\n\t\"text\": \"a\\nb\"\n}\n")
	var frames [][]byte
	add := func(b []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b)
	}
	add(protocol.EncodeResult(protocol.NewStringID(nasty), protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent(nasty)}}))
	add(protocol.EncodeResult(protocol.NewIntID(1), raw))
	add(protocol.EncodeError(protocol.NewStringID(nasty), &protocol.WireError{Code: 1, Message: nasty, Data: raw}), nil)
	add(protocol.EncodeNotification(nasty, map[string]string{"k": nasty}))
	add(protocol.EncodeRequest(protocol.NewIntID(2), nasty, raw))
	for _, f := range frames {
		if bytes.ContainsAny(f, "\r\n") {
			t.Errorf("frame spans lines: %q", f)
		}
		if bytes.Contains(f, []byte("\u2028")) || bytes.Contains(f, []byte("\u2029")) {
			t.Errorf("frame holds a raw line separator: %q", f)
		}
		if _, werr := protocol.Decode(f); werr != nil {
			t.Errorf("Decode(%s): %v", f, werr)
		}
	}
}

// Encoding a decoded message and decoding it again gives the same message,
// with ids echoed byte for byte.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"request", `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{"s":"a\nb"},"_meta":{"progressToken":"t"}}}`},
		{"request_big_id", `{"jsonrpc":"2.0","id":` + bigInt + `,"method":"ping"}`},
		{"request_escaped_id", `{"jsonrpc":"2.0","id":"\u0061\n","method":"ping"}`},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"abc"}}`},
		{"result", `{"jsonrpc":"2.0","id":-1,"result":{"tools":[]}}`},
		{"error", `{"jsonrpc":"2.0","id":"","error":{"code":-32602,"message":"Invalid params: x","data":[1]}}`},
		{"error_null_id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, werr := protocol.Decode([]byte(tt.give))
			if werr != nil {
				t.Fatal(werr)
			}
			out := reencode(t, m)
			if string(out) != tt.give {
				t.Errorf("re-encoded\n%s\nwant\n%s", out, tt.give)
			}
		})
	}
}

func reencode(t testing.TB, m *protocol.Message) []byte {
	t.Helper()
	var out []byte
	var err error
	switch {
	case m.IsRequest():
		out, err = protocol.EncodeRequest(m.ID, m.Method, m.Params)
	case m.IsNotification():
		out, err = protocol.EncodeNotification(m.Method, m.Params)
	case m.Result != nil:
		out, err = protocol.EncodeResult(m.ID, m.Result)
	default:
		out = protocol.EncodeError(m.ID, m.Error)
	}
	if err != nil {
		t.Fatalf("re-encode %+v: %v", m, err)
	}
	return out
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":0,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":null}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// DecodeInput reads a batch where Decode refuses it, and a message as Decode does.
		if bm, items, berr := protocol.DecodeInput(data); items != nil {
			if !json.Valid(data) || bm != nil || berr != nil {
				t.Fatalf("DecodeInput read a batch of invalid JSON or with a message: %v %v", bm, berr)
			}
			for _, it := range items {
				if it.Msg == nil && it.Err == nil {
					t.Fatalf("batch item with neither message nor error: %+v", it)
				}
			}
		} else if dm, derr := protocol.Decode(data); (dm == nil) != (bm == nil) || (derr == nil) != (berr == nil) {
			t.Fatalf("DecodeInput %v %v, Decode %v %v", bm, berr, dm, derr)
		}
		m, werr := protocol.Decode(data)
		if werr != nil {
			if werr.Code != protocol.CodeParseError && werr.Code != protocol.CodeInvalidRequest {
				t.Fatalf("unexpected code %d", werr.Code)
			}
			if m != nil && m.ID.IsZero() {
				t.Fatal("failed decode returned a message without an id")
			}
			var id protocol.ID
			if m != nil {
				id = m.ID
			}
			reply := protocol.EncodeError(id, werr)
			if r, err := protocol.Decode(reply); err != nil || !r.IsResponse() || !utf8.Valid(reply) {
				t.Fatalf("error reply %q does not decode as a response: %v", reply, err)
			}
			return
		}
		if k := kindOf(m); k != "request" && k != "notification" && k != "response" {
			t.Fatalf("message %+v has kind %q", m, k)
		}
		// encoding/json, as an oracle, must read the same method and id.
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatalf("Decode accepted what encoding/json rejects: %v", err)
		}
		var method string
		if raw, ok := obj["method"]; ok {
			if err := json.Unmarshal(raw, &method); err != nil || method != m.Method {
				t.Fatalf("method %q, encoding/json reads %q (%v)", m.Method, method, err)
			}
		}
		if raw, ok := obj["id"]; ok && !m.ID.IsZero() && string(raw) != m.ID.String() {
			t.Fatalf("id %s, encoding/json reads %s", m.ID, raw)
		}
		out := reencode(t, m)
		if bytes.ContainsAny(out, "\r\n") {
			t.Fatalf("re-encoded frame spans lines: %q", out)
		}
		m2, werr := protocol.Decode(out)
		if werr != nil {
			t.Fatalf("re-encoded %q does not decode: %v", out, werr)
		}
		if kindOf(m2) != kindOf(m) || m2.ID.Key() != m.ID.Key() || m2.ID.String() != m.ID.String() {
			t.Fatalf("round trip changed the message: %+v -> %+v", m, m2)
		}
	})
}

var (
	benchRequest = []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"query":"actor model","limit":10},"_meta":{"progressToken":42}}}`)
	benchResult  = protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("Found 10 results for \"actor model\".")}}
)

func BenchmarkDecode(b *testing.B) {
	b.Logf("one tools/call request of %d bytes", len(benchRequest))
	b.ReportAllocs()
	b.SetBytes(int64(len(benchRequest)))
	for b.Loop() {
		if _, werr := protocol.Decode(benchRequest); werr != nil {
			b.Fatal(werr)
		}
	}
}

func BenchmarkEncodeResult(b *testing.B) {
	id := protocol.NewIntID(42)
	b.Run("struct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := protocol.EncodeResult(id, benchResult); err != nil {
				b.Fatal(err)
			}
		}
	})
	raw, err := json.Marshal(benchResult)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := protocol.EncodeResult(id, json.RawMessage(raw)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
