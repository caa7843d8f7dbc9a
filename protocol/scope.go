package protocol

import (
	"encoding/json"
	"strconv"
	"strings"
)

// CodeInsufficientScope: a tools/call was refused, unprocessed, because the caller's identity
// lacks a scope the tool needs (tools.Tool.Scopes). It is what stdio and in-memory callers get
// (and HTTP callers without auth); over Streamable HTTP with auth the same refusal is a 403 with
// the step-up challenge, whose body carries this error. It is an application-defined code,
// outside the range JSON-RPC reserves (-32768 to -32000).
const CodeInsufficientScope int64 = -31001

// ErrInsufficientScope returns the [CodeInsufficientScope] error of a call of tool whose
// caller lacks the scopes missing. Its message is
//
//	Insufficient scope: tool "deploy" needs the scope admin
//	Insufficient scope: tool "deploy" needs the scopes admin, deploy:write
//
// and its data {"tool":"deploy","missing":["admin"]}. The text is part of the contract.
func ErrInsufficientScope(tool string, missing []string) *WireError {
	noun := "scope "
	if len(missing) > 1 {
		noun = "scopes "
	}
	data, _ := json.Marshal(struct {
		Tool    string   `json:"tool"`
		Missing []string `json:"missing"`
	}{tool, missing})
	return &WireError{Code: CodeInsufficientScope,
		Message: "Insufficient scope: tool " + strconv.Quote(tool) + " needs the " + noun + strings.Join(missing, ", "),
		Data:    data}
}
