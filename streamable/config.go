// Package streamable configures the Streamable HTTP transport of MCP, the http.Handler that
// toolgrain's Server.Handler returns: one endpoint that takes JSON-RPC messages by POST and
// answers each request as one JSON body or as a resumable SSE stream, with sessions, a
// standalone SSE stream per session, protection against DNS rebinding and cross-site requests,
// and optional bearer-token authentication (the server as an OAuth 2.1 resource server, with RFC
// 9728 protected-resource metadata). It serves both protocol eras: the legacy sessions of the
// revisions up to MCP 2025-11-25, opened by initialize and named by the Mcp-Session-Id header,
// and the stateless requests of MCP 2026-07-28, which carry everything in each POST.
//
// This package holds what a program gives the transport: its [Config] (toolgrain.HTTPConfig),
// bearer-token authentication ([AuthConfig], [TokenVerifier]) and the defaults of its zero
// configuration. The transport itself is internal to the module; what each request gets is
// below.
//
// # The HTTP contract
//
// The endpoint takes POST (a JSON-RPC message), GET (the session's standalone SSE stream) and
// DELETE (end the session):
//
//   - initialize, without an Mcp-Session-Id header, opens a session (one connection actor) and
//     its answer carries the new Mcp-Session-Id. Every other request needs the header: 400
//     without it, 404 for an unknown or ended session. Past [Config].MaxSessions (or
//     MaxSessionsPerSubject) an initialize gets 503 (or 429) with Retry-After.
//   - A notification or response gets 202 with no body. A request gets its answer as one JSON
//     body, or as an SSE stream when the call sends anything before its result (progress): then
//     those notifications and the result go on the stream, which ends after the result. A
//     JSON-RPC error answers a well-formed request with status 200. A cancelled call's stream
//     ends with no response.
//   - An SSE answer is resumable: it starts with a priming event (an id, a retry field and empty
//     data), every event has an id unique in the session that names its stream, and a GET with
//     Last-Event-ID gets that stream's events after the id, then the rest of it live (400 for an
//     id the session never issued, 410 for a stream that is complete or no longer kept). A
//     handler closes its stream's connection, without ending its call, with
//     client.CloseStream.
//   - A body that is not a valid JSON-RPC message gets 400 with a JSON-RPC error; one larger
//     than the server's MaxMessageSize (toolgrain.Config.Limits) gets 413.
//   - MCP-Protocol-Version is checked after initialize: absent means 2025-03-26, an unsupported
//     value gets 400.
//   - A JSON-RPC batch is served in a session that negotiated 2025-03-26: one array of its
//     responses as the final message (a JSON body, or the last SSE event), or 202 when it holds
//     no request. Anywhere else it gets 400 and -32600, as does an empty batch or one of more
//     than protocol.MaxBatchLength messages.
//   - A client that disconnects does not cancel its call; notifications/cancelled does, from
//     any POST of the session. Shutting the server down cancels every call in flight.
//   - Host and Origin are checked first (403), then the bearer token when [Config].Auth is set
//     (401, 403 insufficient_scope, 503 when the verifier fails unexpectedly). A tools/call
//     whose caller lacks a scope of the tool (tools.Tool.Scopes) gets 403 with the step-up
//     challenge (error="insufficient_scope", the scopes to ask for, resource_metadata) and the
//     JSON-RPC error protocol.ErrInsufficientScope with the request's id, in both eras; the
//     tool does not run. When the engine hides such tools (toolgrain.Config.HideForbiddenTools)
//     the call is answered as a call of an unknown tool instead, with nothing checked first.
//   - A modern (MCP 2026-07-28) request is a POST whose MCP-Protocol-Version header is
//     2026-07-28, or whose params._meta carries the envelope; it ignores any Mcp-Session-Id and
//     opens no session. Its MCP-Protocol-Version, Mcp-Method and Mcp-Name headers must agree
//     with the body (400 and -32020 otherwise); a missing envelope field is 400 and -32602, a
//     version not served 400 and -32022, a method the revision does not have 404 and -32601.
//     Its answer is one JSON body or an SSE stream without event ids, never resumed; the client
//     closing it cancels the request. GET and DELETE with a modern version header get 405.
//   - CORS, for the origins [Config].AllowedOrigins lists: a preflight (OPTIONS with
//     Access-Control-Request-Method) is answered 204 before authentication, allowing GET, POST
//     and DELETE and the request headers MCP uses (Accept, Authorization, Content-Type,
//     Last-Event-ID, Mcp-Method, Mcp-Name, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Param-*;
//     403 for another); every answer to such an origin carries Access-Control-Allow-Origin
//     (the origin, or * when every origin is accepted) and exposes Mcp-Session-Id,
//     MCP-Protocol-Version and WWW-Authenticate. Credentials are never allowed.
//   - The HTTP+SSE transport of MCP 2024-11-05 is served beside it unless
//     [Config].DisableSSE: a GET without Mcp-Session-Id (nor Last-Event-ID, nor the modern
//     version header) opens a session and its event stream, whose first event, "endpoint",
//     names the URL to POST to, with the session in its sessionId query parameter
//     ([Config].MessagesPath for a stream opened at [Config].SSEPath, else the GET's own path).
//     A POST naming its session so, without Mcp-Session-Id, gets 202 Accepted and no body; its
//     answer goes on the stream (a 2025-03-26 session's batch too: the array of its responses;
//     a batch elsewhere gets 400 and -32600 as above). The session is a legacy session under the same limits, auth
//     and checks; the stream's close ends it, cancelling its calls. Mount the handler at the
//     SSE and messages paths too for clients configured with them.
//
// Legacy error statuses come with a JSON-RPC error body whose id is null, but for an initialize
// refused at a limit on sessions, which echoes it; modern ones echo the request's id.
//
// # What a connected client costs
//
// Over HTTP/1.x on Linux, a GET stream, or a subscriptions/listen
// stream once its acknowledgement is out, leaves net/http (Hijack): one goroutine per handler,
// running while such streams are open, writes for all of them without blocking, and its
// connection is a small record; a client that closes is seen at once, one that vanishes
// within about three [Config].KeepAlive, and one that stops reading is cut off once more than
// 64 KiB wait behind its full socket. The server's Shutdown ends them. A session with no
// request in progress (its GET stream aside) lets its connection actor go after
// [Config].PassivateAfter and keeps its state in one record; its next request brings the actor
// back first. HTTP/2, TLS, and a ResponseWriter that cannot hijack keep net/http's goroutine per
// stream.
package streamable

import "time"

// DefaultSessionIdleTimeout is how long a session may stay idle when
// [Config].SessionIdleTimeout is zero.
const DefaultSessionIdleTimeout = 30 * time.Minute

// DefaultPassivateAfter is how long a legacy session with no request in progress keeps its
// connection actor when [Config].PassivateAfter is zero.
const DefaultPassivateAfter = 250 * time.Millisecond

// Defaults of the limits on sessions.
const (
	// DefaultMaxSessions is the limit on open legacy sessions when [Config].MaxSessions is
	// zero. An idle session holds about 4 KB, so the limit keeps them to some tens of MB.
	DefaultMaxSessions = 10000
	// DefaultMaxSessionsPerSubject is the limit on the legacy sessions of one authenticated
	// subject when [Config].MaxSessionsPerSubject is zero: a tenth of DefaultMaxSessions, so
	// that no one token can take every place.
	DefaultMaxSessionsPerSubject = 1000
)

// DefaultKeepAlive is how often an open modern SSE stream with nothing to say gets a comment
// line, when [Config].KeepAlive is zero: proxies and clients that time idle connections out keep
// a subscriptions/listen stream open.
const DefaultKeepAlive = 15 * time.Second

// DefaultStreamRetry is the reconnection delay sent in the retry field of a POST SSE stream's
// priming event when [Config].StreamRetry is zero.
const DefaultStreamRetry = time.Second

// Default paths of the HTTP+SSE transport.
const (
	// DefaultSSEPath is the path whose GET opens an HTTP+SSE stream when [Config].SSEPath is
	// empty.
	DefaultSSEPath = "/sse"
	// DefaultMessagesPath is the POST path the endpoint event of a stream opened on the SSE
	// path names when [Config].MessagesPath is empty.
	DefaultMessagesPath = "/messages"
)

// DefaultVerifyTimeout bounds one token verification when [AuthConfig].VerifyTimeout is zero.
const DefaultVerifyTimeout = 10 * time.Second

// Config configures the transport (toolgrain.Config.HTTP is a Config). Its zero value is
// usable: sessions expire after 30 idle minutes, at most 10,000 are open at once, only
// same-origin browser requests are accepted, and there is no authentication.
type Config struct {
	// SessionIdleTimeout ends a session that has had no HTTP request in progress for this long:
	// its calls in flight are cancelled, its connection actor stops, and its id answers 404.
	// A session with an open POST or GET stream is never idle. 0 means
	// DefaultSessionIdleTimeout.
	SessionIdleTimeout time.Duration

	// PassivateAfter lets a legacy session's connection actor go once the session has had no
	// request in progress (its standalone GET stream aside) for this long: the session then
	// costs a compact record of its state, and its next request brings an actor back from it
	// first, with everything as it was (the negotiated version, what the client declared, its
	// log level and resource subscriptions, its resumable streams and their event ids, its idle
	// expiry, its place under the limits, its cluster home); list changes and resource updates
	// still reach its GET stream meanwhile. 0 means DefaultPassivateAfter; negative means never.
	PassivateAfter time.Duration

	// MaxSessions bounds the legacy sessions open at once, those whose initialize is still in
	// progress included; a session keeps its place until it is deleted or expires. An
	// initialize over it is refused, unprocessed, with 503 Service Unavailable, a Retry-After
	// header and the JSON-RPC error -31000 "Server busy: too many sessions open on the server
	// (limit N)", data {"scope":"sessions","limit":N} (protocol.ErrTooManySessions). 0 means
	// DefaultMaxSessions; negative means no limit.
	MaxSessions int
	// MaxSessionsPerSubject bounds the legacy sessions one authenticated subject has open at
	// once, so that one client cannot take every place; it applies only when Auth is set
	// (without auth all clients are one anonymous subject, and MaxSessions alone applies). An
	// initialize over it gets 429 Too Many Requests, a Retry-After header and -31000 "Server
	// busy: too many sessions open for this subject (limit N)", data
	// {"scope":"subject","limit":N}. 0 means DefaultMaxSessionsPerSubject; negative means no
	// limit.
	MaxSessionsPerSubject int

	// AllowedOrigins lists the browser origins ("https://app.example.com") accepted besides the
	// endpoint's own. A request without an Origin header (any non-browser client) is always
	// accepted; one whose Origin names the same host and port as its Host header too; any other
	// gets 403 (DNS rebinding and cross-site requests). "*" accepts every origin. The origins
	// listed get CORS (see the package doc): a page of one may call the endpoint, the HTTP+SSE paths
	// and the protected-resource metadata from the browser.
	AllowedOrigins []string

	// AllowedHosts lists extra Host header values ("mcp.example.com", or with a port) accepted
	// when the server is reached on a loopback address, where only localhost, 127.0.0.1 and
	// [::1] are accepted by default: a foreign Host there is a DNS-rebinding attempt and gets
	// 403. When set, it also restricts requests reaching the server on other addresses; empty
	// means those are not checked. With Auth and a Resource that is not an absolute URL, these
	// are the names the tokens' audience may take from a request, and at least one is needed
	// (see [AuthConfig].Resource).
	AllowedHosts []string

	// Auth turns on bearer-token authentication. Nil means none.
	Auth *AuthConfig

	// StreamRetry is the reconnection delay announced in the retry field of the priming event
	// that starts every POST SSE stream. 0 means DefaultStreamRetry.
	StreamRetry time.Duration

	// KeepAlive is how often an open SSE stream with nothing to send (a modern request's, a
	// subscriptions/listen stream, a session's standalone GET stream) gets a comment line,
	// which keeps it open through proxies that close idle connections. It is also the
	// dead-client bound of a stream taken from net/http (see the package doc): data a client has not
	// acknowledged for this long (TCP_USER_TIMEOUT), or a backlog its full socket has not taken
	// for this long, ends the stream. 0 means DefaultKeepAlive; negative means no comments
	// (and DefaultKeepAlive as the bound).
	KeepAlive time.Duration

	// DisableSSE turns off the HTTP+SSE transport of MCP 2024-11-05, which is served by default
	// beside Streamable HTTP (see the package doc): a GET without Mcp-Session-Id then gets 400, as
	// does a POST that names its session by the sessionId query parameter alone.
	DisableSSE bool
	// SSEPath is the path, as the handler sees it, whose GET opens an HTTP+SSE stream whose
	// endpoint event names MessagesPath; a GET without Mcp-Session-Id on any other path the
	// handler serves (the MCP endpoint) names that path itself. "" means DefaultSSEPath.
	SSEPath string
	// MessagesPath is the POST path named by the endpoint event of a stream opened on SSEPath,
	// as clients must send it (behind a proxy that rewrites paths, the public one). "" means
	// DefaultMessagesPath.
	MessagesPath string
}

// AuthConfig turns on bearer-token authentication for the Streamable HTTP transport (MCP
// 2025-11-25 authorization: the server is an OAuth 2.1 resource server). Only Verifier is
// required.
type AuthConfig struct {
	// Verifier checks each request's token. Required. A token longer than 16 KiB gets 401
	// invalid_token without a call of the verifier.
	Verifier TokenVerifier

	// Scopes are needed by every request: a valid token whose identity lacks one of them gets
	// 403 with error="insufficient_scope". They are also named in the scope parameter of the 401
	// challenge. Nil means a valid token is enough. A tool's own scopes (tools.Tool.Scopes) are
	// checked on each tools/call, with the step-up challenge (see the package doc).
	Scopes []string

	// Resource is the canonical URI of the MCP endpoint, the RFC 9728 "resource" that tokens must
	// be issued for, for example "https://mcp.example.com/mcp". A path alone ("/mcp") takes the
	// scheme and host from each request: https when it came over TLS, http otherwise, and a host
	// the client cannot choose: on a loopback connection whose Host is a loopback name, that name
	// with the connection's own port; otherwise the Host header only when [Config].AllowedHosts
	// lists it. Empty means the request's own path on the endpoint. A path or empty needs
	// AllowedHosts to list at least one name (toolgrain.NewServer refuses it otherwise: the handler does not
	// know its listener before its first request); a server reached beyond loopback, or behind
	// a reverse proxy, sets it to the public URL.
	//
	// The HTTP+SSE transport's stream path ([Config].SSEPath) is a resource of its own, the URL
	// its clients connect to and ask a token for: its GET and the POSTs to [Config].MessagesPath
	// are checked for this resource with the SSE path as its path, their challenges name the
	// metadata of that path, and the metadata handler serves it there; unless
	// ResourceMetadataURL is set, which gives every request this resource.
	Resource string

	// ResourceMetadataURL is the URL of the protected-resource metadata document, given to clients
	// in the resource_metadata parameter of every challenge. Empty means the RFC 9728 location
	// derived from Resource: /.well-known/oauth-protected-resource followed by its path.
	ResourceMetadataURL string

	// AuthorizationServers are the issuer URLs of the authorization servers that issue tokens for
	// this resource, listed as "authorization_servers" in the metadata document. MCP requires at
	// least one for clients to run the OAuth flow; without any, clients must get tokens otherwise
	// (static tokens).
	AuthorizationServers []string

	// ScopesSupported is "scopes_supported" in the metadata document. Nil means Scopes.
	ScopesSupported []string

	// ResourceName is the human-readable "resource_name" of the metadata document; empty means
	// none.
	ResourceName string

	// VerifyTimeout bounds one call of the verifier; when it passes, the verification counts as
	// an unexpected failure (503). 0 means DefaultVerifyTimeout.
	VerifyTimeout time.Duration
}
