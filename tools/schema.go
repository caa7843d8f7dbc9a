package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schema is one compiled schema of a tool.
type schema struct {
	root string             // name of the validated value in feedback: "arguments", "_meta", ...
	sch  *jsonschema.Schema // nil when the schema accepts any object: only object-ness is checked
	// flat is the schema's fast path (see flatSchema), nil when it has none.
	flat *flatSchema
}

// newSchema returns the schema named root, compiled as sch from its document raw.
func newSchema(root string, sch *jsonschema.Schema, raw []byte) *schema {
	s := &schema{root: root, sch: sch}
	if sch != nil {
		if doc, ok := decodeValue(raw); ok {
			s.flat = compileFlat(doc)
		}
	}
	return s
}

// schemaURL names each kind of schema inside its own compiler. Every schema gets a compiler of
// its own, so the "$id"s of one tool's schemas can never resolve in another's.
var schemaURL = map[SchemaKind]string{
	SchemaInput:    "mem:///input.json",
	SchemaOutput:   "mem:///output.json",
	SchemaMetadata: "mem:///metadata.json",
}

// annotationKeywords are the keywords that do not constrain an instance. A root schema of
// "type": "object" plus only these accepts every object, and is checked without the validator.
var annotationKeywords = map[string]bool{
	"type": true, "$schema": true, "$id": true, "$comment": true, "title": true,
	"description": true, "default": true, "examples": true, "deprecated": true,
	"readOnly": true, "writeOnly": true,
}

// compileSchema checks and compiles raw. Input and output schemas (requireObject) must have
// "type": "object" at their root.
func compileSchema(raw json.RawMessage, k SchemaKind, requireObject bool) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	obj, isObj := doc.(map[string]any)
	if requireObject {
		if !isObj {
			return nil, errors.New(`root must be a JSON object declaring "type": "object"`)
		}
		if t, ok := obj["type"].(string); !ok || t != "object" {
			return nil, errors.New(`root must declare "type": "object"`)
		}
	}
	if isObj {
		if s, ok := obj["$schema"].(string); ok && !knownDialect(s) {
			return nil, fmt.Errorf("unsupported $schema %q (supported: JSON Schema 2020-12, the default; 2019-09; draft-07; draft-06; draft-04)", s)
		}
		if acceptsAnyObject(obj) {
			return nil, nil
		}
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	url := schemaURL[k]
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, explainCompileError(err)
	}
	return sch, nil
}

// acceptsAnyObject reports whether obj is "type": "object" with only annotations besides.
func acceptsAnyObject(obj map[string]any) bool {
	if t, ok := obj["type"].(string); !ok || t != "object" {
		return false
	}
	for key := range obj {
		if !annotationKeywords[key] {
			return false
		}
	}
	return true
}

// knownDialect reports whether s names a JSON Schema dialect the validator implements.
func knownDialect(s string) bool {
	s = strings.TrimSuffix(s, "#")
	if rest, ok := strings.CutPrefix(s, "https://"); ok {
		s = rest
	} else if rest, ok := strings.CutPrefix(s, "http://"); ok {
		s = rest
	} else {
		return false
	}
	switch s {
	case "json-schema.org/draft/2020-12/schema",
		"json-schema.org/draft/2019-09/schema",
		"json-schema.org/draft-07/schema",
		"json-schema.org/draft-06/schema",
		"json-schema.org/draft-04/schema":
		return true
	}
	return false
}

// errExternalRef is the loader's answer to every URL: schemas are self-contained.
var errExternalRef = errors.New(`external schema documents are never loaded; define the schema under "$defs" and refer to it with "#/$defs/..."`)

// refusingLoader replaces the jsonschema default loader (which reads file: URLs) so that
// compiling a schema never touches the network or the file system. The JSON Schema metaschemas
// are built into the library and need no loader.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, errExternalRef
}

// causeError gives a jsonschema error a one-line message while keeping it reachable with
// errors.As.
type causeError struct {
	msg string
	err error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.err }

// explainCompileError shortens the errors of jsonschema's Compile that tool authors meet most.
func explainCompileError(err error) error {
	var metaErr *jsonschema.SchemaValidationError
	var loadErr *jsonschema.LoadURLError
	switch {
	case errors.As(err, &metaErr):
		var verr *jsonschema.ValidationError
		if errors.As(metaErr.Err, &verr) {
			return &causeError{msg: "not a valid JSON Schema: " + describeValidation(verr, "schema"), err: err}
		}
	case errors.As(err, &loadErr):
		return &causeError{msg: fmt.Sprintf("cannot load %q: %v", loadErr.URL, errExternalRef), err: err}
	}
	return err
}

// firstByte returns the first byte of raw that is not JSON whitespace, or 0.
func firstByte(raw []byte) byte {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return b
	}
	return 0
}

// isAbsent reports whether raw stands for "no value": nil, empty, only JSON whitespace, or
// null. (A NUL byte is not absence: it is invalid JSON.)
func isAbsent(raw []byte) bool {
	t := bytes.Trim(raw, " \t\r\n")
	return len(t) == 0 || string(t) == "null"
}

// validate checks raw, which is not absent, against s. It returns "" when raw is valid and the
// findings otherwise.
func (s *schema) validate(raw []byte) string {
	if firstByte(raw) != '{' {
		if !json.Valid(raw) {
			return s.root + ": must be valid JSON"
		}
		return s.root + ": must be an object"
	}
	if s.sch == nil {
		if !json.Valid(raw) {
			return s.root + ": must be valid JSON"
		}
		return ""
	}
	if !json.Valid(raw) {
		return s.root + ": must be valid JSON"
	}
	if s.flat != nil && s.flat.accepts(raw) {
		return ""
	}
	return s.validateValue(decodeValid(raw))
}

// validateValue checks a decoded value (from jsonschema.UnmarshalJSON) against s.
func (s *schema) validateValue(v any) string {
	if _, ok := v.(map[string]any); !ok {
		return s.root + ": must be an object"
	}
	if s.sch == nil {
		return ""
	}
	err := s.sch.Validate(v)
	if err == nil {
		return ""
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return s.root + ": is invalid"
	}
	return describeValidation(verr, s.root)
}
