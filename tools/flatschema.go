package tools

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// flatSchema is the fast path of validation for the schemas most tools have: an object of
// named members with simple types, some of them required. It reads the raw JSON (already
// checked by json.Valid) without decoding it, and only ever answers "valid": on anything it
// cannot prove valid (a member it does not know the type of, a number it would have to
// round, an escaped key, a duplicated member, a broken constraint) it answers "not sure", and
// the arguments go through the full validator, which writes the feedback. So the feedback a
// client gets is the validator's, byte for byte, and a valid call costs no decoding.
//
// A schema has a flat form when its root holds only "type": "object", "properties",
// "required", "additionalProperties" as a boolean, and annotations; and each property's
// schema only "type" (a name or a list of names), "minimum" and "maximum", "enum" of strings,
// and annotations (or is the schema true).
type flatSchema struct {
	props      []flatProp
	required   uint64 // bit i: props[i] is required
	additional bool   // members not in props are allowed
}

// flatProp is one member of a flatSchema.
type flatProp struct {
	name     string
	types    uint8 // flat* bits; 0: any value
	min, max float64
	hasMin   bool
	hasMax   bool
	enum     []string // nil: no enum
}

const (
	flatNull = 1 << iota
	flatBool
	flatInteger
	flatNumber
	flatString
	flatObject
	flatArray
)

var flatTypes = map[string]uint8{
	"null": flatNull, "boolean": flatBool, "integer": flatInteger, "number": flatNumber,
	"string": flatString, "object": flatObject, "array": flatArray,
}

// flatRootKeywords and flatPropKeywords are the keywords a flat form understands, besides
// the annotations (annotationKeywords, less "$schema" and "$id" inside a property).
var (
	flatRootKeywords = map[string]bool{"properties": true, "required": true, "additionalProperties": true}
	flatPropKeywords = map[string]bool{"type": true, "minimum": true, "maximum": true, "enum": true}
)

// compileFlat returns the flat form of a schema document (as decodeValue returns it), or nil
// when it has none.
func compileFlat(doc any) *flatSchema {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	if t, ok := obj["type"]; ok && t != "object" {
		return nil
	}
	for k := range obj {
		if !flatRootKeywords[k] && !annotationKeywords[k] {
			return nil
		}
	}
	f := &flatSchema{additional: true}
	if a, ok := obj["additionalProperties"]; ok {
		b, isBool := a.(bool)
		if !isBool {
			return nil
		}
		f.additional = b
	}
	props := map[string]any{}
	if p, ok := obj["properties"]; ok {
		if props, ok = p.(map[string]any); !ok {
			return nil
		}
	}
	if len(props) > 64 {
		return nil
	}
	index := make(map[string]int, len(props))
	for name, ps := range props {
		p, ok := compileFlatProp(name, ps)
		if !ok {
			return nil
		}
		index[name] = len(f.props)
		f.props = append(f.props, p)
	}
	if r, ok := obj["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil
		}
		for _, n := range list {
			name, ok := n.(string)
			if !ok {
				return nil
			}
			i, ok := index[name]
			if !ok {
				if len(f.props) == 64 {
					return nil
				}
				// Required but not described: any value, and it is not an additional member.
				i = len(f.props)
				index[name] = i
				f.props = append(f.props, flatProp{name: name})
			}
			f.required |= 1 << i
		}
	}
	return f
}

func compileFlatProp(name string, ps any) (flatProp, bool) {
	p := flatProp{name: name}
	if b, ok := ps.(bool); ok {
		return p, b // true accepts anything; false accepts nothing, which is not flat
	}
	obj, ok := ps.(map[string]any)
	if !ok {
		return p, false
	}
	for k := range obj {
		if !flatPropKeywords[k] && (!annotationKeywords[k] || k == "$schema" || k == "$id") {
			return p, false
		}
	}
	switch t := obj["type"].(type) {
	case nil:
		if _, ok := obj["type"]; ok {
			return p, false
		}
	case string:
		if p.types = flatTypes[t]; p.types == 0 {
			return p, false
		}
	case []any:
		for _, e := range t {
			s, _ := e.(string)
			bit := flatTypes[s]
			if bit == 0 {
				return p, false
			}
			p.types |= bit
		}
		if p.types == 0 {
			return p, false
		}
	default:
		return p, false
	}
	bound := func(k string) (float64, bool, bool) {
		v, ok := obj[k]
		if !ok {
			return 0, false, true
		}
		n, isNum := v.(json.Number)
		if !isNum {
			return 0, false, false
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) {
			return 0, false, false
		}
		return f, true, true
	}
	var okMin, okMax bool
	if p.min, p.hasMin, okMin = bound("minimum"); !okMin {
		return p, false
	}
	if p.max, p.hasMax, okMax = bound("maximum"); !okMax {
		return p, false
	}
	if e, ok := obj["enum"]; ok {
		list, ok := e.([]any)
		if !ok {
			return p, false
		}
		p.enum = make([]string, 0, len(list))
		for _, m := range list {
			s, ok := m.(string)
			if !ok {
				return p, false
			}
			p.enum = append(p.enum, s)
		}
	}
	return p, true
}

// accepts reports whether raw, an object that json.Valid accepted, is surely valid; false
// means "ask the validator".
func (f *flatSchema) accepts(raw []byte) bool {
	d := flatScanner{valueDecoder{data: raw}}
	d.space()
	if d.i >= len(d.data) || d.data[d.i] != '{' {
		return false
	}
	d.i++
	var seen uint64
	d.space()
	if d.data[d.i] == '}' {
		d.i++
	} else {
		for {
			d.space()
			key, ok := d.plainString()
			if !ok {
				return false
			}
			d.space()
			d.i++ // ':'
			d.space()
			i := f.lookup(key)
			if i < 0 {
				if !f.additional {
					return false
				}
				d.skip()
			} else {
				if seen&(1<<i) != 0 {
					return false // a duplicated member: the validator sees only the last
				}
				seen |= 1 << i
				if !f.props[i].value(&d) {
					return false
				}
			}
			d.space()
			c := d.data[d.i]
			d.i++
			if c == '}' {
				break
			}
		}
	}
	d.space()
	return d.i == len(d.data) && seen&f.required == f.required
}

func (f *flatSchema) lookup(key []byte) int {
	for i := range f.props {
		if f.props[i].name == string(key) {
			return i
		}
	}
	return -1
}

// value reads the member's value at d.i and reports whether it is surely valid.
func (p *flatProp) value(d *flatScanner) bool {
	var kind uint8
	switch d.data[d.i] {
	case '"':
		kind = flatString
		if p.enum != nil {
			s, ok := d.plainString()
			if !ok {
				return false
			}
			for _, e := range p.enum {
				if e == string(s) {
					return p.types == 0 || p.types&flatString != 0
				}
			}
			return false
		}
	case '{':
		kind = flatObject
	case '[':
		kind = flatArray
	case 't', 'f':
		kind = flatBool
	case 'n':
		kind = flatNull
	default:
		kind = flatNumber
	}
	if p.enum != nil {
		return false // a non-string value against an enum of strings
	}
	if kind != flatNumber {
		d.skip()
		return p.types == 0 || p.types&kind != 0
	}
	tok := d.number()
	integer := !bytes.ContainsAny(tok, ".eE")
	switch {
	case p.types == 0 || p.types&flatNumber != 0:
	case p.types&flatInteger != 0 && integer:
	default:
		return false // not a number the schema takes, or a fraction the validator may call an integer
	}
	if !p.hasMin && !p.hasMax {
		return true
	}
	if !integer || len(tok) > 15 {
		return false // exact comparisons only
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return false
	}
	v := float64(n)
	return (!p.hasMin || v >= p.min) && (!p.hasMax || v <= p.max)
}

// flatScanner walks JSON that json.Valid accepted, so it needs no syntax checks: a
// valueDecoder (its position and its space skipping) with the few reads the fast path needs.
type flatScanner struct{ valueDecoder }

// plainString reads the string token at d.i and returns its content when it has no escape
// and is ASCII (so it means exactly its bytes); ok is false otherwise, and d.i is past it.
func (d *flatScanner) plainString() (s []byte, ok bool) {
	start := d.i + 1
	ok = true
	for d.i++; d.i < len(d.data); d.i++ {
		switch c := d.data[d.i]; {
		case c == '\\':
			ok = false
			d.i++
		case c == '"':
			d.i++
			return d.data[start : d.i-1], ok
		case c >= utf8.RuneSelf:
			ok = false
		}
	}
	return nil, false
}

// number reads the number token at d.i.
func (d *flatScanner) number() []byte {
	s := d.i
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r', ',', '}', ']':
			return d.data[s:d.i]
		}
		d.i++
	}
	return d.data[s:d.i]
}

// skip moves past the value at d.i.
func (d *flatScanner) skip() {
	depth := 0
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case '"':
			d.plainString()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return
			}
			depth--
			if depth == 0 {
				d.i++
				return
			}
		case ',':
			if depth == 0 {
				return
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return
			}
		}
		d.i++
	}
}
