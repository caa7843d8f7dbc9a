package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ID is a JSON-RPC request id kept as its exact JSON text: a string or an
// integer. The text is echoed byte for byte, so an integer id of any length
// (a 30-digit one included) keeps its digits and its type, and 0 and "" are
// ids like any other.
//
// The zero ID means "absent": the id of a notification, or the null id of
// an error reply to a message whose id could not be read.
//
// IDs are comparable values; compare them with [ID.Key], which treats
// different spellings of the same string as one id.
type ID struct{ raw string }

// NewIntID returns the integer id n.
func NewIntID(n int64) ID {
	return ID{raw: strconv.FormatInt(n, 10)}
}

// NewStringID returns the string id s, encoded as a JSON string (invalid
// UTF-8 in s becomes U+FFFD).
func NewStringID(s string) ID {
	return ID{raw: string(appendString(nil, s))}
}

// ParseID reads an id from raw JSON text, ignoring surrounding whitespace.
// It accepts a JSON string (valid UTF-8) or a JSON integer: an optional '-'
// and digits, with no fraction and no exponent. It rejects null, numbers
// with a fraction or an exponent, booleans, objects and arrays, and returns
// the zero ID with the error.
func ParseID(raw []byte) (ID, error) {
	raw = trimSpace(raw)
	if len(raw) == 0 {
		return ID{}, errors.New("id must be a string or an integer, got nothing")
	}
	switch c := raw[0]; {
	case c == '"':
		if !json.Valid(raw) {
			return ID{}, errors.New("id is not a valid JSON string")
		}
		if !utf8.Valid(raw) {
			return ID{}, errors.New("id string is not valid UTF-8")
		}
		return ID{raw: string(raw)}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		if isInteger(raw) {
			return ID{raw: string(raw)}, nil
		}
		if json.Valid(raw) {
			return ID{}, errors.New("id must be an integer, without fraction or exponent")
		}
		return ID{}, errors.New("id is not a valid JSON number")
	case c == 'n':
		return ID{}, errors.New("id must not be null")
	case c == 't' || c == 'f':
		return ID{}, errors.New("id must be a string or an integer, got a boolean")
	case c == '{':
		return ID{}, errors.New("id must be a string or an integer, got an object")
	case c == '[':
		return ID{}, errors.New("id must be a string or an integer, got an array")
	default:
		return ID{}, errors.New("id must be a string or an integer")
	}
}

// IsZero reports whether the id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// String returns the id's JSON text, such as 5 or "abc", or null for the
// zero ID.
func (id ID) String() string {
	if id.raw == "" {
		return "null"
	}
	return id.raw
}

// Key returns the id's identity as a string, for map keys: two ids have the
// same key when a JSON parser reads them as the same value. So "abc" and
// "\u0061bc" share a key, while 5 and "5" do not. The zero ID's key is "".
// Key does not allocate for integers and for strings without escapes.
func (id ID) Key() string {
	r := id.raw
	if r == "" {
		return ""
	}
	if r[0] != '"' {
		if r == "-0" {
			return "0"
		}
		return r // an integer: its JSON text is already canonical
	}
	// A string: the key is '"' followed by its decoded value (no closing
	// quote); integer keys never start with '"', so types cannot collide.
	if strings.IndexByte(r, '\\') < 0 {
		return r[:len(r)-1]
	}
	var s string
	if err := json.Unmarshal([]byte(r), &s); err != nil {
		return r // unreachable for an ID built by this package
	}
	return `"` + s
}

// MarshalJSON returns the id's JSON text, or null for the zero ID.
func (id ID) MarshalJSON() ([]byte, error) {
	return []byte(id.String()), nil
}

// UnmarshalJSON reads an id by the rules of [ParseID]; null is an error.
func (id *ID) UnmarshalJSON(b []byte) error {
	v, err := ParseID(b)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Message is one decoded JSON-RPC 2.0 message: a request (Method and ID), a
// notification (Method, zero ID) or a response (Result or Error, no
// Method). Params and Result are copies: they stay valid after the buffer
// given to [Decode] is reused.
type Message struct {
	ID     ID              // zero for notifications
	Method string          // empty for responses
	Params json.RawMessage // nil when absent
	Result json.RawMessage // responses only
	Error  *WireError      // responses only

	valid bool // read by Decode, which checked the whole message: its parts are valid JSON
}

// IsRequest reports whether m is a request: a method and an id.
func (m *Message) IsRequest() bool { return m.Method != "" && !m.ID.IsZero() }

// IsNotification reports whether m is a notification: a method and no id.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID.IsZero() }

// IsResponse reports whether m is a response: no method, and a result or an
// error. A result always comes with an id; an error response has the zero ID
// when the peer could not read the id of the request it answers (JSON-RPC's
// id null). Such a response matches no request, and must not be answered.
func (m *Message) IsResponse() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

// Members of a message, as bits for duplicate detection.
const (
	memberJSONRPC = 1 << iota
	memberID
	memberMethod
	memberParams
	memberResult
	memberError
)

// Decode parses one JSON-RPC 2.0 message: one line of stdio, or one HTTP
// body. It does not keep data: the returned message owns its memory.
//
// On failure it returns a [WireError] ready to send back:
//   - data that is not valid JSON: [CodeParseError], and a nil message (the
//     reply uses id null);
//   - a JSON array (a batch): [CodeInvalidRequest] "batches are not
//     supported";
//   - anything else malformed: [CodeInvalidRequest] with a specific message.
//     That covers a value that is not an object, a duplicated member,
//     "jsonrpc" other than "2.0", an id that is neither a string nor an
//     integer (or null in a request), a method that is not a non-empty
//     string, params that are not an object or an array, a request that
//     carries result or error, a response with params, with both result and
//     error or a result without an id, a message with neither method nor
//     id, and a message that is not valid UTF-8.
//
// JSON nested deeper than [MaxNestingDepth] levels is a [CodeParseError]
// "JSON nested deeper than 10000 levels": the cost of a message is bounded
// by its size.
//
// When the id could be read, the message is non-nil with its ID set (and
// whatever else was read) even though the error is not, so the caller can
// answer with that id; otherwise it is nil.
//
// Members other than the six of JSON-RPC are ignored. Member names are
// case-sensitive. "error": null counts as no error, so a peer that writes
// both "result" and "error": null is understood.
func Decode(data []byte) (*Message, *WireError) {
	if !json.Valid(data) {
		return nil, parseError(data)
	}
	i := skipSpace(data, 0)
	switch data[i] {
	case '{':
	case '[':
		return nil, ErrInvalidRequest("batches are not supported")
	default:
		return nil, ErrInvalidRequest("message must be a JSON object")
	}

	// data is valid JSON, so the walk below needs no error checks.
	var jsonrpc, id, method, params, result, errObj []byte
	var seen int
	i = skipSpace(data, i+1)
	for data[i] != '}' {
		ks := i
		i = skipString(data, i)
		key := data[ks:i]
		i = skipSpace(data, i)
		i = skipSpace(data, i+1) // ':'
		vs := i
		i = skipValue(data, i)
		val := data[vs:i]
		var bit int
		switch memberName(key) {
		case "jsonrpc":
			bit, jsonrpc = memberJSONRPC, val
		case "id":
			bit, id = memberID, val
		case "method":
			bit, method = memberMethod, val
		case "params":
			bit, params = memberParams, val
		case "result":
			bit, result = memberResult, val
		case "error":
			bit, errObj = memberError, val
		}
		if seen&bit != 0 {
			return nil, ErrInvalidRequest("duplicate member %s", key)
		}
		seen |= bit
		i = skipSpace(data, i)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}

	m := Message{valid: true}
	idNull := false
	if id != nil {
		if isNull(id) {
			idNull = true
		} else {
			v, err := ParseID(id)
			if err != nil {
				return nil, ErrInvalidRequest("%v", err)
			}
			m.ID = v
		}
	}
	fail := func(e *WireError) (*Message, *WireError) {
		if m.ID.IsZero() {
			return nil, e
		}
		return &m, e
	}

	if jsonrpc == nil {
		return fail(ErrInvalidRequest(`missing "jsonrpc": "2.0"`))
	}
	if string(jsonrpc) != `"2.0"` && !escapedEquals(jsonrpc, "2.0") {
		return fail(ErrInvalidRequest(`"jsonrpc" must be "2.0"`))
	}
	// encoding/json accepts invalid UTF-8 inside strings (and would turn it into U+FFFD), but
	// MCP messages must be UTF-8: refuse them, with the id when it could be read.
	if !utf8.Valid(data) {
		return fail(ErrInvalidRequest("message is not valid UTF-8"))
	}

	if errObj != nil && isNull(errObj) {
		errObj = nil
	}
	if method != nil {
		if method[0] != '"' {
			return fail(ErrInvalidRequest("method must be a string"))
		}
		m.Method = unquote(method)
		switch {
		case m.Method == "":
			return fail(ErrInvalidRequest("method must not be empty"))
		case idNull:
			return fail(ErrInvalidRequest("id must not be null"))
		case result != nil || errObj != nil:
			return fail(ErrInvalidRequest("a request or notification must not have result or error"))
		}
		if params != nil {
			if params[0] != '{' && params[0] != '[' {
				return fail(ErrInvalidRequest("params must be an object or an array"))
			}
			m.Params = bytes.Clone(params)
		}
		return &m, nil
	}

	// No method: a response, or nothing valid.
	switch {
	case result == nil && errObj == nil:
		if id == nil {
			return fail(ErrInvalidRequest("message has no method and no id"))
		}
		return fail(ErrInvalidRequest("message has no method, result or error"))
	case result != nil && errObj != nil:
		return fail(ErrInvalidRequest("response has both result and error"))
	case params != nil:
		return fail(ErrInvalidRequest("response must not have params"))
	case result != nil && m.ID.IsZero():
		return fail(ErrInvalidRequest("response with a result must have an id"))
	}
	if result != nil {
		m.Result = bytes.Clone(result)
		return &m, nil
	}
	we, ok := decodeWireError(errObj)
	if !ok {
		return fail(ErrInvalidRequest("error must be an object with an integer code and a string message"))
	}
	m.Error = we
	return &m, nil
}

// decodeWireError reads a response's error member strictly: an object with
// an integer "code", a string "message" and an optional "data".
func decodeWireError(raw []byte) (*WireError, bool) {
	if raw[0] != '{' {
		return nil, false
	}
	var w struct {
		Code    json.RawMessage `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &w); err != nil || w.Message == nil || !isInteger(w.Code) {
		return nil, false
	}
	code, err := strconv.ParseInt(string(w.Code), 10, 64)
	if err != nil {
		return nil, false
	}
	we := &WireError{Code: code, Message: *w.Message}
	if len(w.Data) > 0 && !isNull(w.Data) {
		we.Data = w.Data // a fresh copy made by json.Unmarshal
	}
	return we, true
}

// parseError describes invalid JSON without echoing any of it.
func parseError(data []byte) *WireError {
	if len(trimSpace(data)) == 0 {
		return ErrParse("empty message")
	}
	var se *json.SyntaxError
	if err := json.Unmarshal(data, new(json.RawMessage)); errors.As(err, &se) {
		if strings.Contains(se.Error(), "exceeded max depth") {
			return ErrParse("JSON nested deeper than " + strconv.Itoa(MaxNestingDepth) + " levels")
		}
		return ErrParse("invalid JSON at byte offset " + strconv.FormatInt(se.Offset, 10))
	}
	return ErrParse("invalid JSON")
}

// EncodeResult returns the response {"jsonrpc":"2.0","id":<id>,"result":<result>}
// as compact single-line JSON without a trailing newline. result is encoded
// with json.Marshal, with two exceptions: a json.RawMessage is used as it
// is once validated (and compacted if it spans lines), and a
// [CallToolResult] or *CallToolResult is written straight into the frame.
// A nil result encodes as null. EncodeResult fails when id is zero (a
// result always answers a request) or when result cannot be encoded.
func EncodeResult(id ID, result any) ([]byte, error) {
	if id.IsZero() {
		return nil, errors.New("protocol: encode result: zero id")
	}
	const envelope = len(`{"jsonrpc":"2.0","id":,"result":}`)
	var r *CallToolResult
	switch v := result.(type) {
	case CallToolResult:
		r = &v
	case *CallToolResult:
		r = v
	}
	if r != nil {
		// The common case, tools/call, is built in place.
		b := make([]byte, 0, envelope+len(id.raw)+r.sizeHint())
		b = appendResultPrefix(b, id)
		b, err := r.appendJSON(b)
		if err != nil {
			return nil, fmt.Errorf("protocol: encode result: %w", err)
		}
		return append(b, '}'), nil
	}
	payload, err := marshalPayload(result)
	if err != nil {
		return nil, fmt.Errorf("protocol: encode result: %w", err)
	}
	b := make([]byte, 0, envelope+len(id.raw)+len(payload))
	b = appendResultPrefix(b, id)
	b = appendCompact(b, payload)
	return append(b, '}'), nil
}

func appendResultPrefix(b []byte, id ID) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.raw...)
	return append(b, `,"result":`...)
}

// EncodeError returns the error response
// {"jsonrpc":"2.0","id":<id>,"error":{"code":..,"message":..,"data":..}}
// with id null when id is zero and "data" only when e has some. It never
// fails: a nil e is sent as [ErrInternal], and data that is not valid JSON
// is left out.
func EncodeError(id ID, e *WireError) []byte {
	if e == nil {
		e = ErrInternal()
	}
	data := e.Data
	if len(data) > 0 && !json.Valid(data) {
		data = nil
	}
	b := make([]byte, 0, 64+len(id.raw)+len(e.Message)+len(data))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.String()...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = appendCompact(b, data)
	}
	return append(b, "}}"...)
}

// EncodeNotification returns {"jsonrpc":"2.0","method":<method>,"params":<params>}
// as compact single-line JSON. params is encoded as [EncodeResult] encodes
// a result and must give a JSON object or array; "params" is left out when
// params is nil, an empty json.RawMessage or encodes as null (a nil
// pointer).
func EncodeNotification(method string, params any) ([]byte, error) {
	b, err := encodeCall(ID{}, method, params)
	if err != nil {
		return nil, fmt.Errorf("protocol: encode notification %q: %w", method, err)
	}
	return b, nil
}

// EncodeRequest returns {"jsonrpc":"2.0","id":<id>,"method":<method>,"params":<params>}
// as compact single-line JSON, params treated as [EncodeNotification]
// treats them. It fails when id is zero, since a request without an id is a
// notification.
func EncodeRequest(id ID, method string, params any) ([]byte, error) {
	if id.IsZero() {
		return nil, fmt.Errorf("protocol: encode request %q: zero id", method)
	}
	b, err := encodeCall(id, method, params)
	if err != nil {
		return nil, fmt.Errorf("protocol: encode request %q: %w", method, err)
	}
	return b, nil
}

func encodeCall(id ID, method string, params any) ([]byte, error) {
	var payload []byte
	if !isNilPayload(params) {
		var err error
		if payload, err = marshalPayload(params); err != nil {
			return nil, err
		}
		switch p := trimSpace(payload); {
		case isNull(p):
			payload = nil // a nil pointer: no params
		case p[0] != '{' && p[0] != '[':
			return nil, errors.New("params must encode as a JSON object or array")
		}
	}
	b := make([]byte, 0, 48+len(id.raw)+len(method)+len(payload))
	b = append(b, `{"jsonrpc":"2.0",`...)
	if !id.IsZero() {
		b = append(b, `"id":`...)
		b = append(b, id.raw...)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = appendString(b, method)
	if payload != nil {
		b = append(b, `,"params":`...)
		b = appendCompact(b, payload)
	}
	return append(b, '}'), nil
}

func isNilPayload(v any) bool {
	switch p := v.(type) {
	case nil:
		return true
	case json.RawMessage:
		return len(p) == 0
	}
	return false
}

// marshalPayload encodes v; a json.RawMessage is only validated, since
// json.Marshal would copy it for nothing.
func marshalPayload(v any) ([]byte, error) {
	switch p := v.(type) {
	case json.RawMessage:
		if len(p) == 0 {
			return []byte("null"), nil
		}
		if !json.Valid(p) {
			return nil, errors.New("invalid json.RawMessage")
		}
		return p, nil
	case *json.RawMessage:
		if p == nil {
			return []byte("null"), nil
		}
		return marshalPayload(*p)
	}
	return json.Marshal(v)
}

// appendCompact appends valid JSON, removing the whitespace that would break
// a line into several. A newline can only be whitespace in valid JSON (one
// inside a string is escaped), so text without '\n' and '\r' is copied as is.
func appendCompact(dst, src []byte) []byte {
	if bytes.IndexByte(src, '\n') < 0 && bytes.IndexByte(src, '\r') < 0 {
		return append(dst, trimSpace(src)...)
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, src); err != nil {
		// Unreachable: callers pass validated JSON. Fall back to dropping
		// line breaks, which keeps the frame on one line.
		for _, c := range trimSpace(src) {
			if c != '\n' && c != '\r' {
				dst = append(dst, c)
			}
		}
		return dst
	}
	return buf.Bytes()
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. It escapes what JSON requires
// plus U+2028 and U+2029, replaces invalid UTF-8 with U+FFFD, and leaves
// <, > and & alone (the output is never embedded in HTML).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// unquote decodes a valid JSON string token.
func unquote(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "" // unreachable: raw is a valid JSON string
	}
	return s
}

// memberName returns the name of a member from its valid JSON string token,
// without allocating when it has no escapes.
func memberName(key []byte) string {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		switch string(inner) { // compiled without a conversion
		case "jsonrpc":
			return "jsonrpc"
		case "id":
			return "id"
		case "method":
			return "method"
		case "params":
			return "params"
		case "result":
			return "result"
		case "error":
			return "error"
		}
		return ""
	}
	return unquote(key)
}

// escapedEquals reports whether the JSON string token raw decodes to want.
func escapedEquals(raw []byte, want string) bool {
	return raw[0] == '"' && bytes.IndexByte(raw, '\\') >= 0 && unquote(raw) == want
}

// isInteger reports whether b is exactly a JSON integer: an optional '-',
// then 0 or a digit string without leading zero.
func isInteger(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isNull(b []byte) bool { return string(b) == "null" }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// The skip functions walk JSON already checked by json.Valid; each returns
// the index just past what it skipped.

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(data)
	default: // number, true, false or null
		for i < len(data) && !isSpace(data[i]) && data[i] != ',' && data[i] != '}' && data[i] != ']' {
			i++
		}
		return i
	}
}
