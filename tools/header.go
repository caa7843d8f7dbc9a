package tools

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolgrain/toolgrain/protocol"
)

// headerKeyword is the JSON Schema extension keyword by which a tool designates an argument that
// clients mirror into an HTTP header (MCP 2026-07-28, Streamable HTTP, "Custom Headers from
// Tool Parameters").
const headerKeyword = "x-mcp-header"

// HeaderParam is one argument of a tool that clients of the Streamable HTTP transport mirror into
// the request header Mcp-Param-{Name}: a property of the input schema annotated with
// "x-mcp-header": "{Name}". [Compile] finds and checks them; [Compiled.HeaderParams] lists them.
type HeaderParam struct {
	// Name is the x-mcp-header value, as written: an RFC 9110 token, unique in the tool compared
	// case-insensitively.
	Name string

	// Path is the chain of property names that leads from the arguments object to the argument:
	// ["region"] for a top-level property, ["target", "region"] for one nested in the object
	// property "target".
	Path []string

	// Type is the JSON Schema type the property declares: "string", "integer" or "boolean".
	Type string
}

// Header returns the name of the header that mirrors the argument: "Mcp-Param-" + Name.
func (p HeaderParam) Header() string { return protocol.HeaderParamPrefix + p.Name }

// HeaderParams returns the tool's x-mcp-header arguments, ordered by their location in the input
// schema, or nil when it has none. The slice is new; the Paths share memory with the tool and
// must not be modified.
func (c *Compiled) HeaderParams() []HeaderParam { return slices.Clone(c.headers) }

// dataKeywords hold instance values, not schemas: an object inside them is data, and an
// "x-mcp-header" member of it is no annotation.
var dataKeywords = map[string]bool{"const": true, "enum": true, "default": true, "examples": true}

// schemaMapKeywords map names (not properties) to subschemas.
var schemaMapKeywords = map[string]bool{
	"$defs": true, "definitions": true, "patternProperties": true, "dependentSchemas": true, "dependencies": true,
}

// headerScan walks a decoded input schema for x-mcp-header annotations.
type headerScan struct {
	params []HeaderParam
	where  []string       // the location of each param in the schema, for messages
	byName map[string]int // index in params by lower-case name
	errs   []error
}

// scanHeaderParams finds the x-mcp-header annotations of the decoded input schema doc (as
// decodeValue returns it) and checks each against the rules of MCP 2026-07-28: the annotation is
// on a property reached from the root through "properties" alone, its value is a non-empty RFC
// 9110 token, unique case-insensitively, and the property declares "type" "string", "integer" or
// "boolean". It returns the annotations in schema order and one error per broken rule.
func scanHeaderParams(doc any) ([]HeaderParam, []error) {
	s := &headerScan{byName: map[string]int{}}
	s.schema(doc, nil, nil, true)
	return s.params, s.errs
}

// schema walks the schema node at loc. reachable says that every step from the root to it was
// a "properties" member; path is then the chain of property names.
func (s *headerScan) schema(node any, loc, path []string, reachable bool) {
	obj, ok := node.(map[string]any)
	if !ok {
		return // a boolean schema, or not a schema at all
	}
	if v, ok := obj[headerKeyword]; ok {
		s.annotation(obj, v, loc, path, reachable)
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := obj[k]
		switch {
		case k == headerKeyword || dataKeywords[k]:
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				s.any(v, with(loc, k))
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(props)) {
				s.schema(props[name], with(loc, k, name), with(path, name), reachable)
			}
		case schemaMapKeywords[k]:
			m, ok := v.(map[string]any)
			if !ok {
				s.any(v, with(loc, k))
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(m)) {
				s.any(m[name], with(loc, k, name))
			}
		default:
			s.any(v, with(loc, k))
		}
	}
}

// any walks the value of a keyword other than "properties": every object in it is taken for a
// schema, and none is reachable.
func (s *headerScan) any(v any, loc []string) {
	switch v := v.(type) {
	case map[string]any:
		s.schema(v, loc, nil, false)
	case []any:
		for i, e := range v {
			s.any(e, with(loc, fmt.Sprint(i)))
		}
	}
}

// annotation checks the x-mcp-header value v of the schema obj at loc, and records it when it
// is valid.
func (s *headerScan) annotation(obj map[string]any, v any, loc, path []string, reachable bool) {
	var sb strings.Builder
	writeLocation(&sb, loc, "schema")
	where := sb.String()
	fail := func(format string, args ...any) {
		s.errs = append(s.errs, fmt.Errorf("%s: x-mcp-header: "+format, append([]any{where}, args...)...))
	}
	if !reachable || len(path) == 0 {
		fail(`allowed only on a property reached from the root through "properties" alone ` +
			`(not through items, allOf, anyOf, oneOf, not, if, then, else, $ref, $defs or any other keyword)`)
		return
	}
	name, ok := v.(string)
	if !ok {
		fail("must be a string, not %s", kindOf(v))
		return
	}
	if reason := checkToken(name); reason != "" {
		fail("%q %s", name, reason)
		return
	}
	typ, _ := obj["type"].(string)
	switch typ {
	case "string", "integer", "boolean":
	case "number":
		fail(`allowed only on a property of type "string", "integer" or "boolean", not "number"`)
		return
	default:
		if _, declared := obj["type"]; declared {
			fail(`allowed only on a property of type "string", "integer" or "boolean" (one type, not a list)`)
		} else {
			fail(`the property must declare "type": "string", "integer" or "boolean"`)
		}
		return
	}
	lower := strings.ToLower(name)
	if i, dup := s.byName[lower]; dup {
		fail("%q repeats %q of %s: names must be unique, compared case-insensitively", name, s.params[i].Name, s.where[i])
		return
	}
	s.byName[lower] = len(s.params)
	s.params = append(s.params, HeaderParam{Name: name, Path: path, Type: typ})
	s.where = append(s.where, where)
}

// checkToken returns why name is not an RFC 9110 token (1*tchar), or "".
func checkToken(name string) string {
	const token = "an RFC 9110 token is A-Za-z0-9 and !#$%&'*+-.^_`|~"
	if name == "" {
		return "must not be empty"
	}
	for i, r := range name {
		switch {
		case r < utf8.RuneSelf && isTchar(byte(r)):
			continue
		case r < 0x20 || r == 0x7F:
			return fmt.Sprintf("has the control character %U at byte %d (%s)", r, i, token)
		default:
			return fmt.Sprintf("has the character %q at byte %d (%s)", r, i, token)
		}
	}
	return ""
}

// isTchar reports whether c is an RFC 9110 tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+"
// / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// kindOf names the JSON kind of a decoded value.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	default:
		return "a number"
	}
}

// with returns a new slice: s followed by toks.
func with(s []string, toks ...string) []string {
	return append(slices.Clip(s), toks...)
}
