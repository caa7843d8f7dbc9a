package gateway

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolgrain/toolgrain/protocol"
)

// The hand-written reading of a tools/call result (fastResult) against the same reading on a
// jsontext.Decoder.
//
//	go test -run '^$' -bench ReadResult -count 8 ./gateway

func fastResultJT(d *jsontext.Decoder, bb *bytes.Buffer, raw []byte, res *callResult) bool {
	bb.Reset()
	bb.Write(raw)
	d.Reset(bb, jsontext.AllowDuplicateNames(true))
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
			if !contentsJT(d, &res.Content) {
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
			res.StructuredContent = json.RawMessage(v)
		case `"_meta"`:
			v, err := d.ReadValue()
			if err != nil {
				return false
			}
			res.Meta = json.RawMessage(v)
		default:
			return false
		}
	}
	tok, err := d.ReadToken()
	return err == nil && tok.Kind() == '}'
}

func contentsJT(d *jsontext.Decoder, out *[]protocol.Content) bool {
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
				return false
			}
		}
		if _, err := d.ReadToken(); err != nil || !isText || !seenText {
			return false
		}
		list = append(list, protocol.TextContent(text))
	}
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	*out = list
	return true
}

var results = map[string][]byte{
	"echo":       []byte(`{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}`),
	"escaped":    []byte(`{"content":[{"type":"text","text":"line one\nline \"two\""}],"isError":false}`),
	"structured": []byte(`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1,"s":"a,b}","list":[1,2,3,{"k":"v"}]}}`),
}

func TestReadResultAgrees(t *testing.T) {
	d, bb := jsontext.NewDecoder(new(bytes.Buffer)), new(bytes.Buffer)
	for name, raw := range results {
		var a, b callResult
		if !fastResultJT(d, bb, raw, &a) {
			t.Fatalf("%s: jsontext did not read it", name)
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		if !bytes.Equal(x, y) {
			t.Errorf("%s: %s against %s", name, x, y)
		}
	}
}

func BenchmarkReadResult(b *testing.B) {
	for _, name := range []string{"echo", "escaped", "structured"} {
		raw := results[name]
		b.Run(name+"/hand-written", func(b *testing.B) {
			for b.Loop() {
				var res callResult
				_ = decodeResult(raw, &res)
			}
		})
		b.Run(name+"/jsontext", func(b *testing.B) {
			d, bb := jsontext.NewDecoder(new(bytes.Buffer)), new(bytes.Buffer)
			for b.Loop() {
				var res callResult
				if !fastResultJT(d, bb, raw, &res) {
					b.Fatal("not read")
				}
			}
		})
	}
}
