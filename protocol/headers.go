package protocol

import (
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"
)

// Headers of a modern (MCP 2026-07-28) Streamable HTTP request, which mirror the body so that
// an intermediary can route on them without parsing it. The server checks that they agree with
// the body ([CodeHeaderMismatch] otherwise). Names are in canonical form; values are
// case-sensitive.
const (
	// HeaderMethod carries the request's method, on every request.
	HeaderMethod = "Mcp-Method"
	// HeaderName carries params.name (tools/call, prompts/get), params.uri (resources/read) or
	// params.taskId (tasks/*), in the value encoding of [DecodeHeaderValue].
	HeaderName = "Mcp-Name"
	// HeaderParamPrefix starts the header that mirrors a tool argument annotated with
	// x-mcp-header: Mcp-Param-{Name}.
	HeaderParamPrefix = "Mcp-Param-"
)

// base64Prefix and base64Suffix enclose a header value sent Base64-encoded.
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// DecodeHeaderValue returns the value a client meant by an Mcp-Name or Mcp-Param-* header: the
// UTF-8 text Base64-encoded between "=?base64?" and "?=", or the plain value itself with the
// optional white space around it removed. Only a value that both starts with "=?base64?" and
// ends with "?=" is Base64; any other value is plain, and must be visible ASCII, spaces and
// horizontal tabs (RFC 9110 field-value characters without obs-text). A plain value with other
// characters, malformed Base64 (standard alphabet, padding required) and Base64 that is not
// valid UTF-8 are errors.
func DecodeHeaderValue(v string) (string, error) {
	v = strings.Trim(v, " \t")
	if len(v) >= len(base64Prefix)+len(base64Suffix) && strings.HasPrefix(v, base64Prefix) && strings.HasSuffix(v, base64Suffix) {
		raw := v[len(base64Prefix) : len(v)-len(base64Suffix)]
		b, err := base64.StdEncoding.DecodeString(raw)
		if err != nil || strings.ContainsAny(raw, "\r\n") {
			return "", errors.New("malformed Base64 header value")
		}
		if !utf8.Valid(b) {
			return "", errors.New("a Base64 header value must decode to UTF-8")
		}
		return string(b), nil
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c != '\t' && (c < 0x20 || c > 0x7E) {
			return "", errors.New("a header value must be visible ASCII, or Base64-encoded")
		}
	}
	return v, nil
}

// EncodeHeaderValue returns v as a client sends it in an Mcp-Name or Mcp-Param-* header: as it
// is when it is plain visible ASCII with no white space at either end and does not look like
// the Base64 form, and Base64-encoded otherwise.
func EncodeHeaderValue(v string) string {
	plain := v != "" && v[0] != ' ' && v[len(v)-1] != ' ' && !strings.HasPrefix(v, base64Prefix)
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] <= 0x7E
	}
	if plain || v == "" {
		return v
	}
	return base64Prefix + base64.StdEncoding.EncodeToString([]byte(v)) + base64Suffix
}

// ReadStringMember returns the top-level member name of the JSON object params when it is a
// string, and false when params is not an object, has no such member, or it is not a string.
// params must be valid JSON (as a decoded message's params are).
func ReadStringMember(params []byte, name string) (string, bool) {
	p := trimSpace(params)
	if len(p) < 2 || p[0] != '{' {
		return "", false
	}
	vs, ve := findMember(p, name)
	if vs < 0 || p[vs] != '"' {
		return "", false
	}
	return unquote(p[vs:ve]), true
}
