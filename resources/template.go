package resources

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// uriTemplate is a compiled RFC 6570 template of the forms the engine matches: literal text
// and expressions {var} (simple string expansion, level 1) and {+var} (reserved expansion,
// level 2). Matching inverts the expansion: a simple variable matches one or more characters
// other than '/', '?' and '#', a reserved one any non-empty text; values are percent-decoded.
type uriTemplate struct {
	raw  string
	re   *regexp.Regexp
	vars []string
}

var varName = regexp.MustCompile(`^[A-Za-z0-9_.]+$`)

func parseTemplate(raw string) (*uriTemplate, error) {
	if raw == "" {
		return nil, fmt.Errorf("empty URI template")
	}
	var re strings.Builder
	re.WriteString("^")
	t := &uriTemplate{raw: raw}
	seen := map[string]bool{}
	prevVar := false
	for rest := raw; rest != ""; {
		open := strings.IndexByte(rest, '{')
		if close := strings.IndexByte(rest, '}'); close >= 0 && (open < 0 || close < open) {
			return nil, fmt.Errorf("unmatched '}' in %q", raw)
		}
		if open < 0 {
			re.WriteString(regexp.QuoteMeta(rest))
			break
		}
		if open > 0 {
			re.WriteString(regexp.QuoteMeta(rest[:open]))
			prevVar = false
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unclosed '{' in %q", raw)
		}
		expr := rest[open+1 : open+end]
		rest = rest[open+end+1:]
		if prevVar {
			return nil, fmt.Errorf("expressions must be separated by literal text in %q", raw)
		}
		pattern := `([^/?#]+)`
		if strings.HasPrefix(expr, "+") {
			expr, pattern = expr[1:], `(.+)`
		}
		switch {
		case expr == "":
			return nil, fmt.Errorf("empty expression in %q", raw)
		case strings.ContainsAny(expr[:1], "#./;?&=,!@|"):
			return nil, fmt.Errorf("operator %q in %q is not supported (only {var} and {+var})", expr[:1], raw)
		case strings.ContainsAny(expr, ",*:"):
			return nil, fmt.Errorf("expression {%s} in %q is not supported: one variable, no modifiers", expr, raw)
		case !varName.MatchString(expr):
			return nil, fmt.Errorf("invalid variable name %q in %q", expr, raw)
		case seen[expr]:
			return nil, fmt.Errorf("variable %q appears twice in %q", expr, raw)
		}
		seen[expr] = true
		t.vars = append(t.vars, expr)
		re.WriteString(pattern)
		prevVar = true
	}
	re.WriteString("$")
	var err error
	if t.re, err = regexp.Compile(re.String()); err != nil {
		return nil, fmt.Errorf("URI template %q: %w", raw, err)
	}
	return t, nil
}

// match returns the decoded variables of uri, or false when uri does not match.
func (t *uriTemplate) match(uri string) (map[string]string, bool) {
	m := t.re.FindStringSubmatch(uri)
	if m == nil {
		return nil, false
	}
	vars := make(map[string]string, len(t.vars))
	for i, name := range t.vars {
		v, err := url.PathUnescape(m[i+1])
		if err != nil {
			return nil, false
		}
		vars[name] = v
	}
	return vars, true
}

// hasVar reports whether the template has the variable name.
func (t *uriTemplate) hasVar(name string) bool {
	for _, v := range t.vars {
		if v == name {
			return true
		}
	}
	return false
}
