package protocol_test

import (
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestHeaderValues(t *testing.T) {
	tests := []struct {
		value   string // what the client means
		encoded string // what it sends
	}{
		{"us-west1", "us-west1"},
		{"get_weather", "get_weather"},
		{"file:///projects/app/config.json", "file:///projects/app/config.json"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
	}
	for _, tt := range tests {
		if got := protocol.EncodeHeaderValue(tt.value); got != tt.encoded {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tt.value, got, tt.encoded)
		}
		got, err := protocol.DecodeHeaderValue(tt.encoded)
		if err != nil || got != tt.value {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q", tt.encoded, got, err, tt.value)
		}
	}
	if got, err := protocol.DecodeHeaderValue(" \tget_weather\t "); err != nil || got != "get_weather" {
		t.Errorf("optional white space: %q, %v", got, err)
	}
	// Only a value with both the prefix and the suffix is Base64; anything else is plain.
	plain := []struct{ encoded, value string }{
		{"=?base64?SGVsbG8=", "=?base64?SGVsbG8="},
		{"SGVsbG8=?=", "SGVsbG8=?="},
		{"=?base64?=", "=?base64?="},
		{"=?base64??=", ""},
		{"a\tb", "a\tb"},
		{"=?base64?SGVsbG8=?=", "Hello"},
	}
	for _, tt := range plain {
		if got, err := protocol.DecodeHeaderValue(tt.encoded); err != nil || got != tt.value {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q", tt.encoded, got, err, tt.value)
		}
	}
	for _, bad := range []string{"=?base64?***?=", "=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?SGVs\nbG8=?=",
		"caf\xc3\xa9", "a\x01b", "a\x7fb", "=?base64?/w==?="} {
		if got, err := protocol.DecodeHeaderValue(bad); err == nil {
			t.Errorf("DecodeHeaderValue(%q) = %q, want an error", bad, got)
		}
	}
}

func TestReadStringMember(t *testing.T) {
	tests := []struct {
		params string
		member string
		want   string
		ok     bool
	}{
		{`{"name":"echo","arguments":{"name":"inner"}}`, "name", "echo", true},
		{`{"arguments":{"name":"inner"},"name":"echo"}`, "name", "echo", true},
		{` { "uri" : "test://a\u0062" } `, "uri", "test://ab", true},
		{`{"name":7}`, "name", "", false},
		{`{"other":"x"}`, "name", "", false},
		{`[]`, "name", "", false},
		{`null`, "name", "", false},
	}
	for _, tt := range tests {
		got, ok := protocol.ReadStringMember([]byte(tt.params), tt.member)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ReadStringMember(%s, %q) = %q, %v; want %q, %v", tt.params, tt.member, got, ok, tt.want, tt.ok)
		}
	}
}
