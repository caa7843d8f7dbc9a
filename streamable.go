package toolgrain

import (
	"context"
	"net/http"

	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// The Streamable HTTP transport lives in package streamable; these names keep its configuration
// reachable from this package.

// HTTPConfig configures the Streamable HTTP transport of [Server.Handler]: session expiry,
// allowed origins (and their CORS) and hosts, bearer auth, the SSE retry delay, the HTTP+SSE
// transport of MCP 2024-11-05 beside it. Its zero value is usable; see
// [streamable.Config].
type HTTPConfig = streamable.Config

// AuthConfig turns on bearer-token authentication for the Streamable HTTP transport; see
// [streamable.AuthConfig].
type AuthConfig = streamable.AuthConfig

// TokenVerifier checks the bearer tokens of the Streamable HTTP transport; see
// [streamable.TokenVerifier] for its contract.
type TokenVerifier = streamable.TokenVerifier

// TokenVerifierFunc adapts a function to [TokenVerifier]; see [streamable.TokenVerifierFunc].
type TokenVerifierFunc = streamable.TokenVerifierFunc

// VerifierPanicError is what [Config].OnError receives when the token verifier panicked; see
// [streamable.VerifierPanicError].
type VerifierPanicError = streamable.VerifierPanicError

// Identity is the authenticated caller of a request; see [tools.Identity]. Tool handlers read it
// with [tools.IdentityFromContext].
type Identity = tools.Identity

// ErrInvalidToken is the rejection a [TokenVerifier] returns (or wraps) for a token it does not
// accept; it is [streamable.ErrInvalidToken].
var ErrInvalidToken = streamable.ErrInvalidToken

// ResourceFromContext returns the canonical URI of the MCP endpoint a request being
// authenticated was sent to, the audience its token must have been issued for; the transport
// sets it on the context of [TokenVerifier].VerifyToken. See [streamable.ResourceFromContext].
func ResourceFromContext(ctx context.Context) string { return streamable.ResourceFromContext(ctx) }

// WithResource returns a context whose [ResourceFromContext] is resource, for calling a
// [TokenVerifier] outside the transport; see [streamable.WithResource].
func WithResource(ctx context.Context, resource string) context.Context {
	return streamable.WithResource(ctx, resource)
}

// Defaults of the Streamable HTTP transport's zero configuration.
const (
	// DefaultSessionIdleTimeout is how long an HTTP session may stay idle when
	// [HTTPConfig].SessionIdleTimeout is zero.
	DefaultSessionIdleTimeout = streamable.DefaultSessionIdleTimeout
	// DefaultStreamRetry is the reconnection delay sent in the retry field of a POST SSE
	// stream's priming event when [HTTPConfig].StreamRetry is zero.
	DefaultStreamRetry = streamable.DefaultStreamRetry
	// DefaultPassivateAfter is how long an HTTP session with no request in progress keeps its
	// connection actor when [HTTPConfig].PassivateAfter is zero.
	DefaultPassivateAfter = streamable.DefaultPassivateAfter
	// DefaultVerifyTimeout bounds one token verification when [AuthConfig].VerifyTimeout is
	// zero.
	DefaultVerifyTimeout = streamable.DefaultVerifyTimeout
	// DefaultMaxSessions bounds the open HTTP sessions when [HTTPConfig].MaxSessions is zero.
	DefaultMaxSessions = streamable.DefaultMaxSessions
	// DefaultMaxSessionsPerSubject bounds the open HTTP sessions of one authenticated subject
	// when [HTTPConfig].MaxSessionsPerSubject is zero.
	DefaultMaxSessionsPerSubject = streamable.DefaultMaxSessionsPerSubject
	// DefaultSSEPath is where a GET opens a stream of the HTTP+SSE transport (MCP 2024-11-05)
	// when [HTTPConfig].SSEPath is empty.
	DefaultSSEPath = streamable.DefaultSSEPath
	// DefaultMessagesPath is the POST path of the HTTP+SSE transport when
	// [HTTPConfig].MessagesPath is empty.
	DefaultMessagesPath = streamable.DefaultMessagesPath
)

// Handler returns the Streamable HTTP transport (MCP 2026-07-28 requests and the sessions of the
// revisions up to 2025-11-25) of the server, to be mounted at the MCP endpoint of the host's own
// mux, for example mux.Handle("/mcp", srv.Handler()). Every call returns the same handler,
// configured by [Config].HTTP; its sessions live until they are deleted, expire or the server
// shuts down. A POST body larger than [Config].Limits.MaxMessageSize gets 413, and the
// transport's unexpected failures (a token verifier that fails, a session that cannot be opened)
// reach [Config].OnError.
//
// The HTTP contract (POST, GET and DELETE on one endpoint, sessions and their ids, JSON and
// resumable SSE answers, the standalone stream, statuses, Host and Origin checks, CORS, bearer
// auth, the HTTP+SSE transport and the paths to mount for it) is written in the doc of package
// streamable. With [Config].Cluster the handler is that transport behind the cluster's
// forwarding (see package cluster).
func (s *Server) Handler() http.Handler { return s.handler }

// ResourceMetadataHandler serves the OAuth 2.0 protected-resource metadata (RFC 9728) of the
// endpoint when [HTTPConfig].Auth is set, and 404 otherwise. Mount it at
// /.well-known/oauth-protected-resource and at that path followed by the endpoint's path (for
// /mcp: /.well-known/oauth-protected-resource/mcp), the locations MCP clients try.
func (s *Server) ResourceMetadataHandler() http.Handler { return s.http.ResourceMetadataHandler() }

// Sessions returns the number of live HTTP sessions.
func (s *Server) Sessions() int { return s.http.Sessions() }
