package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// maxFindings bounds the findings one feedback text lists, so that a huge invalid instance
// cannot produce a huge response.
const maxFindings = 20

// finding is one leaf of a validation failure: where it is and which rule it breaks.
type finding struct {
	path []string // instance location, one token per level
	rule string   // short rule, e.g. "must be <= 600000"
}

// describeValidation renders a validation failure as "<loc>: <rule>; <loc>: <rule>", the
// findings sorted by location (root first, array indices in numeric order) and deduplicated. A
// location is the instance path with its tokens joined by "/" (escaped as in a JSON pointer:
// "~" as "~0", "/" as "~1"), or root for the instance itself. Rules quote the schema, never the
// instance, except for the name of a JSON type.
func describeValidation(verr *jsonschema.ValidationError, root string) string {
	var fs []finding
	collectFindings(verr, &fs)
	if len(fs) == 0 {
		fs = append(fs, finding{path: verr.InstanceLocation, rule: "is invalid"})
	}
	slices.SortStableFunc(fs, func(a, b finding) int {
		if c := comparePaths(a.path, b.path); c != 0 {
			return c
		}
		return strings.Compare(a.rule, b.rule)
	})
	fs = slices.CompactFunc(fs, func(a, b finding) bool {
		return a.rule == b.rule && slices.Equal(a.path, b.path)
	})

	var sb strings.Builder
	for i, f := range fs {
		if i == maxFindings {
			fmt.Fprintf(&sb, "; and %d more", len(fs)-i)
			break
		}
		if i > 0 {
			sb.WriteString("; ")
		}
		writeLocation(&sb, f.path, root)
		sb.WriteString(": ")
		sb.WriteString(f.rule)
	}
	return sb.String()
}

func writeLocation(sb *strings.Builder, path []string, root string) {
	if len(path) == 0 {
		sb.WriteString(root)
		return
	}
	for i, tok := range path {
		if i > 0 {
			sb.WriteByte('/')
		}
		if strings.ContainsAny(tok, "~/") {
			tok = strings.ReplaceAll(tok, "~", "~0")
			tok = strings.ReplaceAll(tok, "/", "~1")
		}
		sb.WriteString(tok)
	}
}

// comparePaths orders locations token by token, a parent before its children, and array indices
// by number.
func comparePaths(a, b []string) int {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if isIndex(x) && isIndex(y) && len(x) != len(y) {
			return len(x) - len(y)
		}
		return strings.Compare(x, y)
	}
	return len(a) - len(b)
}

func isIndex(tok string) bool {
	if tok == "" {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

// collectFindings walks the error tree to its leaves. Wrappers (the schema, a group of errors,
// allOf, $ref) are transparent; anyOf and oneOf whose branches all fail stay one finding unless
// the failure clearly belongs to a single branch (see collectAlternatives).
func collectFindings(e *jsonschema.ValidationError, out *[]finding) {
	loc := e.InstanceLocation
	add := func(path []string, rule string) {
		*out = append(*out, finding{path: path, rule: rule})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range e.Causes {
			collectFindings(c, out)
		}
		if len(e.Causes) == 0 {
			add(loc, "is invalid")
		}
	case *kind.AnyOf:
		collectAlternatives(e, out)
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			collectAlternatives(e, out)
		} else {
			add(loc, "must match exactly one of the allowed shapes")
		}
	case *kind.Required:
		for _, name := range k.Missing {
			add(childPath(loc, name), "missing property")
		}
	case *kind.Dependency:
		for _, name := range k.Missing {
			add(childPath(loc, name), fmt.Sprintf("missing property (required when %s is present)", quoteJSON(k.Prop)))
		}
	case *kind.DependentRequired:
		for _, name := range k.Missing {
			add(childPath(loc, name), fmt.Sprintf("missing property (required when %s is present)", quoteJSON(k.Prop)))
		}
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			add(childPath(loc, name), "unexpected property")
		}
	case *kind.PropertyNames:
		add(childPath(loc, k.Property), "property name not allowed")
	default:
		add(loc, rule(e.ErrorKind))
	}
}

// collectAlternatives reports an anyOf or oneOf none of whose branches matched. Branches that
// failed only because the instance has another JSON type are set aside: when every branch is
// such, the finding is the list of allowed types ("must be string or number, got boolean");
// when exactly one branch is left, the instance was evidently meant for it and its own findings
// are reported; otherwise the finding is "must match one of the allowed shapes".
func collectAlternatives(e *jsonschema.ValidationError, out *[]finding) {
	var (
		left []*jsonschema.ValidationError
		want []string
		got  string
	)
	for _, branch := range e.Causes {
		if t := typeMismatch(branch, len(e.InstanceLocation)); t != nil {
			for _, w := range t.Want {
				if !slices.Contains(want, w) {
					want = append(want, w)
				}
			}
			got = t.Got
			continue
		}
		left = append(left, branch)
	}
	switch {
	case len(left) == 1:
		collectFindings(left[0], out)
	case len(left) == 0 && len(want) > 0:
		*out = append(*out, finding{path: e.InstanceLocation, rule: typeRule(want, got)})
	default:
		*out = append(*out, finding{path: e.InstanceLocation, rule: "must match one of the allowed shapes"})
	}
}

// typeMismatch returns the type error of a branch that failed only on the type of the instance
// at depth, or nil.
func typeMismatch(e *jsonschema.ValidationError, depth int) *kind.Type {
	for {
		switch k := e.ErrorKind.(type) {
		case *kind.Type:
			if len(e.InstanceLocation) == depth {
				return k
			}
			return nil
		case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
			if len(e.Causes) != 1 {
				return nil
			}
			e = e.Causes[0]
		default:
			return nil
		}
	}
}

func childPath(loc []string, name string) []string {
	p := make([]string, len(loc)+1)
	copy(p, loc)
	p[len(loc)] = name
	return p
}

// rule maps a leaf error kind to a short rule. It never renders the instance value.
func rule(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return typeRule(k.Want, k.Got)
	case *kind.Enum:
		if len(k.Want) == 1 {
			if s, ok := displayValue(k.Want[0]); ok {
				return "must be " + s
			}
			return "must be the allowed value"
		}
		values := make([]string, 0, len(k.Want))
		for _, w := range k.Want {
			s, ok := displayValue(w)
			if !ok {
				return "must be one of the allowed values"
			}
			values = append(values, s)
		}
		return "must be one of " + strings.Join(values, ", ")
	case *kind.Const:
		if s, ok := displayValue(k.Want); ok {
			return "must be " + s
		}
		return "must be the allowed value"
	case *kind.FalseSchema:
		return "not allowed"
	case *kind.Not:
		return "must not match the excluded shape"
	case *kind.Format:
		return "must be a valid " + k.Want
	case *kind.Minimum:
		return "must be >= " + ratString(k.Want)
	case *kind.Maximum:
		return "must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be < " + ratString(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratString(k.Want)
	case *kind.MinLength:
		return "must be at least " + count(k.Want, "character") + " long"
	case *kind.MaxLength:
		return "must be at most " + count(k.Want, "character") + " long"
	case *kind.Pattern:
		return "must match pattern " + quoteJSON(k.Want)
	case *kind.MinItems:
		return "must have at least " + count(k.Want, "item")
	case *kind.MaxItems:
		return "must have at most " + count(k.Want, "item")
	case *kind.AdditionalItems:
		return "has " + count(k.Count, "unexpected item")
	case *kind.UniqueItems:
		return fmt.Sprintf("must not contain duplicates (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return "must contain a matching item"
	case *kind.MinContains:
		return "must contain at least " + count(k.Want, "matching item")
	case *kind.MaxContains:
		return "must contain at most " + count(k.Want, "matching item")
	case *kind.MinProperties:
		return "must have at least " + countProperties(k.Want)
	case *kind.MaxProperties:
		return "must have at most " + countProperties(k.Want)
	case *kind.ContentEncoding:
		return "must be " + k.Want + "-encoded"
	case *kind.ContentMediaType:
		return "must be valid " + k.Want
	case *kind.ContentSchema:
		return "content must match its schema"
	case *kind.InvalidJsonValue:
		return "is not a JSON value"
	case *kind.RefCycle:
		return "schema references form a cycle"
	default:
		return "is invalid"
	}
}

func typeRule(want []string, got string) string {
	return "must be " + strings.Join(want, " or ") + ", got " + got
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func countProperties(n int) string {
	if n == 1 {
		return "1 property"
	}
	return strconv.Itoa(n) + " properties"
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// displayValue renders a primitive schema value (from enum or const) as JSON; ok is false for
// arrays and objects, which are too long to quote in a rule.
func displayValue(v any) (s string, ok bool) {
	switch v := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(v), true
	case json.Number:
		return v.String(), true
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case string:
		return quoteJSON(v), true
	default:
		return "", false
	}
}

// quoteJSON returns s as a JSON string, without the HTML escaping of json.Marshal.
func quoteJSON(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return strconv.Quote(s)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
