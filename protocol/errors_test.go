package protocol_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

// The messages of the constructors are client-facing text, so they are
// pinned here.
func TestErrorConstructors(t *testing.T) {
	tests := []struct {
		name     string
		give     *protocol.WireError
		wantCode int64
		wantMsg  string
	}{
		{"parse", protocol.ErrParse("invalid JSON"), protocol.CodeParseError, "Parse error: invalid JSON"},
		{"invalid_request", protocol.ErrInvalidRequest("id must not be %s", "null"), protocol.CodeInvalidRequest, "Invalid Request: id must not be null"},
		{"invalid_request_percent", protocol.ErrInvalidRequest("100% wrong"), protocol.CodeInvalidRequest, "Invalid Request: 100% wrong"},
		{"method_not_found", protocol.ErrMethodNotFound("tools/nope"), protocol.CodeMethodNotFound, "Method not found: tools/nope"},
		{"invalid_params", protocol.ErrInvalidParams("unknown tool %q", "x"), protocol.CodeInvalidParams, `Invalid params: unknown tool "x"`},
		{"internal", protocol.ErrInternal(), protocol.CodeInternalError, "Internal error"},
		{"new_error", protocol.NewError(protocol.CodeResourceNotFound, "Resource not found"), protocol.CodeResourceNotFound, "Resource not found"},
		{"new_error_args", protocol.NewError(-32042, "need %d", 2), -32042, "need 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.give.Code != tt.wantCode || tt.give.Message != tt.wantMsg || tt.give.Data != nil {
				t.Errorf("got {%d %q %s}, want {%d %q}", tt.give.Code, tt.give.Message, tt.give.Data, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func TestWireErrorIs(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"same_code", protocol.ErrMethodNotFound("a"), protocol.ErrMethodNotFound("b"), true},
		{"wrapped", fmt.Errorf("dispatch: %w", protocol.ErrInvalidParams("x")), protocol.ErrInvalidParams(""), true},
		{"other_code", protocol.ErrInternal(), protocol.ErrParse(""), false},
		{"not_wire", errors.New("Internal error"), protocol.ErrInternal(), false},
		{"nil_target", protocol.ErrInternal(), (*protocol.WireError)(nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, tt.target); got != tt.want {
				t.Errorf("errors.Is = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCodeOf(t *testing.T) {
	tests := []struct {
		name string
		give error
		want int64
	}{
		{"wire", protocol.ErrMethodNotFound("x"), protocol.CodeMethodNotFound},
		{"wrapped", fmt.Errorf("call: %w", protocol.ErrInternal()), protocol.CodeInternalError},
		{"plain", errors.New("boom"), 0},
		{"nil", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := protocol.CodeOf(tt.give); got != tt.want {
				t.Errorf("CodeOf = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWireErrorError(t *testing.T) {
	if got, want := protocol.ErrMethodNotFound("x").Error(), "Method not found: x (code -32601)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
