package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Error codes used on the wire. The JSON-RPC 2.0 codes are in the range
// -32768 to -32000; [CodeResourceNotFound] is MCP's own.
const (
	// CodeParseError: the message is not valid JSON. The reply has id null.
	CodeParseError int64 = -32700
	// CodeInvalidRequest: valid JSON that is not a valid JSON-RPC 2.0 message
	// (a batch, a wrong "jsonrpc", an id that is neither string nor integer, ...).
	CodeInvalidRequest int64 = -32600
	// CodeMethodNotFound: the method does not exist or is not available.
	CodeMethodNotFound int64 = -32601
	// CodeInvalidParams: the params do not fit the method (an unknown tool, a
	// malformed cursor, an unsupported protocol version, ...).
	CodeInvalidParams int64 = -32602
	// CodeInternalError: the server failed; the message never says how.
	CodeInternalError int64 = -32603
	// CodeResourceNotFound: resources/read of an unknown URI (MCP 2025-11-25).
	CodeResourceNotFound int64 = -32002
)

// Fixed message prefixes of the convenience constructors. Clients may match
// on them, so they are part of the contract.
const (
	msgParseError     = "Parse error"
	msgInvalidRequest = "Invalid Request"
	msgMethodNotFound = "Method not found"
	msgInvalidParams  = "Invalid params"
	msgInternalError  = "Internal error"
)

// WireError is a JSON-RPC error object as it travels on the wire: decoded
// from a peer's response by [Decode], or built by the engine and written
// with [EncodeError].
//
// Its text is public: it is sent to the client verbatim. Never put internal
// failure text (Go errors, paths, stack traces) in Message or Data; use
// [ErrInternal] for failures the client should not see the details of.
//
// WireError implements error; [WireError.Is] compares codes, so
// errors.Is(err, ErrMethodNotFound("")) holds for any method-not-found error.
type WireError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the message followed by the code, for logs.
func (e *WireError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return e.Message + " (code " + strconv.FormatInt(e.Code, 10) + ")"
}

// Is reports whether target is a *WireError with the same code. Messages
// and data are not compared.
func (e *WireError) Is(target error) bool {
	t, ok := target.(*WireError)
	return ok && e != nil && t != nil && e.Code == t.Code
}

// NewError returns a [WireError] with the given code and a message formatted
// as fmt.Sprintf does. Without args, format is used verbatim, so text that
// contains '%' is safe to pass as it is.
func NewError(code int64, format string, args ...any) *WireError {
	return &WireError{Code: code, Message: sprintf(format, args)}
}

// ErrParse returns a [CodeParseError] error with the message
// "Parse error: <detail>".
func ErrParse(detail string) *WireError {
	return &WireError{Code: CodeParseError, Message: withDetail(msgParseError, detail)}
}

// ErrInvalidRequest returns a [CodeInvalidRequest] error with the message
// "Invalid Request: <detail>", the detail formatted as [NewError] does.
func ErrInvalidRequest(format string, args ...any) *WireError {
	return &WireError{Code: CodeInvalidRequest, Message: withDetail(msgInvalidRequest, sprintf(format, args))}
}

// ErrMethodNotFound returns a [CodeMethodNotFound] error with the message
// "Method not found: <method>".
func ErrMethodNotFound(method string) *WireError {
	return &WireError{Code: CodeMethodNotFound, Message: withDetail(msgMethodNotFound, method)}
}

// ErrInvalidParams returns a [CodeInvalidParams] error with the message
// "Invalid params: <detail>", the detail formatted as [NewError] does.
func ErrInvalidParams(format string, args ...any) *WireError {
	return &WireError{Code: CodeInvalidParams, Message: withDetail(msgInvalidParams, sprintf(format, args))}
}

// ErrInternal returns a [CodeInternalError] error whose message is exactly
// "Internal error". It takes no detail on purpose: whatever failed inside the
// server is reported elsewhere, never to the client.
func ErrInternal() *WireError {
	return &WireError{Code: CodeInternalError, Message: msgInternalError}
}

// CodeOf returns the code of the first [*WireError] in err's chain, or 0
// when there is none (0 is not a JSON-RPC error code).
func CodeOf(err error) int64 {
	var we *WireError
	if errors.As(err, &we) && we != nil {
		return we.Code
	}
	return 0
}

func sprintf(format string, args []any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}

func withDetail(prefix, detail string) string {
	if detail == "" {
		return prefix
	}
	return prefix + ": " + detail
}
