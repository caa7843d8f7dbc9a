// Package auth holds token verifiers for the Streamable HTTP transport: the server as an OAuth
// 2.1 resource server in front of a real authorization server (Auth0, Okta, Entra ID, Keycloak,
// oidc-provider, ...). Each implements [streamable.TokenVerifier] (toolgrain.TokenVerifier):
//
//   - [JWTVerifier] checks JWT access tokens (RFC 9068, and the JWTs identity providers issue
//     without that profile) offline, with the issuer's published keys (JWKS), which it discovers
//     from the issuer's metadata and caches;
//   - [IntrospectionVerifier] asks the authorization server about opaque tokens (token
//     introspection, RFC 7662) with the server's client credentials, and caches the answers.
//
// Both follow the transport's contract: a token they do not accept is an error wrapping
// [streamable.ErrInvalidToken] (the client gets 401 invalid_token and nothing is reported); an
// authorization server that cannot be reached, is slow or answers garbage, while nothing cached
// can decide, is any other error (the client gets 503 with Retry-After and the operator gets
// the error through OnError). Neither does network I/O when it is made, so a server starts while
// its issuer is down and serves 503 until the issuer answers; neither runs anything in the
// background. An introspection runs on the goroutine of the request that needs it; a JWK Set
// fetch on a goroutine of its own, started by the request that needs it and ending with it,
// bounded by timeouts, so that a request that goes away abandons its wait and not the fetch.
//
// The identity a verifier returns carries the subject (the token's sub, else its client_id),
// the scopes (scope, space-separated, or scp, an array or a string) and the claims as the
// identity's Extra: a [*Claims] for a JWT, an [*Introspection] for an opaque token.
package auth
