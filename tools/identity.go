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
	// Subject identifies the caller (a user id, a client id). Sessions are bound to it: a
	// session created by one subject is not found by another.
	Subject string
	// Scopes are the scopes the token grants.
	Scopes []string
	// Extra is whatever else the verifier wants handlers to see (claims, a user record). The
	// engine does not look at it.
	Extra any
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
