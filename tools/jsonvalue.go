package tools

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeValue decodes JSON text into the values the validator works on: map[string]any, []any,
// string, json.Number, bool and nil — what jsonschema.UnmarshalJSON returns, member for member
// (a duplicated member keeps its last value, invalid UTF-8 in strings becomes U+FFFD). It fails
// on text that is not exactly one JSON value.
//
// It exists because jsonschema.UnmarshalJSON reads through a json.Decoder, which copies the
// whole input into a buffer of its own and walks it with reflection: on a tools/call that was
// about a quarter of the bytes the engine allocated per call.
func decodeValue(raw []byte) (any, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	return decodeValid(raw), true
}

// decodeValid is decodeValue for raw that json.Valid accepted.
func decodeValid(raw []byte) any {
	d := valueDecoder{data: raw}
	return d.value()
}

// valueDecoder walks JSON already checked by json.Valid, so it needs no error checks.
type valueDecoder struct {
	data []byte
	i    int
}

func (d *valueDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *valueDecoder) value() any {
	d.space()
	switch c := d.data[d.i]; c {
	case '{':
		d.i++
		m := make(map[string]any)
		d.space()
		if d.data[d.i] == '}' {
			d.i++
			return m
		}
		for {
			d.space()
			k := d.str()
			d.space()
			d.i++ // ':'
			m[k] = d.value()
			d.space()
			c := d.data[d.i]
			d.i++
			if c == '}' {
				return m
			}
		}
	case '[':
		d.i++
		a := []any{}
		d.space()
		if d.data[d.i] == ']' {
			d.i++
			return a
		}
		for {
			a = append(a, d.value())
			d.space()
			c := d.data[d.i]
			d.i++
			if c == ']' {
				return a
			}
		}
	case '"':
		return d.str()
	case 't':
		d.i += len("true")
		return true
	case 'f':
		d.i += len("false")
		return false
	case 'n':
		d.i += len("null")
		return nil
	default: // a number
		s := d.i
		for d.i < len(d.data) {
			switch d.data[d.i] {
			case ' ', '\t', '\n', '\r', ',', '}', ']':
				return json.Number(d.data[s:d.i])
			}
			d.i++
		}
		return json.Number(d.data[s:d.i])
	}
}

// str reads a string token at d.i.
func (d *valueDecoder) str() string {
	s := d.i
	esc := false
	for d.i++; d.i < len(d.data); d.i++ {
		switch d.data[d.i] {
		case '\\':
			esc = true
			d.i++
		case '"':
			d.i++
			tok := d.data[s:d.i]
			inner := tok[1 : len(tok)-1]
			if !esc && utf8.Valid(inner) {
				return string(inner)
			}
			var v string
			_ = json.Unmarshal(tok, &v) // escapes and invalid UTF-8, as encoding/json reads them
			return v
		}
	}
	return "" // unreachable for valid JSON
}
