package auth_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/tools"
)

// TestClaim: the claims of a token as visibility rules read them: strings, arrays, numbers and
// booleans as strings, nested members by a dotted path, nothing for objects and absent claims,
// and the same through Identity.Claim.
func TestClaim(t *testing.T) {
	raw := json.RawMessage(`{"sub":"ada","roles":["admin","ops",3,{"x":1}],"tenant":"acme","level":2,"email_verified":true,
		"realm_access":{"roles":["auditor"]},"a.b":"dotted","obj":{"k":"v"},"none":null}`)
	for _, src := range []tools.ClaimSource{&auth.Claims{Raw: raw}, &auth.Introspection{Raw: raw}} {
		for name, want := range map[string][]string{
			"roles":              {"admin", "ops", "3"},
			"tenant":             {"acme"},
			"level":              {"2"},
			"email_verified":     {"true"},
			"realm_access.roles": {"auditor"},
			"a.b":                {"dotted"},
			"obj":                nil,
			"none":               nil,
			"missing":            nil,
			"realm_access.nope":  nil,
		} {
			if got := src.Claim(name); !slices.Equal(got, want) {
				t.Errorf("%T.Claim(%q) = %q, want %q", src, name, got, want)
			}
		}
		id := &tools.Identity{Subject: "ada", Extra: src}
		if got := id.Claim("tenant"); !slices.Equal(got, []string{"acme"}) {
			t.Errorf("Identity.Claim through %T: %q", src, got)
		}
	}
	id := &tools.Identity{Claims: map[string][]string{"tenant": {"own"}}, Extra: &auth.Claims{Raw: raw}}
	if got := id.Claim("tenant"); !slices.Equal(got, []string{"own"}) {
		t.Errorf("Identity.Claims does not win over Extra: %q", got)
	}
	if got := (*tools.Identity)(nil).Claim("x"); got != nil {
		t.Errorf("a nil identity's claim: %q", got)
	}
}
