package client

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestReadSSE(t *testing.T) {
	tests := []struct {
		name string
		give string
		want []string
	}{
		{"one event", "event: message\ndata: {\"a\":1}\n\n", []string{`{"a":1}`}},
		{"priming event, comment and CRLF", "id: 0\r\ndata:\r\n\r\n: hello\r\ndata: x\r\n\r\n", []string{"", "x"}},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"no space after colon", "data:z\n\n", []string{"z"}},
		{"unfinished event is dropped", "data: a\n\ndata: b\n", []string{"a"}},
		{"long line", "data: " + strings.Repeat("y", 100000) + "\n\n", []string{strings.Repeat("y", 100000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := readSSE(strings.NewReader(tt.give), func(d []byte) bool {
				got = append(got, string(d))
				return false
			})
			if err != io.EOF {
				t.Errorf("err = %v, want io.EOF", err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadSSEStops(t *testing.T) {
	n := 0
	err := readSSE(strings.NewReader("data: 1\n\ndata: 2\n\n"), func([]byte) bool { n++; return true })
	if err != nil || n != 1 {
		t.Errorf("read %d events, err %v; want 1 and nil", n, err)
	}
}

func TestReadLine(t *testing.T) {
	long := strings.Repeat("z", 70000)
	br := bufio.NewReaderSize(strings.NewReader("short\n"+long+"\nlast"), 16)
	var scratch []byte
	for _, want := range []string{"short\n", long + "\n", "last"} {
		got, err := readLine(br, &scratch)
		if string(got) != want {
			t.Fatalf("line = %d bytes, want %d", len(got), len(want))
		}
		if want == "last" && err != io.EOF {
			t.Errorf("err = %v at the end, want io.EOF", err)
		}
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name   string
		id     int64
		method string
		params any
		modern bool
		want   string
	}{
		{"request", 3, "ping", nil, false, `{"jsonrpc":"2.0","id":3,"method":"ping"}`},
		{"notification", -1, "notifications/initialized", nil, false, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"params", 0, "tools/call", map[string]any{"name": "echo"}, false, `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo"}}`},
		{"raw params", 1, "tools/call", json.RawMessage(`{"name":"echo"}`), false, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`},
		{"modern, no params", 2, "server/discover", nil, true,
			`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"modern, raw params", 3, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"text":"x"}}`), true,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"x"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := encodeParams(tt.method, tt.params, tt.modern)
			if err != nil {
				t.Fatal(err)
			}
			if got := encode(tt.id, tt.method, p); string(got) != tt.want {
				t.Errorf("encode = %s; want %s", got, tt.want)
			}
		})
	}
	if _, err := encodeParams("x", func() {}, false); err == nil {
		t.Error("params that cannot be encoded were accepted")
	}
}

func TestWithEnvelope(t *testing.T) {
	const env = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	tests := []struct {
		name string
		give string
		want string
	}{
		{"none", "", `{"_meta":{` + env + `}}`},
		{"null", "null", `{"_meta":{` + env + `}}`},
		{"empty object", " { } ", `{"_meta":{` + env + `}}`},
		{"members", `{"name":"echo"}`, `{"_meta":{` + env + `},"name":"echo"}`},
		// Objects that mention _meta are decoded: keys come out sorted.
		{"existing _meta", `{"_meta":{"progressToken":7},"name":"sleep"}`,
			`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7},"name":"sleep"}`},
		{"null _meta", `{"_meta":null}`,
			`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`},
		{"_meta in the arguments only", `{"arguments":{"_meta":1}}`,
			`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{"_meta":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WithEnvelope([]byte(tt.give))
			if err != nil || string(got) != tt.want {
				t.Errorf("WithEnvelope(%s) = %s, %v; want %s", tt.give, got, err, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("WithEnvelope(%s) is not JSON: %s", tt.give, got)
			}
		})
	}
	for _, bad := range []string{`[1]`, `"x"`, `{`, `{"_meta":[1]}`} {
		if got, err := WithEnvelope([]byte(bad)); err == nil {
			t.Errorf("WithEnvelope(%s) = %s, want an error", bad, got)
		}
	}
}

func TestHeaderName(t *testing.T) {
	tests := []struct {
		method, params, want string
	}{
		{"tools/call", `{"name":"echo","arguments":{"name":"not this"}}`, "echo"},
		{"prompts/get", `{"name":"p"}`, "p"},
		{"resources/read", `{"uri":"test://r"}`, "test://r"},
		{"tools/list", `{"name":"x"}`, ""},
		{"tools/call", `not json`, ""},
	}
	for _, tt := range tests {
		if got := headerName(tt.method, []byte(tt.params)); got != tt.want {
			t.Errorf("headerName(%s, %s) = %q, want %q", tt.method, tt.params, got, tt.want)
		}
	}
}

func TestEncodeHeaderValue(t *testing.T) {
	tests := []struct{ give, want string }{
		{"echo", "echo"},
		{"", ""},
		{"a b", "a b"},
		{" lead", "=?base64?IGxlYWQ=?="},
		{"trail ", "=?base64?dHJhaWwg?="},
		{"é", "=?base64?w6k=?="},
		{"tab\t", "=?base64?dGFiCQ==?="},
		{"=?base64?x?=", "=?base64?PT9iYXNlNjQ/eD89?="},
	}
	for _, tt := range tests {
		if got := encodeHeaderValue(tt.give); got != tt.want {
			t.Errorf("encodeHeaderValue(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestParseEra(t *testing.T) {
	for give, want := range map[string]Era{"": Legacy, "legacy": Legacy, "modern": Modern} {
		if got, err := ParseEra(give); err != nil || got != want {
			t.Errorf("ParseEra(%q) = %q, %v; want %q", give, got, err, want)
		}
	}
	if _, err := ParseEra("2026"); err == nil {
		t.Error(`ParseEra("2026") succeeded`)
	}
}

func TestParseMessages(t *testing.T) {
	msgs, batch, err := parseMessages([]byte(` [{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}] `))
	if err != nil || !batch || len(msgs) != 2 || string(msgs[1].ID) != "2" {
		t.Errorf("batch: %v %v %v", msgs, batch, err)
	}
	msgs, batch, err = parseMessages([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`))
	if err != nil || batch || string(msgs[0].ID) != "null" || msgs[0].Error.Code != -32700 || !msgs[0].IsResponse() {
		t.Errorf("single: %v %v %v", msgs, batch, err)
	}
	if _, _, err := parseMessages([]byte(`nope`)); err == nil {
		t.Error("garbage parsed")
	}
}

func TestIntID(t *testing.T) {
	tests := []struct {
		give string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{`"42"`, 0, false},
		{"null", 0, false},
		{"", 0, false},
		{"123456789012345678901234567890", 0, false},
		{"1.5", 0, false},
	}
	for _, tt := range tests {
		got, ok := intID([]byte(tt.give))
		if got != tt.want || ok != tt.ok {
			t.Errorf("intID(%q) = %d, %v; want %d, %v", tt.give, got, ok, tt.want, tt.ok)
		}
	}
}
