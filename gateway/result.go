package gateway

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/toolgrain/toolgrain/protocol"
)

// decodeResult reads a tools/call result. The common shape (text contents, the members of
// either era) is read by a scanner of its own: the message was checked to be valid JSON when it
// was read, and encoding/json would check it again, then reflect over it; anything else goes to
// encoding/json.
func decodeResult(raw []byte, res *callResult) error {
	if fastResult(raw, res) {
		return nil
	}
	// A result of its own for encoding/json, which keeps what it decodes into on the heap: res
	// can stay on its caller's stack.
	var slow callResult
	if err := json.Unmarshal(raw, &slow); err != nil {
		return err
	}
	*res = slow
	return nil
}

// fastResult reads raw into res when every member is one it knows and every content block is a
// text block with plain members; it reports whether it did. raw is valid JSON.
func fastResult(raw []byte, res *callResult) bool {
	s := scan{b: raw}
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	for {
		key, ok := s.plainBytes()
		if !ok || !s.byte(':') {
			return false
		}
		switch string(key) {
		case "content":
			if !s.contents(&res.Content) {
				return false
			}
		case "isError":
			switch {
			case s.literal("true"):
				res.IsError = true
			case s.literal("false"):
			default:
				return false
			}
		case "resultType":
			v, ok := s.plainString()
			if !ok {
				return false
			}
			res.ResultType = v
		case "structuredContent":
			res.StructuredContent = s.value()
		case "_meta":
			res.Meta = s.value()
		default:
			return false // inputRequests, requestState and the unknown: encoding/json
		}
		if s.byte(',') {
			continue
		}
		return s.byte('}')
	}
}

// scan walks valid JSON.
type scan struct {
	b []byte
	i int
}

func (s *scan) skipSpace() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// byte consumes c, after spaces, if it comes next.
func (s *scan) byte(c byte) bool {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scan) literal(lit string) bool {
	s.skipSpace()
	if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.i += len(lit)
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters, as valid UTF-8.
func (s *scan) plainString() (string, bool) {
	b, ok := s.plainBytes()
	return string(b), ok
}

// plainBytes is plainString's text, in raw.
func (s *scan) plainBytes() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			str := s.b[start:s.i]
			s.i++
			if !utf8.Valid(str) {
				return nil, false
			}
			return str, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// value returns the next value as it is, skipping it: a slice of raw, which is the message's own
// copy.
func (s *scan) value() json.RawMessage {
	s.skipSpace()
	start := s.i
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			s.i++
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			s.i++
			if depth == 0 {
				return json.RawMessage(s.b[start:s.i:s.i])
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return json.RawMessage(s.b[start:s.i:s.i])
			}
			if depth < 0 {
				return nil
			}
		case ',':
			if depth == 0 {
				return json.RawMessage(s.b[start:s.i:s.i])
			}
		}
		s.i++
	}
	return json.RawMessage(s.b[start:s.i:s.i])
}

// contents reads an array of text blocks, each {"type":"text","text":"..."} in any order.
func (s *scan) contents(out *[]protocol.Content) bool {
	if !s.byte('[') {
		return false
	}
	if s.byte(']') {
		*out = []protocol.Content{}
		return true
	}
	var list []protocol.Content
	for {
		if !s.byte('{') {
			return false
		}
		isText, seenText := false, false
		var text string
		for {
			key, ok := s.plainBytes()
			if !ok || !s.byte(':') {
				return false
			}
			v, ok := s.plainBytes()
			if !ok {
				return false
			}
			switch string(key) {
			case "type":
				isText = string(v) == protocol.ContentText
			case "text":
				text, seenText = string(v), true
			default:
				return false
			}
			if s.byte(',') {
				continue
			}
			if !s.byte('}') {
				return false
			}
			break
		}
		if !isText || !seenText {
			return false
		}
		list = append(list, protocol.TextContent(text))
		if s.byte(',') {
			continue
		}
		if !s.byte(']') {
			return false
		}
		*out = list
		return true
	}
}
