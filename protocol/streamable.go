package protocol

import (
	"crypto/rand"
	"encoding/json"
	"mime"
	"strconv"
	"strings"
)

// Streamable HTTP transport mechanics (MCP 2025-11-25, basic/transports#streamable-http):
// header names, session ids, content negotiation, server-sent events and frame classification.
// The transport itself (sessions, streams, security) lives in the root package.

// Header names of the Streamable HTTP transport, in canonical form.
const (
	// HeaderSessionID carries the session id: issued with the InitializeResult, sent back by the
	// client on every later request.
	HeaderSessionID = "Mcp-Session-Id"
	// HeaderProtocolVersion carries the negotiated protocol version on every request after
	// initialize.
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	// HeaderLastEventID is sent by a client resuming an SSE stream.
	HeaderLastEventID = "Last-Event-Id"
)

// Media types of the Streamable HTTP transport.
const (
	MediaTypeJSON        = "application/json"
	MediaTypeEventStream = "text/event-stream"
)

// AssumedHTTPVersion is the protocol version a server assumes when a request after initialize
// carries no MCP-Protocol-Version header (2025-11-25: "the server SHOULD assume 2025-03-26").
const AssumedHTTPVersion = "2025-03-26"

// CodeTransportError is the JSON-RPC code of the error bodies that come with an HTTP error
// status for a transport problem (a missing or unknown session, a foreign Origin, a failed
// authentication, ...). It is in JSON-RPC's range for implementation-defined server errors and
// is what the reference TypeScript server uses for the same purpose.
const CodeTransportError int64 = -32000

// ErrTransport returns a [CodeTransportError] error whose message is "<status>: <detail>", for
// example "Not Found: session not found".
func ErrTransport(status, detail string) *WireError {
	return &WireError{Code: CodeTransportError, Message: withDetail(status, detail)}
}

// NewSessionID returns a new session id: 26 characters of base32 (128 bits) from crypto/rand,
// which are all visible ASCII as the spec requires.
func NewSessionID() string { return rand.Text() }

// ValidSessionID reports whether s can be a session id: 1 to 256 visible ASCII characters
// (0x21 to 0x7E). Anything else cannot name a session, and is answered like an unknown id.
func ValidSessionID(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7E {
			return false
		}
	}
	return true
}

// Accepts reports whether the Accept header values accept the media type mediaType ("type/sub").
// No Accept header accepts everything; "*/*" and "type/*" match; a range with q=0 refuses.
// Unparsable ranges are skipped.
func Accepts(accept []string, mediaType string) bool {
	if len(accept) == 0 {
		return true
	}
	typ, _, _ := strings.Cut(mediaType, "/")
	for _, header := range accept {
		for rest := header; rest != ""; {
			var r string
			r, rest, _ = strings.Cut(rest, ",")
			r = strings.TrimSpace(r)
			if !strings.Contains(r, ";") {
				// No parameters: what mime.ParseMediaType would do comes down to an ASCII
				// case-insensitive comparison (it lowercases the range, and a range that
				// matches holds only token characters), without its allocations.
				if asciiEqualFold(r, mediaType) || r == "*/*" || (len(r) == len(typ)+2 && asciiEqualFold(r[:len(typ)], typ) && r[len(typ):] == "/*") {
					return true
				}
				continue
			}
			mt, params, err := mime.ParseMediaType(r)
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(q, 64); err == nil && v <= 0 {
					continue
				}
			}
			if mt == mediaType || mt == "*/*" || mt == typ+"/*" {
				return true
			}
		}
	}
	return false
}

// asciiEqualFold reports whether s and t are equal under ASCII case folding. (strings.EqualFold
// also folds other letters, such as the Kelvin sign, which mime.ParseMediaType refuses.)
func asciiEqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// AppendSSE appends frame to dst as one server-sent event of type "message", the event type
// MCP clients read. A frame from this package's encoders is one line, so it fits a single
// "data:" field; any line breaks in other input are split across several data fields, which the
// receiver joins back with "\n".
func AppendSSE(dst, frame []byte) []byte {
	dst = append(dst, "event: message\n"...)
	for {
		i := indexLineBreak(frame)
		if i < 0 {
			break
		}
		dst = append(dst, "data: "...)
		dst = append(dst, frame[:i]...)
		dst = append(dst, '\n')
		if frame[i] == '\r' && i+1 < len(frame) && frame[i+1] == '\n' {
			i++
		}
		frame = frame[i+1:]
	}
	dst = append(dst, "data: "...)
	dst = append(dst, frame...)
	return append(dst, "\n\n"...)
}

// AppendSSEWithID appends frame to dst as [AppendSSE] does, preceded by the event id id, which
// a client resuming the stream sends back as Last-Event-ID. id must hold no line break.
func AppendSSEWithID(dst []byte, id string, frame []byte) []byte {
	dst = append(dst, "id: "...)
	dst = append(dst, id...)
	dst = append(dst, '\n')
	return AppendSSE(dst, frame)
}

// AppendSSEPriming appends the priming event that starts a resumable stream: the event id id, a
// retry field of retryMillis milliseconds (the delay a client waits before reconnecting) and
// empty data, which carries no message.
func AppendSSEPriming(dst []byte, id string, retryMillis int64) []byte {
	dst = append(dst, "id: "...)
	dst = append(dst, id...)
	dst = append(dst, "\nretry: "...)
	dst = strconv.AppendInt(dst, retryMillis, 10)
	return append(dst, "\ndata: \n\n"...)
}

func indexLineBreak(b []byte) int {
	for i, c := range b {
		if c == '\n' || c == '\r' {
			return i
		}
	}
	return -1
}

// FrameKind is what an encoded JSON-RPC message is.
type FrameKind uint8

// The kinds of frame.
const (
	FrameInvalid      FrameKind = iota // not a JSON-RPC object
	FrameRequest                       // method and id
	FrameNotification                  // method, no id
	FrameResult                        // a response with a result
	FrameError                         // a response with an error
	FrameBatch                         // a JSON array: the responses to a JSON-RPC batch
)

// String returns the kind's name.
func (k FrameKind) String() string {
	switch k {
	case FrameRequest:
		return "request"
	case FrameNotification:
		return "notification"
	case FrameResult:
		return "result"
	case FrameError:
		return "error"
	case FrameBatch:
		return "batch"
	}
	return "invalid"
}

// IsResponse reports whether k is a result or an error, or the batch of them that answers a
// JSON-RPC batch (the server sends no other batch).
func (k FrameKind) IsResponse() bool { return k == FrameResult || k == FrameError || k == FrameBatch }

// KindOf classifies one encoded message by its top-level members, without decoding it. It is
// meant for frames the server itself encoded (valid JSON objects): it stops at the first
// "result" or "error" member, so classifying a response costs only the bytes before it, which
// the encoders of this package put first. A JSON array is [FrameBatch]; other input that is not a
// JSON object is FrameInvalid, and malformed input gets no guarantee beyond not panicking.
func KindOf(frame []byte) FrameKind {
	n := len(frame)
	i := skipSpace(frame, 0)
	if i < n && frame[i] == '[' {
		return FrameBatch
	}
	if i >= n || frame[i] != '{' {
		return FrameInvalid
	}
	var hasID, hasMethod bool
	i = skipSpace(frame, i+1)
	for i < n && frame[i] == '"' {
		ks := i
		i = skipString(frame, i)
		key := frame[ks:i]
		if len(key) < 2 || key[len(key)-1] != '"' {
			return FrameInvalid
		}
		i = skipSpace(frame, i)
		if i >= n || frame[i] != ':' {
			return FrameInvalid
		}
		i = skipSpace(frame, i+1)
		if i >= n {
			return FrameInvalid
		}
		vs := i
		i = skipValue(frame, i)
		switch memberName(key) {
		case "result":
			return FrameResult
		case "error":
			if !isNull(frame[vs:i]) {
				return FrameError
			}
		case "method":
			hasMethod = true
		case "id":
			hasID = !isNull(frame[vs:i])
		}
		i = skipSpace(frame, i)
		if i < n && frame[i] == ',' {
			i = skipSpace(frame, i+1)
		}
	}
	switch {
	case hasMethod && hasID:
		return FrameRequest
	case hasMethod:
		return FrameNotification
	}
	return FrameInvalid
}

// ErrorCodeOf returns the code of an encoded error response (a frame of this package's
// [EncodeError]), and 0 for any other frame.
func ErrorCodeOf(frame []byte) int64 {
	p := trimSpace(frame)
	if len(p) < 2 || p[0] != '{' || !json.Valid(p) {
		return 0
	}
	es, ee := findMember(p, "error")
	if es < 0 || p[es] != '{' {
		return 0
	}
	cs, ce := findMember(p[es:ee], "code")
	if cs < 0 {
		return 0
	}
	code, err := strconv.ParseInt(string(p[es+cs:es+ce]), 10, 64)
	if err != nil {
		return 0
	}
	return code
}
