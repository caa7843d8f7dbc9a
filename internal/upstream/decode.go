package upstream

import (
	"bytes"
	"unicode/utf8"

	"github.com/toolgrain/toolgrain/protocol"
)

// decodeLine decodes one message read from a stdio upstream: an answer the upstream's scanner
// reads (scanResult), else by protocol.Decode.
func decodeLine(line []byte) (*protocol.Message, *protocol.WireError) {
	if key, result, ok := scanResult(line); ok {
		if id, err := protocol.ParseID(key); err == nil {
			return &protocol.Message{ID: id, Result: bytes.Clone(result)}, nil
		}
	}
	return protocol.Decode(line)
}

// scanResult reads the answer to a request, nearly every line a stdio upstream writes under
// load: {"jsonrpc":"2.0","id":ID,"result":{...}}, its members in any order, ID a plain integer.
// The line is checked as encoding/json would check it (validJSON, in one pass without its state
// machine's call per byte), and as UTF-8; then its members are read. It returns the id's text,
// which is its key, and the result, both slices of line; false for anything else (an error, a
// request, a notification, a string id, a member it does not take), which protocol.Decode
// reads.
func scanResult(line []byte) (key, result []byte, ok bool) {
	if !validJSON(line) || !utf8.Valid(line) {
		return nil, nil, false
	}
	i := skipWS(line, 0)
	if line[i] != '{' {
		return nil, nil, false
	}
	jsonrpc := false
	i = skipWS(line, i+1)
	for line[i] != '}' {
		// line is valid JSON: a member's name, a colon and a value come next.
		ks := i
		i = skipString(line, i)
		name := line[ks:i]
		i = skipWS(line, skipWS(line, i)+1)
		vs := i
		i = skipValue(line, i)
		val := line[vs:i]
		switch string(name) {
		case `"jsonrpc"`:
			if jsonrpc || string(val) != `"2.0"` {
				return nil, nil, false
			}
			jsonrpc = true
		case `"id"`:
			if key != nil || !plainInt(val) {
				return nil, nil, false
			}
			key = val
		case `"result"`:
			if result != nil || val[0] != '{' {
				return nil, nil, false
			}
			result = val
		default:
			return nil, nil, false // error, method, params, an escaped name, an unknown member
		}
		i = skipWS(line, i)
		if line[i] == ',' {
			i = skipWS(line, i+1)
		}
	}
	return key, result, jsonrpc && key != nil && result != nil
}

// plainInt reports whether b, a JSON number, is an integer in its canonical text: 0, or digits
// without a leading zero, with a sign, and not -0, at most 18 digits (an int64).
func plainInt(b []byte) bool {
	d := b
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 || (d[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// The walk of valid JSON, after validJSON.

func skipWS(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	return i
}

// validJSON reports whether b is one JSON value (RFC 8259), with white space around it, as
// encoding/json's Valid does (neither checks the UTF-8 of strings). Nesting deeper than
// maxDepth is reported invalid, as the gateway passes such a message to the general decoder.
func validJSON(b []byte) bool {
	v := validator{b: b}
	v.ws()
	if !v.value(0) {
		return false
	}
	v.ws()
	return v.i == len(v.b)
}

// maxDepth bounds the nesting validJSON follows.
const maxDepth = 1000

type validator struct {
	b []byte
	i int
}

func (v *validator) ws() {
	for v.i < len(v.b) && isSpace(v.b[v.i]) {
		v.i++
	}
}

func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '"':
		return v.str()
	case c == '{':
		if depth >= maxDepth {
			return false
		}
		v.i++
		v.ws()
		if v.i < len(v.b) && v.b[v.i] == '}' {
			v.i++
			return true
		}
		for {
			if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
				return false
			}
			v.ws()
			if v.i >= len(v.b) || v.b[v.i] != ':' {
				return false
			}
			v.i++
			v.ws()
			if !v.value(depth + 1) {
				return false
			}
			v.ws()
			if v.i >= len(v.b) {
				return false
			}
			switch v.b[v.i] {
			case ',':
				v.i++
				v.ws()
			case '}':
				v.i++
				return true
			default:
				return false
			}
		}
	case c == '[':
		if depth >= maxDepth {
			return false
		}
		v.i++
		v.ws()
		if v.i < len(v.b) && v.b[v.i] == ']' {
			v.i++
			return true
		}
		for {
			if !v.value(depth + 1) {
				return false
			}
			v.ws()
			if v.i >= len(v.b) {
				return false
			}
			switch v.b[v.i] {
			case ',':
				v.i++
				v.ws()
			case ']':
				v.i++
				return true
			default:
				return false
			}
		}
	case c == 't':
		return v.lit("true")
	case c == 'f':
		return v.lit("false")
	case c == 'n':
		return v.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return v.num()
	}
	return false
}

func (v *validator) lit(s string) bool {
	if !bytes.HasPrefix(v.b[v.i:], []byte(s)) {
		return false
	}
	v.i += len(s)
	return true
}

// str reads a string: no control characters, and only JSON's escapes.
func (v *validator) str() bool {
	b := v.b
	i := v.i + 1
	for i < len(b) {
		c := b[i]
		if plain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			v.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return false
				}
				i += 6
			default:
				return false
			}
		default:
			i++
		}
	}
	return false
}

// plain are the bytes a string holds as they are: not a quote, a backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// num reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *validator) num() bool {
	b := v.b
	i := v.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	v.i = i
	return true
}
