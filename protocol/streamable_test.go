package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		give string
		want protocol.FrameKind
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, protocol.FrameResult},
		{`{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m"}}`, protocol.FrameError},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, protocol.FrameError},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"result":1}}`, protocol.FrameNotification},
		{`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{}}`, protocol.FrameRequest},
		{`{"method":"ping","jsonrpc":"2.0","id":3}`, protocol.FrameRequest},
		{` { "jsonrpc" : "2.0" , "id" : 1 , "result" : null } `, protocol.FrameResult},
		{`{"jsonrpc":"2.0","error":null,"id":1,"result":{}}`, protocol.FrameResult},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, protocol.FrameNotification},
		{`{"jsonrpc":"2.0"}`, protocol.FrameInvalid},
		{`[]`, protocol.FrameBatch},
		{` [{"jsonrpc":"2.0","id":1,"result":{}}]`, protocol.FrameBatch},
		{``, protocol.FrameInvalid},
		{`{"jsonrpc`, protocol.FrameInvalid},
		{`{"a" 1}`, protocol.FrameInvalid},
	}
	for _, tt := range tests {
		if got := protocol.KindOf([]byte(tt.give)); got != tt.want {
			t.Errorf("KindOf(%s) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// TestKindOfEncoded: the kinds of the frames the package's own encoders write.
func TestKindOfEncoded(t *testing.T) {
	res, _ := protocol.EncodeResult(protocol.NewIntID(1), &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent(`"method":"x"`)}})
	note, _ := protocol.EncodeNotification(protocol.MethodProgress, json.RawMessage(`{"progressToken":1,"progress":1}`))
	req, _ := protocol.EncodeRequest(protocol.NewStringID("r"), "sampling/createMessage", json.RawMessage(`{}`))
	tests := []struct {
		give []byte
		want protocol.FrameKind
	}{
		{res, protocol.FrameResult},
		{protocol.EncodeError(protocol.NewIntID(2), protocol.ErrInternal()), protocol.FrameError},
		{note, protocol.FrameNotification},
		{req, protocol.FrameRequest},
	}
	for _, tt := range tests {
		if got := protocol.KindOf(tt.give); got != tt.want {
			t.Errorf("KindOf(%s) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

func FuzzKindOf(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add([]byte(`{"a":"\"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = protocol.KindOf(b) // must not panic on any input
	})
}

func TestAccepts(t *testing.T) {
	tests := []struct {
		give []string
		mt   string
		want bool
	}{
		{nil, "text/event-stream", true},
		{[]string{"application/json, text/event-stream"}, "text/event-stream", true},
		{[]string{"application/json", "text/event-stream"}, "text/event-stream", true},
		{[]string{"application/json"}, "text/event-stream", false},
		{[]string{"*/*"}, "application/json", true},
		{[]string{"application/*;q=0.5"}, "application/json", true},
		{[]string{"application/json;q=0"}, "application/json", false},
		{[]string{"text/html, ;;bogus"}, "application/json", false},
		{[]string{"TEXT/EVENT-STREAM"}, "text/event-stream", true},
	}
	for _, tt := range tests {
		if got := protocol.Accepts(tt.give, tt.mt); got != tt.want {
			t.Errorf("Accepts(%q, %s) = %v, want %v", tt.give, tt.mt, got, tt.want)
		}
	}
}

func TestAppendSSE(t *testing.T) {
	tests := []struct{ give, want string }{
		{`{"a":1}`, "event: message\ndata: {\"a\":1}\n\n"},
		{"{\n\"a\":1\r\n}", "event: message\ndata: {\ndata: \"a\":1\ndata: }\n\n"},
	}
	for _, tt := range tests {
		if got := string(protocol.AppendSSE(nil, []byte(tt.give))); got != tt.want {
			t.Errorf("AppendSSE(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestSessionIDs(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		id := protocol.NewSessionID()
		if !protocol.ValidSessionID(id) || len(id) < 26 || seen[id] {
			t.Fatalf("NewSessionID() = %q (valid %v, seen %v)", id, protocol.ValidSessionID(id), seen[id])
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "has space", "tab\t", "é", strings.Repeat("x", 257)} {
		if protocol.ValidSessionID(bad) {
			t.Errorf("ValidSessionID(%q) = true", bad)
		}
	}
}

func TestAppendSSEWithIDAndPriming(t *testing.T) {
	if got, want := string(protocol.AppendSSEWithID(nil, "t-1-2", []byte(`{"a":1}`))), "id: t-1-2\nevent: message\ndata: {\"a\":1}\n\n"; got != want {
		t.Errorf("AppendSSEWithID = %q, want %q", got, want)
	}
	if got, want := string(protocol.AppendSSEPriming(nil, "t-1-0", 1500)), "id: t-1-0\nretry: 1500\ndata: \n\n"; got != want {
		t.Errorf("AppendSSEPriming = %q, want %q", got, want)
	}
}

func TestErrorCodeOf(t *testing.T) {
	for _, tt := range []struct {
		give string
		want int64
	}{
		{string(protocol.EncodeError(protocol.NewIntID(1), protocol.ErrMethodNotFound("x"))), -32601},
		{`{"jsonrpc":"2.0","id":1,"error":{"message":"m","code":-32020}}`, -32020},
		{`{"jsonrpc":"2.0","id":1,"result":{"error":{"code":5}}}`, 0},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`, 0},
		{`not json`, 0},
	} {
		if got := protocol.ErrorCodeOf([]byte(tt.give)); got != tt.want {
			t.Errorf("ErrorCodeOf(%s) = %d, want %d", tt.give, got, tt.want)
		}
	}
}
