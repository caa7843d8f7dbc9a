package tools

import (
	"context"
	"slices"
)

// Identity is the authenticated caller of a tool call, as the server's token verifier
// established it (see the root package's AuthConfig). The engine never logs it and never puts
// it into diagnostics; handlers read it with [IdentityFromContext].
//
// An Identity must not be modified once the verifier returned it: the engine shares it between
// the calls of a request and does not copy it.
type Identity struct {
	// Subject identifies the caller (a user id, a client id). Sessions, tasks, the state of
	// input rounds and the tags set for one identity at run time are bound to it: what one
	// subject made is not found by another. A subject
	// that is the client's own id (the identity's client_id claim, [Identity.Claim], is the
	// subject: a client-credentials token) is a client's, kept apart from a user's of the same
	// name.
	Subject string
	// Scopes are the scopes the token grants.
	Scopes []string
	// Extra is whatever else the verifier wants handlers to see (claims, a user record). The
	// engine looks at it only through [Identity.Claim].
	Extra any
	// Claims are the token's claims that the server's visibility rules may match (roles,
	// groups, a tenant: package visibility), by name, each with its values as strings. Nil
	// means the claims are asked of Extra ([Identity.Claim]).
	Claims map[string][]string
}

// ClaimSource is what an [Identity].Extra implements to give its claims to [Identity.Claim]:
// package auth's *Claims (a JWT) and *Introspection do.
type ClaimSource interface {
	// Claim returns the values of the claim name as strings (a string claim is one value, an
	// array its elements, a number or a boolean its JSON text), or nil when there is none.
	Claim(name string) []string
}

// Claim returns the values of the claim name: from Claims when it is set, else from Extra when
// it is a [ClaimSource]; nil for a nil identity, or a claim it does not have.
func (id *Identity) Claim(name string) []string {
	switch {
	case id == nil:
		return nil
	case id.Claims != nil:
		return id.Claims[name]
	}
	if src, ok := id.Extra.(ClaimSource); ok {
		return src.Claim(name)
	}
	return nil
}

// HasScope reports whether the identity was granted scope. A nil identity has no scope.
func (id *Identity) HasScope(scope string) bool {
	return id != nil && slices.Contains(id.Scopes, scope)
}

type identityKey struct{}

// WithIdentity returns a context carrying id. The engine calls it for every tools/call that
// arrived with an authenticated identity; a nil id returns ctx unchanged.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	if id == nil {
		return ctx
	}
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the caller of the tool call ctx belongs to, or nil when the call
// was not authenticated (stdio, or HTTP without auth).
func IdentityFromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}
