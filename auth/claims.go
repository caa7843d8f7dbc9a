package auth

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// claimIndex is a claims object decoded once, on the first [Claims.Claim] or
// [Introspection.Claim]: the identity it belongs to is shared by the requests of a token, and
// only rules that match claims ask for them.
type claimIndex struct {
	once sync.Once
	raw  json.RawMessage
	all  map[string]json.RawMessage
}

func newClaimIndex(raw json.RawMessage) *claimIndex { return &claimIndex{raw: raw} }

// get returns the values of the claim name in raw (through idx when it is set, else decoding raw
// now): a member of the top-level object, or, when there is none by that name, a path of member
// names separated by dots into nested objects ("realm_access.roles").
func claimValues(idx *claimIndex, raw json.RawMessage, name string) []string {
	var all map[string]json.RawMessage
	if idx != nil {
		idx.once.Do(func() { _ = json.Unmarshal(idx.raw, &idx.all) })
		all = idx.all
	} else if json.Unmarshal(raw, &all) != nil {
		return nil
	}
	v, ok := all[name]
	for !ok {
		head, rest, dotted := strings.Cut(name, ".")
		if !dotted {
			return nil
		}
		var inner map[string]json.RawMessage
		if json.Unmarshal(all[head], &inner) != nil {
			return nil
		}
		all, name = inner, rest
		v, ok = all[name]
	}
	return stringValues(v)
}

// stringValues returns a claim's value as strings: a string is one, an array its elements, a
// number or a boolean its JSON text; an object, null or an array element of those, nothing.
func stringValues(v json.RawMessage) []string {
	var list []json.RawMessage
	if json.Unmarshal(v, &list) != nil {
		list = []json.RawMessage{v}
	}
	var out []string
	for _, e := range list {
		switch t := strings.TrimSpace(string(e)); {
		case strings.HasPrefix(t, `"`):
			var s string
			if json.Unmarshal(e, &s) == nil {
				out = append(out, s)
			}
		case t == "true" || t == "false":
			out = append(out, t)
		case t != "" && t != "null" && t[0] != '{' && t[0] != '[':
			if _, err := strconv.ParseFloat(t, 64); err == nil {
				out = append(out, t)
			}
		}
	}
	return out
}

// Claim returns the values of the token's claim name as strings (see [tools.ClaimSource]): a
// member of the claims set, or a path of member names separated by dots into nested objects,
// such as "realm_access.roles". Visibility rules that match claims read them so.
//
// [tools.ClaimSource]: https://pkg.go.dev/github.com/toolgrain/toolgrain/tools#ClaimSource
func (c *Claims) Claim(name string) []string { return claimValues(c.idx, c.Raw, name) }

// Claim returns the values of the member name of the introspection answer as strings, as
// [Claims.Claim] does for a JWT.
func (in *Introspection) Claim(name string) []string { return claimValues(in.idx, in.Raw, name) }
