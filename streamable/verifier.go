package streamable

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgrain/toolgrain/tools"
)

// ErrInvalidToken is the rejection a [TokenVerifier] returns (or wraps) for a token it does not
// accept: unknown, expired, revoked, issued for another audience. The client gets 401 and
// nothing is reported: a rejection is an expected answer. Its text, "toolgrain: invalid token",
// predates the package and is kept.
var ErrInvalidToken = errors.New("toolgrain: invalid token")

// TokenVerifier checks the bearer tokens of the Streamable HTTP transport.
//
// VerifyToken returns the identity a valid token stands for (a [tools.Identity], which tool
// handlers read with [tools.IdentityFromContext]). It must check everything that makes the token
// valid for this server, the audience included (the token must have been issued for this
// resource: MCP forbids token passthrough). For a token it does not accept it returns an error
// that wraps [ErrInvalidToken]. Any other error — the identity provider is down or answers
// garbage — and a panic are unexpected failures: the client gets 503 with no detail and the
// engine's OnError (toolgrain's Config.OnError) gets the original error with nil details. It
// must honour ctx, which ends after [AuthConfig].VerifyTimeout or when the client goes away,
// and which names the endpoint's resource URI ([ResourceFromContext]).
//
// It is called for every HTTP request (sessions never stand for authentication), concurrently:
// cache on your side if verification is costly. Package auth has verifiers for real
// authorization servers: JWT access tokens checked with the issuer's keys, opaque tokens by
// introspection.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (*tools.Identity, error)
}

// resourceKey is the context key of the resource a token is verified for.
type resourceKey struct{}

// ResourceFromContext returns the canonical URI of the MCP endpoint ([AuthConfig].Resource,
// completed from the request when it is a path or empty; for the HTTP+SSE transport's paths,
// that of its stream path) that the request being authenticated was sent to: the audience its
// token must have been issued for. The transport sets it on the
// context it passes to [TokenVerifier].VerifyToken; any other context gives "".
func ResourceFromContext(ctx context.Context) string {
	s, _ := ctx.Value(resourceKey{}).(string)
	return s
}

// WithResource returns a context whose [ResourceFromContext] is resource, for calling a
// [TokenVerifier] outside the transport (tests, another transport).
func WithResource(ctx context.Context, resource string) context.Context {
	return context.WithValue(ctx, resourceKey{}, resource)
}

// TokenVerifierFunc adapts a function to [TokenVerifier].
type TokenVerifierFunc func(ctx context.Context, token string) (*tools.Identity, error)

// VerifyToken calls f(ctx, token).
func (f TokenVerifierFunc) VerifyToken(ctx context.Context, token string) (*tools.Identity, error) {
	return f(ctx, token)
}

var _ TokenVerifier = TokenVerifierFunc(nil)

// VerifierPanicError is what the engine's OnError (toolgrain's Config.OnError) receives when the
// token verifier panicked.
type VerifierPanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine.
	Stack []byte
}

// Error returns "token verifier panicked: <value>"; it does not include the stack.
func (e *VerifierPanicError) Error() string {
	return fmt.Sprintf("token verifier panicked: %v", e.Value)
}

// PanicStack returns the stack, for sinks that log it (diagnostics.ZapSink).
func (e *VerifierPanicError) PanicStack() []byte { return e.Stack }
