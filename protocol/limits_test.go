package protocol_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestDecodeHostileInput(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name     string
		give     string
		wantCode int64
		wantMsg  string
		wantID   string
	}{
		{"invalid_utf8_in_params", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\",\"params\":{\"t\":\"a\xffb\"}}",
			protocol.CodeInvalidRequest, "Invalid Request: message is not valid UTF-8", "4"},
		{"invalid_utf8_in_method", "{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"method\":\"x\xc3\"}",
			protocol.CodeInvalidRequest, "Invalid Request: message is not valid UTF-8", `"m"`},
		{"invalid_utf8_in_key", "{\"jsonrpc\":\"2.0\",\"\xfe\":1,\"method\":\"x\"}",
			protocol.CodeInvalidRequest, "Invalid Request: message is not valid UTF-8", ""},
		{"nul_byte_raw", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\x00b\"}",
			protocol.CodeParseError, "Parse error: invalid JSON at byte offset 36", ""},
		{"nul_byte_outside", "{\"jsonrpc\":\"2.0\",\x00\"id\":1,\"method\":\"ping\"}",
			protocol.CodeParseError, "Parse error: invalid JSON at byte offset 18", ""},
		{"nested_too_deep", `{"jsonrpc":"2.0","id":1,"method":"x","params":` + deep(protocol.MaxNestingDepth+1) + `}`,
			protocol.CodeParseError, "Parse error: JSON nested deeper than 10000 levels", ""},
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

// Deep nesting up to the limit is accepted, and an escaped NUL is an ordinary character.
func TestDecodeAtTheLimits(t *testing.T) {
	n := protocol.MaxNestingDepth - 2 // the message object and params count as levels
	give := `{"jsonrpc":"2.0","id":1,"method":"x","params":[` + strings.Repeat("[", n) + strings.Repeat("]", n) + `]}`
	if _, werr := protocol.Decode([]byte(give)); werr != nil {
		t.Errorf("nesting of %d levels: %v", n+2, werr)
	}
	m, werr := protocol.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"a\u0000b"}`))
	if werr != nil || m.Method != "a\x00b" {
		t.Fatalf("escaped NUL: %+v, %v", m, werr)
	}
	reply := protocol.EncodeError(m.ID, protocol.ErrMethodNotFound(m.Method))
	if bytes.IndexByte(reply, 0) >= 0 || !bytes.Contains(reply, []byte(`a\u0000b`)) {
		t.Errorf("reply %q must escape the NUL", reply)
	}
}

func TestErrServerBusy(t *testing.T) {
	tests := []struct {
		give *protocol.WireError
		want string
	}{
		{protocol.ErrServerBusy(protocol.BusyConnection, 10000), `{"jsonrpc":"2.0","id":7,"error":{"code":-31000,"message":"Server busy: too many calls in flight on this connection (limit 10000)","data":{"scope":"connection","limit":10000}}}`},
		{protocol.ErrServerBusy(protocol.BusyServer, 5), `{"jsonrpc":"2.0","id":7,"error":{"code":-31000,"message":"Server busy: too many calls in flight on the server (limit 5)","data":{"scope":"server","limit":5}}}`},
		{protocol.ErrTooManySessions(protocol.BusySessions, 10000), `{"jsonrpc":"2.0","id":7,"error":{"code":-31000,"message":"Server busy: too many sessions open on the server (limit 10000)","data":{"scope":"sessions","limit":10000}}}`},
		{protocol.ErrTooManySessions(protocol.BusySubject, 3), `{"jsonrpc":"2.0","id":7,"error":{"code":-31000,"message":"Server busy: too many sessions open for this subject (limit 3)","data":{"scope":"subject","limit":3}}}`},
	}
	for _, tt := range tests {
		if got := string(protocol.EncodeError(protocol.NewIntID(7), tt.give)); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
		if !errors.Is(tt.give, &protocol.WireError{Code: protocol.CodeServerBusy}) {
			t.Errorf("errors.Is by code fails for %v", tt.give)
		}
	}
}

// WaitPending waits while a blocked peer keeps the backlog over the mark, gives up when told
// to, and returns once the peer reads again.
func TestStreamWriterWaitPending(t *testing.T) {
	gw := &gateWriter{gate: make(chan struct{})}
	w := protocol.NewStreamWriter(gw, nil)
	frame := bytes.Repeat([]byte("z"), 999)
	for range 100 {
		w.Send(frame) // 100 000 bytes pending, newlines included
	}
	if !w.WaitPending(100000, nil) {
		t.Fatal("WaitPending(100000) = false with 100000 bytes pending")
	}
	stop := make(chan struct{})
	close(stop)
	if w.WaitPending(10, stop) {
		t.Fatal("WaitPending returned true while the peer reads nothing")
	}
	var ok bool
	done := make(chan struct{})
	go func() { defer close(done); ok = w.WaitPending(0, nil) }()
	close(gw.gate)
	watchdog(t, "WaitPending after the peer read everything", done)
	if !ok {
		t.Fatal("WaitPending(0) = false after the backlog drained")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !w.WaitPending(0, nil) {
		t.Fatal("WaitPending after Close = false")
	}
}
