// Package visibility says which of a server's components (tools, resources, resource templates
// and prompts, its own and those mounted from other servers alike) each caller sees. The guide is
// docs/visibility.md.
//
// A component carries tags (tools.Tool.Tags, resources.Resource.Tags, resources.Template.Tags,
// prompts.Prompt.Tags). Three things decide, for one request, whether a component is visible:
//
//   - the [Rule] values of the server's [Config]: each rule that applies to the component (by
//     its tags) must let the caller's identity see it, by the identity's scopes, a claim's
//     values, or a Go predicate;
//   - the tags disabled for everyone, or for the caller's subject, at start ([Config].Disabled)
//     or while the server runs (toolgrain.Server.DisableTags and the like): a component with a
//     disabled tag is invisible;
//   - the toolsets the request chose (the [ToolsetsHeader] header, or a URL path ending in
//     /t/TAG[,TAG...]): the component must have one of their tags. A request only ever narrows
//     its view so: a toolset never shows what the rules or the disabled tags hide.
//
// An invisible component does not exist for that request: lists leave it out, and a call, read,
// get, completion or subscription of it is answered exactly as one of a component that does not
// exist, in both protocol eras and on every transport. A visible tool whose own scopes
// (tools.Tool.Scopes) the caller lacks is still refused with the step-up challenge, unless the
// server hides such tools too (toolgrain.Config.HideForbiddenTools).
//
// What a caller sees depends only on its identity and its request, never on its earlier
// requests, so that every member of a cluster answers alike and results can be cached (MCP
// 2026-07-28): results that depend on the identity are marked private.
package visibility

import (
	"errors"
	"fmt"

	"github.com/toolgrain/toolgrain/internal/tags"
	"github.com/toolgrain/toolgrain/tools"
)

// Kind is the kind of a component.
type Kind uint8

// The kinds of components.
const (
	KindTool Kind = iota + 1
	KindResource
	KindTemplate
	KindPrompt
)

// String returns "tool", "resource", "template" or "prompt".
func (k Kind) String() string {
	switch k {
	case KindTool:
		return "tool"
	case KindResource:
		return "resource"
	case KindTemplate:
		return "template"
	case KindPrompt:
		return "prompt"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Component is what a [Rule]'s predicate is told of a component.
type Component struct {
	Kind Kind
	// Name is a tool's or a prompt's name, a resource's URI, or a template's URI template.
	Name string
	// Tags are its tags, sorted; they must not be modified.
	Tags []string
}

// Rule limits who sees the components it applies to. It applies to every component with one of
// Tags (every component when Tags is empty), and lets an identity see them only when every
// condition it sets holds: the identity has every scope of Scopes, its claim Claim has one of
// Values, and Visible returns true. A rule sets at least one condition. A caller without an
// identity (stdio, HTTP without auth) has no scope and no claim.
type Rule struct {
	// Tags are the tags of the components the rule applies to; empty means every component.
	Tags []string
	// Scopes must all be granted to the identity.
	Scopes []string
	// Claim names a claim of the identity (tools.Identity.Claim: a JWT's claims set, an
	// introspection answer, or Identity.Claims), such as "roles", "groups" or the dotted path
	// "realm_access.roles"; one of its values must be one of Values.
	Claim  string
	Values []string
	// Visible, when set, decides for each component the rule applies to. It must be a function
	// of its arguments alone, fast, and must not block: it runs on the engine's actors, for
	// every component of a list that is not cached.
	Visible func(id *tools.Identity, c Component) bool
	// Key, with Visible, returns what of the identity Visible depends on (a tenant, a role):
	// identities with the same key must get the same answers from Visible. It lets the server
	// cache each caller's lists by it. Nil means lists are worked out for every request of a
	// server with this rule (calls, reads and gets ask Visible for their one component alone).
	Key func(id *tools.Identity) string
}

// Config is a server's visibility configuration (toolgrain.Config.Visibility). Its zero value
// shows every component to everyone.
type Config struct {
	// Rules are checked in order; a component is visible only when every rule that applies to
	// it lets the caller see it.
	Rules []Rule
	// Disabled are the tags disabled for everyone when the server starts; the server's
	// EnableTags (for everyone), EnableTagsFor (a user) and EnableTagsForClient (a client)
	// turn them on while it runs.
	Disabled []string
}

// Check reports what is wrong with c: a tag that is not 1 to 64 characters from
// A-Za-z0-9_.- , a scope that is not an RFC 6749 scope token, a rule without a condition, a
// claim without values or values without a claim, or a Key without Visible. NewServer returns
// its error.
func (c *Config) Check() error {
	if err := tags.CheckAll(c.Disabled); err != nil {
		return fmt.Errorf("visibility: Disabled: %w", err)
	}
	var errs []error
	for i, r := range c.Rules {
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("visibility: rule %d: %s", i, fmt.Sprintf(format, args...)))
		}
		if err := tags.CheckAll(r.Tags); err != nil {
			fail("%v", err)
		}
		for _, s := range r.Scopes {
			if !scopeToken(s) {
				fail("scope %q is not an RFC 6749 scope token", s)
			}
		}
		switch {
		case r.Claim == "" && len(r.Values) > 0:
			fail("Values without a Claim")
		case r.Claim != "" && len(r.Values) == 0:
			fail("Claim %q without Values", r.Claim)
		}
		if r.Key != nil && r.Visible == nil {
			fail("Key without Visible")
		}
		if len(r.Scopes) == 0 && r.Claim == "" && r.Visible == nil {
			fail("no condition (Scopes, Claim and Values, or Visible)")
		}
	}
	return errors.Join(errs...)
}

// scopeToken reports whether s is a scope token: %x21 / %x23-5B / %x5D-7E, at least one.
func scopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x21 || b > 0x7e || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}

// ToolsetsHeader is the HTTP header with which a request narrows its view to the components with
// one of the tags it lists, comma-separated ("X-MCP-Toolsets: issues,repos"). It is the header
// GitHub's remote MCP server reads for the same purpose, so clients configured for it need no
// change, and it stays out of the Mcp- names the MCP specification uses for its own headers.
const ToolsetsHeader = "X-MCP-Toolsets"

// ToolsetsPath is the path segment that, followed by one more segment of comma-separated tags,
// ends an endpoint URL that narrows its requests' view as [ToolsetsHeader] does, for clients that
// cannot set headers: /mcp/t/issues,repos is the endpoint /mcp narrowed to the tags issues and
// repos.
const ToolsetsPath = "t"

// Meta keys of what the server adds to _meta: the tags of each listed component, and the
// toolsets a modern request's view was narrowed to (on its server/discover and list results).
const (
	MetaTags     = tags.MetaTags
	MetaToolsets = tags.MetaToolsets
)

// ParseTags reads a comma-separated list of tags, as the toolsets header and path and the
// server binary's flags carry them: spaces around each are ignored, empty entries skipped,
// duplicates removed; the result is sorted. The error names the first tag that breaks the tag
// syntax.
func ParseTags(s string) ([]string, error) { return tags.Parse(s) }
