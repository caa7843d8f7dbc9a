package tools

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
)

// Schemas inferred from Go types. [Compile] infers the input schema of a tool that declares
// none from [Tool.InputType] or the In of a [Func] or [Structured] handler, and its output
// schema from [Tool.OutputType] or the Out of a [Structured] handler. The generation is
// github.com/invopop/jsonschema's (its struct tags, its type mapping); this file checks the
// types first, so that a type no schema can describe is an error naming the field rather than
// a panic, and adjusts the result to the rules of encoding/json, which decodes the arguments
// and encodes the output.

// typedHandler is a handler that knows the Go types of its arguments and of its output.
type typedHandler interface {
	Handler
	argumentType() reflect.Type
	outputType() reflect.Type // nil: the handler builds its own results
}

// inferError is a type that has no schema: the field (a Go path such as "AddIn.Opts.Hook",
// empty for the type itself) and why.
type inferError struct {
	field string
	err   error
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[json.Number]()
	jsonMarshaler     = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler   = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler     = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler   = reflect.TypeFor[encoding.TextUnmarshaler]()
	selfDescribedType = reflect.TypeFor[interface{ JSONSchema() *jsonschema.Schema }]()
)

// inferSchema returns the JSON Schema of t, whose values are JSON objects: a struct, a map with
// string keys, or a pointer to one; an interface or json.RawMessage gives {"type":"object"}.
func inferSchema(t reflect.Type) (json.RawMessage, *inferError) {
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base == rawMessageType || (base.Kind() == reflect.Interface && base.NumMethod() == 0) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	switch {
	case (base.Kind() == reflect.Struct || base.Kind() == reflect.Map) && !opaque(base):
	default:
		return nil, &inferError{err: fmt.Errorf("%s does not encode as a JSON object: use a struct or a map with string keys", t)}
	}
	w := &typeWalker{visiting: map[reflect.Type]bool{}}
	if ie := w.check(base, rootPath(base)); ie != nil {
		return nil, ie
	}
	root, err := reflectSchema(base, w.recursive)
	if err != nil {
		return nil, &inferError{err: err}
	}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, &inferError{err: fmt.Errorf("encode the schema of %s: %w", t, err)}
	}
	return b, nil
}

// rootPath names a type at the start of a field path.
func rootPath(t reflect.Type) string {
	if t.Name() != "" {
		return t.Name()
	}
	return ""
}

// reflectSchema runs the generator on t, recovering from a panic (its answer to a type it does
// not know), and adjusts the result. A recursive t is described with "$defs" and "$ref"; any
// other is inlined in full, which clients read most easily.
func reflectSchema(t reflect.Type, recursive bool) (root *jsonschema.Schema, err error) {
	defer func() {
		if v := recover(); v != nil {
			root, err = nil, fmt.Errorf("schema generator failed on %s: %v", t, v)
		}
	}()
	names := map[reflect.Type]string{}
	used := map[string]bool{}
	r := &jsonschema.Reflector{
		Anonymous:      true,
		DoNotReference: !recursive,
		ExpandedStruct: !recursive,
		Mapper:         mapType,
		Namer: func(t reflect.Type) string {
			if t.Name() == "" {
				return "" // inlined: only named types can be referred to
			}
			if n, ok := names[t]; ok {
				return n
			}
			n := defName(t)
			for i := 2; used[n]; i++ {
				n = fmt.Sprintf("%s_%d", defName(t), i)
			}
			names[t], used[n] = n, true
			return n
		},
	}
	root = r.ReflectFromType(t)
	defs := root.Definitions
	if ref, ok := strings.CutPrefix(root.Ref, "#/$defs/"); ok && defs[ref] != nil {
		adjust(defs[ref], t, defs, map[*jsonschema.Schema]bool{})
		expanded := *defs[ref]
		expanded.Definitions = defs
		root = &expanded
	} else {
		adjust(root, t, defs, map[*jsonschema.Schema]bool{})
	}
	root.Version = "" // 2020-12, the default of MCP: no need to say it
	if root.Type != "object" {
		return nil, fmt.Errorf("the schema of %s is not an object", t)
	}
	return root, nil
}

// defName is the name of t under "$defs": its Go name with every character a JSON pointer or a
// URL would need to escape replaced by '_'.
func defName(t reflect.Type) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '_'
	}, t.Name())
}

// knownToGenerator reports whether the generator has its own schema for t: time.Time (a
// date-time string) and a type with a JSONSchema method, as the generator defines it.
func knownToGenerator(t reflect.Type) bool {
	return t == timeType || t.Implements(selfDescribedType) || reflect.PointerTo(t).Implements(selfDescribedType)
}

// ownEncoding returns the schema of a type that encoding/json encodes by its own rules rather
// than from its fields or elements, or nil for a type that it does not (or that the generator
// knows).
func ownEncoding(t reflect.Type) *jsonschema.Schema {
	switch {
	case knownToGenerator(t):
		return nil
	case t == rawMessageType:
		return &jsonschema.Schema{} // any JSON value
	case t == numberType:
		return &jsonschema.Schema{Type: "number"}
	case implements(t, jsonMarshaler) || implements(t, jsonUnmarshaler):
		// Its JSON form is its own: any value, and the decoder or the output check decides.
		return &jsonschema.Schema{}
	case implements(t, textMarshaler) || implements(t, textUnmarshaler):
		return &jsonschema.Schema{Type: "string"}
	}
	return nil
}

// opaque reports whether t's schema does not come from its fields or elements.
func opaque(t reflect.Type) bool { return knownToGenerator(t) || ownEncoding(t) != nil }

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface))
}

// mapType is the generator's Mapper: the schema of a type with an encoding of its own, or nil
// to let the generator reflect it.
func mapType(t reflect.Type) *jsonschema.Schema {
	return ownEncoding(t) // a new value each time: the generator writes a field's tags into it
}

// typeWalker checks a type before the generator sees it.
type typeWalker struct {
	visiting  map[reflect.Type]bool // named structs on the current path
	recursive bool                  // a struct contains itself
}

// check reports the first part of t, at path, that no JSON Schema can describe.
func (w *typeWalker) check(t reflect.Type, path string) *inferError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if opaque(t) {
		return nil
	}
	refuse := func(why string) *inferError {
		return &inferError{field: path, err: fmt.Errorf("%s: %s", t, why)}
	}
	switch t.Kind() {
	case reflect.Chan:
		return refuse("a channel has no JSON form")
	case reflect.Func:
		return refuse("a function has no JSON form")
	case reflect.Complex64, reflect.Complex128:
		return refuse("a complex number has no JSON form")
	case reflect.UnsafePointer:
		return refuse("an unsafe pointer has no JSON form")
	case reflect.Interface:
		if t.NumMethod() > 0 {
			return refuse("a non-empty interface cannot be decoded from JSON: use any, json.RawMessage or a concrete type")
		}
	case reflect.Map:
		switch k := t.Key(); {
		case k.Kind() == reflect.String, k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr,
			implements(k, textMarshaler) && implements(k, textUnmarshaler):
		default:
			return refuse(fmt.Sprintf("encoding/json cannot use %s as the key of a JSON object", k))
		}
		return w.check(t.Elem(), path+"[]")
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil // a base64 string
		}
		return w.check(t.Elem(), path+"[]")
	case reflect.Struct:
		if w.visiting[t] {
			w.recursive = true
			return nil
		}
		w.visiting[t] = true
		defer delete(w.visiting, t)
		return w.checkFields(t, path)
	}
	return nil
}

func (w *typeWalker) checkFields(t reflect.Type, path string) *inferError {
	for i := range t.NumField() {
		f := t.Field(i)
		jf := readField(f)
		switch {
		case jf.embed:
			if ie := w.check(f.Type, path); ie != nil {
				return ie
			}
		case jf.name != "":
			p := f.Name
			if path != "" {
				p = path + "." + f.Name
			}
			if ie := w.check(f.Type, p); ie != nil {
				return ie
			}
		}
	}
	return nil
}

// jsonField is how the generator reads a struct field.
type jsonField struct {
	name      string // the property name; empty: not a property
	embed     bool   // the fields of an embedded struct are the parent's
	omitempty bool   // omitempty or omitzero
	required  bool   // the jsonschema tag says "required"
}

// readField reads f as the generator does (reflectFieldName): json names, "-" on either tag,
// embedded structs and pointers to structs, the "inline" option.
func readField(f reflect.StructField) jsonField {
	jsonTags := strings.Split(f.Tag.Get("json"), ",")
	schemaTags := strings.Split(f.Tag.Get("jsonschema"), ",")
	if jsonTags[0] == "-" || schemaTags[0] == "-" {
		return jsonField{}
	}
	var jf jsonField
	jf.omitempty = slices.Contains(jsonTags[1:], "omitempty") || slices.Contains(jsonTags[1:], "omitzero")
	jf.required = slices.Contains(schemaTags, "required")
	if f.Anonymous && jsonTags[0] == "" {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			return jsonField{embed: true}
		}
	}
	if slices.Contains(jsonTags[1:], "inline") {
		return jsonField{embed: true}
	}
	if !f.Anonymous && f.PkgPath != "" {
		return jsonField{}
	}
	jf.name = f.Name
	if jsonTags[0] != "" {
		jf.name = jsonTags[0]
	}
	return jf
}

// adjust brings s, the generated schema of t, to what encoding/json does, which the generator
// does not follow: a pointer field is optional (a nil one may be left out), and a
// field that encodes nil as null (a pointer, slice or map without omitempty) accepts null.
// Fields promoted from an embedded pointer are optional too: a nil one contributes nothing.
func adjust(s *jsonschema.Schema, t reflect.Type, defs jsonschema.Definitions, done map[*jsonschema.Schema]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil || opaque(t) {
		return
	}
	if ref, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok {
		s = defs[ref]
	}
	if s == nil || done[s] {
		return
	}
	done[s] = true
	switch t.Kind() {
	case reflect.Struct:
		adjustFields(s, t, defs, done, false)
	case reflect.Slice, reflect.Array:
		adjust(s.Items, t.Elem(), defs, done)
	case reflect.Map:
		adjust(s.AdditionalProperties, t.Elem(), defs, done)
		for _, p := range s.PatternProperties {
			adjust(p, t.Elem(), defs, done)
		}
	}
}

func adjustFields(s *jsonschema.Schema, t reflect.Type, defs jsonschema.Definitions, done map[*jsonschema.Schema]bool, viaPointer bool) {
	if s.Properties == nil {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		jf := readField(f)
		if jf.embed {
			ft := f.Type
			ptr := ft.Kind() == reflect.Pointer
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !opaque(ft) {
				adjustFields(s, ft, defs, done, viaPointer || ptr)
			}
			continue
		}
		if jf.name == "" {
			continue
		}
		p, ok := s.Properties.Get(jf.name)
		if !ok || p == nil {
			continue
		}
		adjust(p, f.Type, defs, done)
		k := f.Type.Kind()
		if (k == reflect.Pointer || viaPointer) && !jf.required {
			s.Required = slices.DeleteFunc(slices.Clone(s.Required), func(n string) bool { return n == jf.name })
		}
		if !jf.omitempty && (k == reflect.Pointer || k == reflect.Slice || k == reflect.Map) {
			s.Properties.Set(jf.name, nullable(p))
		}
	}
}

// nullable returns p accepting null as well.
func nullable(p *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case p.Ref == "" && p.Type != "" && p.Extras["type"] == nil:
		if p.Extras == nil {
			p.Extras = map[string]any{}
		}
		p.Extras["type"] = []string{p.Type, "null"}
		p.Type = ""
		if len(p.Enum) > 0 {
			p.Enum = append(p.Enum, nil)
		}
		return p
	case p.Type == "" && p.Ref == "" && len(p.AnyOf) == 0 && len(p.OneOf) == 0 && len(p.AllOf) == 0 && p.Extras["type"] == nil:
		return p // no type: null is accepted already
	case p.Extras["type"] != nil:
		return p
	}
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{p, {Type: "null"}}}
}
