package httpserve

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// maxSafeInteger is the largest integer an Mcp-Param header may carry: 2^53−1, the largest
// that an IEEE 754 double holds exactly (MCP 2026-07-28, "Schema Extension").
const maxSafeInteger = 1<<53 - 1

// checkParamHeaders checks the Mcp-Param-{Name} headers of a modern tools/call over HTTP against
// the call's arguments (raw JSON; absent or null means none), for the tool's x-mcp-header
// arguments params ([tools.Compiled.HeaderParams]). It returns nil when they agree, and a
// [protocol.CodeHeaderMismatch] error naming the header otherwise (MCP 2026-07-28, "Server
// Behavior for Custom Headers"):
//
//   - the body has a value (not null) at the argument's path and the header is missing;
//   - the header is present and the body has no value there, or null: a conforming client omits
//     the header then, and an intermediary that acted on it would have acted on a value the
//     tool never sees, which is the split between header and body that the check exists to
//     prevent;
//   - the header is sent more than once;
//   - the header value has characters a header value must not have, or malformed Base64
//     ([protocol.DecodeHeaderValue]);
//   - the decoded value differs from the body value: strings compare exactly, integers
//     numerically ("42" matches 42 and 42.0), booleans as "true" and "false";
//   - the body holds an integer beyond ±(2^53−1), which no header may carry.
//
// A body value of another JSON type than the property declares (a string, or 42.5, for an
// integer) neither needs nor is compared with a header: the input schema rejects the
// call, and the client gets that feedback. Header names compare case-insensitively; without
// params there is nothing to check and the arguments are not read.
func checkParamHeaders(params []tools.HeaderParam, arguments json.RawMessage, h http.Header) *protocol.WireError {
	if len(params) == 0 {
		return nil
	}
	args := objectMembers(arguments)
	for _, p := range params {
		name := p.Header()
		where := "arguments/" + strings.Join(p.Path, "/")
		values := h.Values(name)
		body, present := lookupArgument(args, p.Path)
		switch {
		case len(values) > 1:
			return protocol.ErrHeaderMismatch("one %s header is allowed", name)
		case !present && len(values) == 1:
			return protocol.ErrHeaderMismatch("%s header is present but the body has no value at %s", name, where)
		case !present:
			continue
		}
		want, n, ok := bodyValue(p.Type, body)
		switch {
		case !ok:
			continue // not of the declared type: the input schema rejects the call
		case p.Type == "integer" && (n > maxSafeInteger || n < -maxSafeInteger):
			return protocol.ErrHeaderMismatch("%s: the body value at %s is beyond ±(2^53−1), the integers a header may carry", name, where)
		case len(values) == 0:
			return protocol.ErrHeaderMismatch("the %s header is required: the body has a value at %s", name, where)
		}
		got, err := protocol.DecodeHeaderValue(values[0])
		if err != nil {
			return protocol.ErrHeaderMismatch("%s: %s", name, err.Error())
		}
		equal := got == want
		if p.Type == "integer" {
			m, number, integer, safe := exactInteger(got)
			equal = number && integer && safe && m == n
		}
		if !equal {
			return protocol.ErrHeaderMismatch("%s header value '%s' does not match body value '%s'", name, got, want)
		}
	}
	return nil
}

// bodyValue reads the raw body value of an argument of JSON Schema type typ: its text as a
// header carries it (for an integer, the raw number as sent), and for an integer its value,
// which is beyond ±(2^53−1) when it does not fit a header. ok is false when body is not a
// value of type typ.
func bodyValue(typ string, body json.RawMessage) (text string, n int64, ok bool) {
	switch typ {
	case "string":
		if body[0] != '"' || json.Unmarshal(body, &text) != nil {
			return "", 0, false
		}
		return text, 0, true
	case "boolean":
		text = string(body)
		return text, 0, text == "true" || text == "false"
	case "integer":
		n, number, integer, safe := exactInteger(string(body))
		switch {
		case !number || !integer:
			return "", 0, false
		case !safe:
			n = maxSafeInteger + 1
		}
		return string(body), n, true
	}
	return "", 0, false
}

// checkToolParams checks the Mcp-Param-* headers of the modern tools/call msg against its
// arguments ([checkParamHeaders]), for the tool it names as the engine serves it now to the
// caller id. Params that do not decode and a tool the engine does not serve are left to the
// engine to answer, and so is a tool hidden from the caller (engine.Engine.ToolFor): checking
// its headers would tell it exists.
func (h *Handler) checkToolParams(r *http.Request, msg *protocol.Message, id *tools.Identity) *protocol.WireError {
	p, err := msg.CallToolParams()
	if err != nil {
		return nil
	}
	tool, ok := h.eng.ToolFor(p.Name, id, engine.ToolsetsFromContext(r.Context()))
	if !ok {
		return nil
	}
	return checkParamHeaders(tool.HeaderParams(), p.Arguments, r.Header)
}

// objectMembers returns the members of the JSON object raw, or nil when raw is absent, null,
// or not an object. A repeated member keeps its last value, as in the tool's own decoding.
func objectMembers(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// lookupArgument returns the raw value at path in args, and false when there is none or it is
// null.
func lookupArgument(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	for i, name := range path {
		v, ok := args[name]
		if !ok {
			return nil, false
		}
		v = json.RawMessage(strings.TrimSpace(string(v)))
		if i == len(path)-1 {
			return v, string(v) != "null"
		}
		args = objectMembers(v)
	}
	return nil, false
}

// exactInteger reads s as a JSON number literal, exactly. number is false when s is not one;
// integer is false when its value has a fractional part ("42.0" and "4.2e1" are the integer
// 42); safe is false when the integer lies beyond ±(2^53−1). n is the value when all three
// hold. It never allocates for an exponent: "1e999999999" is simply not safe.
func exactInteger(s string) (n int64, number, integer, safe bool) {
	i := 0
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	digits := func() string {
		start := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return s[start:i]
	}
	whole := digits()
	if whole == "" || (len(whole) > 1 && whole[0] == '0') {
		return 0, false, false, false
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		if frac = digits(); frac == "" {
			return 0, false, false, false
		}
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			expNeg = s[i] == '-'
			i++
		}
		e := digits()
		if e == "" {
			return 0, false, false, false
		}
		e = strings.TrimLeft(e, "0")
		if len(e) > 6 {
			e = "1000000" // far beyond any digit count that matters here
		}
		exp, _ = strconv.Atoi("0" + e)
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return 0, false, false, false
	}
	// The value is mant × 10^exp, mant without leading or trailing zeros.
	mant := strings.TrimLeft(whole+frac, "0")
	exp -= len(frac)
	if mant == "" {
		return 0, true, true, true
	}
	trimmed := strings.TrimRight(mant, "0")
	exp += len(mant) - len(trimmed)
	mant = trimmed
	switch {
	case exp < 0:
		return 0, true, false, false
	case len(mant)+exp > len(strconv.Itoa(maxSafeInteger)):
		return 0, true, true, false
	}
	n, _ = strconv.ParseInt(mant+strings.Repeat("0", exp), 10, 64)
	if n > maxSafeInteger {
		return 0, true, true, false
	}
	if neg {
		n = -n
	}
	return n, true, true, true
}
