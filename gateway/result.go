package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolgrain/toolgrain/protocol"
)

// decodeResult reads a tools/call result. The common shape (text contents, structured content,
// the members of either era) is read in one pass of a jsontext.Decoder over raw; anything else
// (other content blocks, members a block does not usually carry, an input round) goes to
// encoding/json. Measured against the hand-written scanner it replaced (BENCHMARKS.md, "JSON
// scanning"): 0.24 µs slower on an echo's result, 2.5 times as fast on a text with a line break
// or a quote, or with structured content, which that scanner left to encoding/json.
func decodeResult(raw []byte, res *callResult) error {
	r := resultReaders.Get().(*resultReader)
	ok := r.read(raw, res)
	r.bb = bytes.Buffer{}
	resultReaders.Put(r)
	if ok {
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

// resultReader reads results on a jsontext.Decoder, over the result's own bytes.
type resultReader struct {
	d  *jsontext.Decoder
	bb bytes.Buffer
}

var resultReaders = sync.Pool{New: func() any {
	r := &resultReader{}
	r.d = jsontext.NewDecoder(&r.bb)
	return r
}}

// duplicateNames takes an object's duplicate names, the last one winning, as encoding/json does.
var duplicateNames = jsontext.AllowDuplicateNames(true)

// read reads raw into res when every member is one it knows and every content block a text
// block of type and text only; it reports whether it did. What it keeps of raw (structured
// content, _meta) are slices of raw.
func (r *resultReader) read(raw []byte, res *callResult) bool {
	r.bb = *bytes.NewBuffer(raw) // the decoder reads a bytes.Buffer's bytes where they are
	d := r.d
	d.Reset(&r.bb, duplicateNames)
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return false
		}
		switch string(name) {
		case `"content"`:
			if !r.contents(&res.Content) {
				return false
			}
		case `"isError"`:
			tok, err := d.ReadToken()
			if err != nil {
				return false
			}
			switch tok.Kind() {
			case 't':
				res.IsError = true
			case 'f':
				res.IsError = false
			default:
				return false
			}
		case `"resultType"`:
			tok, err := d.ReadToken()
			if err != nil || tok.Kind() != '"' {
				return false
			}
			res.ResultType = tok.String()
		case `"structuredContent"`:
			v, err := d.ReadValue()
			if err != nil {
				return false
			}
			res.StructuredContent = json.RawMessage(v[:len(v):len(v)])
		case `"_meta"`:
			v, err := d.ReadValue()
			if err != nil {
				return false
			}
			res.Meta = json.RawMessage(v[:len(v):len(v)])
		default:
			return false // inputRequests, requestState, an escaped name and the unknown
		}
	}
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '}' {
		return false
	}
	_, err := d.ReadToken()
	return err == io.EOF
}

// contents reads an array of text blocks, each {"type":"text","text":"..."} in any order.
func (r *resultReader) contents(out *[]protocol.Content) bool {
	d := r.d
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '[' {
		return false
	}
	list := []protocol.Content{}
	for d.PeekKind() == '{' {
		if _, err := d.ReadToken(); err != nil {
			return false
		}
		isText, seenText := false, false
		var text string
		for d.PeekKind() == '"' {
			name, err := d.ReadValue()
			if err != nil {
				return false
			}
			switch string(name) {
			case `"type"`:
				v, err := d.ReadValue()
				if err != nil {
					return false
				}
				isText = string(v) == `"text"`
			case `"text"`:
				tok, err := d.ReadToken()
				if err != nil || tok.Kind() != '"' {
					return false
				}
				text, seenText = tok.String(), true
			default:
				return false // annotations, _meta and the members of other blocks
			}
		}
		if tok, err := d.ReadToken(); err != nil || tok.Kind() != '}' || !isText || !seenText {
			return false
		}
		list = append(list, protocol.TextContent(text))
	}
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != ']' {
		return false
	}
	*out = list
	return true
}
