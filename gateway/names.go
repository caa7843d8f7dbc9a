package gateway

import (
	"fmt"
	"strings"
)

// The naming rules of mounted components. Each is reversible: the gateway keeps, for every
// component it serves, the upstream's own name, and the rules below say what a client sees.
//
//   - Tools and prompts: PREFIX + SEPARATOR + NAME ("weather" + "_" + "forecast" is
//     "weather_forecast"); with no prefix, NAME.
//   - Resources and resource templates: the prefix becomes the first segment after the
//     scheme: "SCHEME://REST" is served as "SCHEME://PREFIX/REST" ("data://users" mounted
//     under "data" is "data://data/users", "file:///etc/hosts" under "fs" is
//     "file://fs//etc/hosts"), and "SCHEME:REST" (no "//") as "SCHEME:PREFIX/REST"; with no
//     prefix, the URI as it is. A URI without a scheme is not mounted.

// componentName is the name a client sees of an upstream's tool or prompt.
func (m *mount) componentName(name string) string {
	if m.prefix == "" {
		return name
	}
	return m.prefix + m.sep + name
}

// MountURI returns the URI (or URI template) under which a resource of an upstream mounted
// under prefix is served, by the rule in the package doc, and false for a URI without a scheme.
func MountURI(prefix, uri string) (string, bool) {
	i := schemeEnd(uri)
	if i < 0 {
		return "", false
	}
	if prefix == "" {
		return uri, true
	}
	scheme, rest := uri[:i+1], uri[i+1:]
	if strings.HasPrefix(rest, "//") {
		return scheme + "//" + prefix + "/" + rest[2:], true
	}
	return scheme + prefix + "/" + rest, true
}

// UnmountURI reverses [MountURI]: the upstream's own URI of a URI served under prefix, and
// false when uri is not under prefix.
func UnmountURI(prefix, uri string) (string, bool) {
	i := schemeEnd(uri)
	if i < 0 {
		return "", false
	}
	if prefix == "" {
		return uri, true
	}
	scheme, rest := uri[:i+1], uri[i+1:]
	if strings.HasPrefix(rest, "//") {
		inner, ok := strings.CutPrefix(rest[2:], prefix+"/")
		if !ok {
			return "", false
		}
		return scheme + "//" + inner, true
	}
	inner, ok := strings.CutPrefix(rest, prefix+"/")
	if !ok {
		return "", false
	}
	return scheme + inner, true
}

// schemeEnd returns the index of the ':' that ends uri's scheme (RFC 3986: a letter, then
// letters, digits, '+', '-' or '.'), or -1.
func schemeEnd(uri string) int {
	for i := 0; i < len(uri); i++ {
		c := uri[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return i
		default:
			return -1
		}
	}
	return -1
}

// checkPrefix reports a prefix or separator that would make names a client cannot use: tool
// names allow A-Z, a-z, 0-9, '_', '.' and '-'.
func checkNamePart(what, s string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' {
			continue
		}
		return fmt.Errorf("%s %q: invalid character %q at position %d (A-Za-z0-9_.- allowed)", what, s, c, i)
	}
	return nil
}

// templateVars returns the variable names of an RFC 6570 URI template, in order.
func templateVars(tpl string) []string {
	var vars []string
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			return vars
		}
		j := strings.IndexByte(tpl[i:], '}')
		if j < 0 {
			return vars
		}
		expr := tpl[i+1 : i+j]
		tpl = tpl[i+j+1:]
		expr = strings.TrimLeft(expr, "+#./;?&")
		for _, v := range strings.Split(expr, ",") {
			if k := strings.IndexAny(v, ":*"); k >= 0 {
				v = v[:k]
			}
			if v != "" {
				vars = append(vars, v)
			}
		}
	}
}
