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
		want   string
	}{
		{"request", 3, "ping", nil, `{"jsonrpc":"2.0","id":3,"method":"ping"}`},
		{"notification", -1, "notifications/initialized", nil, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"params", 0, "tools/call", map[string]any{"name": "echo"}, `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo"}}`},
		{"raw params", 1, "tools/call", json.RawMessage(`{"name":"echo"}`), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encode(tt.id, tt.method, tt.params)
			if err != nil || string(got) != tt.want {
				t.Errorf("encode = %s, %v; want %s", got, err, tt.want)
			}
		})
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
