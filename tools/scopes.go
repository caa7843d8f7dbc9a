package tools

import (
	"fmt"
	"strings"
)

// Scopes returns the scopes a call of the tool needs ([Tool].Scopes); nil when none. Do not
// modify the slice.
func (c *Compiled) Scopes() []string { return c.def.Scopes }

// Tags returns the tool's tags ([Tool].Tags), sorted and without duplicates; nil when none. Do
// not modify the slice.
func (c *Compiled) Tags() []string { return c.def.Tags }

// HasScopes reports whether id has every scope of [Tool].Scopes; a nil id has none. It is
// MissingScopes(id) == nil without building the list.
func (c *Compiled) HasScopes(id *Identity) bool {
	for _, s := range c.def.Scopes {
		if !id.HasScope(s) {
			return false
		}
	}
	return true
}

// MissingScopes returns the scopes of [Tool].Scopes that id lacks, in their order; nil when it
// has them all (or the tool needs none). A nil id has no scope.
func (c *Compiled) MissingScopes(id *Identity) []string {
	var missing []string
	for _, s := range c.def.Scopes {
		if !id.HasScope(s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// checkScopes checks that each scope is an RFC 6749 §3.3 scope token: one or more characters
// from %x21, %x23-5B and %x5D-7E (printable ASCII but space, '"' and '\'), so that a scope
// list can be written into a WWW-Authenticate challenge as it is.
func checkScopes(scopes []string) error {
	for _, s := range scopes {
		if s == "" {
			return fmt.Errorf("empty scope")
		}
		if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e || r == '"' || r == '\\' }); i >= 0 {
			return fmt.Errorf("scope %q: %q is not allowed in a scope (RFC 6749 §3.3)", s, s[i])
		}
	}
	return nil
}
