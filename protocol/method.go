package protocol

import (
	"errors"
	"fmt"
	"strings"
)

// Custom methods and extensions. A server may serve JSON-RPC methods the specification does
// not define, and declare extensions (SEP-2133) in its capabilities: under "extensions" in MCP
// 2026-07-28, whose schema has that member, and under "experimental" ("Experimental,
// non-standard capabilities that the server supports") in the revisions before it, whose
// ServerCapabilities have no other place for them.

// specNamespaces are the first segments of the methods of every revision of the specification:
// a custom method in one of them could be taken by a later revision.
var specNamespaces = []string{"completion", "elicitation", "logging", "notifications", "prompts",
	"resources", "roots", "sampling", "server", "subscriptions", "tasks", "tools"}

// CheckMethodName returns nil when name may be a custom method's, and otherwise an error saying
// why not: the name must have a namespace prefix ("acme/reindex", "com.example/search/rebuild":
// a prefix of dot-separated labels, each starting with a letter and ending with a letter or a
// digit, with letters, digits and hyphens between, as the prefixes of _meta keys; then a slash
// and a name of letters, digits, '-', '_', '.' and '/', starting and ending with a letter or a
// digit), and it must not be a method of the specification, in any revision, or in one of its
// namespaces (tools/, resources/, notifications/, ...), nor a name JSON-RPC 2.0 reserves (rpc.).
func CheckMethodName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case name == MethodInitialize || name == MethodPing:
		return errors.New("a method of the MCP specification")
	case strings.HasPrefix(name, "rpc."):
		return errors.New(`JSON-RPC 2.0 reserves the names that begin with "rpc."`)
	}
	prefix, rest, ok := strings.Cut(name, "/")
	if !ok || prefix == "" {
		return errors.New("needs a namespace prefix, as in acme/reindex")
	}
	for _, ns := range specNamespaces {
		if prefix == ns {
			return fmt.Errorf("in the %s/ namespace of the MCP specification", ns)
		}
	}
	if reason := checkPrefix(prefix); reason != "" {
		return errors.New(reason)
	}
	if !validName(rest, true) {
		return errors.New("the name after the prefix must be letters, digits, '-', '_', '.' and '/', starting and ending with a letter or a digit")
	}
	return nil
}

// CheckExtensionID returns nil when id may name an extension, and otherwise an error saying why
// not: an extension identifier is "{vendor-prefix}/{extension-name}" (as
// "com.example/search"), which follows the rules of _meta keys with a mandatory prefix.
func CheckExtensionID(id string) error {
	prefix, name, ok := strings.Cut(id, "/")
	if !ok || prefix == "" {
		return errors.New("needs a vendor prefix, as in com.example/search")
	}
	if reason := checkPrefix(prefix); reason != "" {
		return errors.New(reason)
	}
	if !validName(name, false) {
		return errors.New("the name after the prefix must be letters, digits, '-', '_' and '.', starting and ending with a letter or a digit")
	}
	return nil
}

// checkPrefix returns why prefix (without its slash) breaks the rule of _meta prefixes, or "".
func checkPrefix(prefix string) string {
	for _, label := range strings.Split(prefix, ".") {
		if !validLabel(label) {
			return fmt.Sprintf("prefix %q: each dot-separated label starts with a letter and ends with a letter or a digit, with letters, digits and hyphens between", prefix)
		}
	}
	return ""
}

func validLabel(l string) bool {
	if l == "" || !isLetter(l[0]) || !isAlnum(l[len(l)-1]) {
		return false
	}
	for i := 1; i < len(l)-1; i++ {
		if !isAlnum(l[i]) && l[i] != '-' {
			return false
		}
	}
	return true
}

// validName reports whether s is a _meta key's name: alphanumerics at both ends, and '-', '_',
// '.' (and '/' when slash) or alphanumerics between.
func validName(s string, slash bool) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		switch c := s[i]; {
		case isAlnum(c), c == '-', c == '_', c == '.', slash && c == '/':
		default:
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool  { return isLetter(c) || '0' <= c && c <= '9' }
