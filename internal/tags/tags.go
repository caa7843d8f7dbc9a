// Package tags holds the syntax of the tags a server puts on its tools, resources, resource
// templates and prompts (package visibility uses them), shared by the packages that define
// components, so that each checks a tag the same way.
package tags

import (
	"fmt"
	"slices"
	"strings"
)

// MaxLength is the longest tag.
const MaxLength = 64

// Meta keys of the engine's own members in _meta: the tags of a listed component, and the
// toolsets a request narrowed its view to.
const (
	MetaTags     = "io.github.toolgrain/tags"
	MetaToolsets = "io.github.toolgrain/toolsets"
)

// Check returns why tag is not a tag ("" when it is one): 1 to MaxLength characters from
// A-Za-z0-9_.- , so that a list of tags can be written with commas in a header, a URL path
// segment or a command-line flag as it is.
func Check(tag string) string {
	switch {
	case tag == "":
		return "empty"
	case len(tag) > MaxLength:
		return fmt.Sprintf("longer than %d characters", MaxLength)
	}
	for i := 0; i < len(tag); i++ {
		if !allowed(tag[i]) {
			return fmt.Sprintf("invalid character %q at position %d (A-Za-z0-9_.- allowed)", tag[i], i)
		}
	}
	return ""
}

func allowed(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '.' || b == '-'
}

// CheckAll checks every tag of list; the error names the first bad one.
func CheckAll(list []string) error {
	for _, t := range list {
		if reason := Check(t); reason != "" {
			return fmt.Errorf("tag %q: %s", t, reason)
		}
	}
	return nil
}

// Parse reads a comma-separated list of tags ("a,b", spaces around each ignored, empty entries
// skipped) into a sorted list without duplicates; the error names the first bad tag.
func Parse(s string) ([]string, error) {
	out := []string{}
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if reason := Check(t); reason != "" {
			return nil, fmt.Errorf("tag %q: %s", t, reason)
		}
		out = append(out, t)
	}
	return Normalize(out), nil
}

// Normalize sorts list and removes its duplicates, in place.
func Normalize(list []string) []string {
	slices.Sort(list)
	return slices.Compact(list)
}

// Meta returns the _meta member that lists tags, `"io.github.toolgrain/tags":["a","b"]`, or nil
// for none. Tags need no escaping.
func Meta(key string, list []string) []byte {
	if list == nil {
		return nil
	}
	b := make([]byte, 0, len(key)+8+len(list)*8)
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":[`...)
	for i, t := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, t...)
		b = append(b, '"')
	}
	return append(b, ']')
}
