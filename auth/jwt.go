package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// Defaults of [JWTConfig].
const (
	// DefaultLeeway is the clock skew allowed on exp, nbf and iat when [JWTConfig].Leeway is 0.
	DefaultLeeway = 30 * time.Second
	// DefaultMinRefreshInterval is the shortest time between two fetches of the issuer's JWK
	// Set when [JWTConfig].MinRefreshInterval is 0.
	DefaultMinRefreshInterval = 10 * time.Second
	// DefaultMaxKeyAge is how long a fetched JWK Set is used before it is fetched again when
	// [JWTConfig].MaxKeyAge is 0.
	DefaultMaxKeyAge = time.Hour
)

// DefaultAlgorithms are the signature algorithms a [JWTVerifier] accepts when
// [JWTConfig].Algorithms is nil.
var DefaultAlgorithms = []string{"RS256", "PS256", "ES256", "EdDSA"}

// JWTConfig configures a [JWTVerifier]. Only Issuer is required.
type JWTConfig struct {
	// Issuer is the authorization server's issuer identifier, for example
	// "https://auth.example.com" or "https://login.example.com/tenant1/v2.0". A token's iss
	// must be exactly this. Unless JWKSURL is set, the verifier reads the issuer's metadata
	// (RFC 8414 /.well-known/oauth-authorization-server, falling back to OpenID Connect's
	// /.well-known/openid-configuration) for its jwks_uri; the document must name this issuer.
	// It must be https (http only on a loopback host), without query or user information; an
	// https issuer's jwks_uri must be https too.
	Issuer string

	// Audience is the resource the tokens must have been issued for: a token's aud (a string
	// or an array) must contain it. Empty means the endpoint's resource URI of each request
	// ([streamable.ResourceFromContext]: the transport's AuthConfig.Resource, else the URL the
	// request was sent to); called outside the transport without [streamable.WithResource],
	// the verifier then rejects every token. An audience equals the expected one exactly, or after lowercasing
	// the scheme and host and dropping one trailing slash.
	Audience string

	// JWKSURL, when set, is where the issuer's JWK Set is fetched, without reading its
	// metadata. Empty means the metadata's jwks_uri. It must be https (http only on a loopback
	// host).
	JWKSURL string

	// Algorithms lists the signature algorithms accepted ("RS256", "PS256", "ES256", "EdDSA",
	// "RS384", ...). Nil means [DefaultAlgorithms]. "none" is never accepted, and HS256,
	// HS384 and HS512 only with SharedSecret.
	Algorithms []string

	// SharedSecret, when set, is the key of HMAC-signed tokens (HS256, HS384, HS512), which are
	// then accepted besides Algorithms. Nil means HMAC-signed tokens are rejected.
	SharedSecret []byte

	// Leeway is the clock skew allowed when checking exp, nbf and iat. 0 means DefaultLeeway;
	// negative means none.
	Leeway time.Duration

	// RequireATJWT rejects tokens whose header's typ is not at+jwt (RFC 9068). False accepts
	// at+jwt, JWT and no typ, as most identity providers issue; any other typ (an ID token's
	// or a logout token's, say) is always rejected.
	RequireATJWT bool

	// MinRefreshInterval is the shortest time between two fetches of the JWK Set. A token
	// signed with a key the cached set does not have makes the verifier fetch the set again,
	// unless it did less than this long ago: then the token is rejected (or, when that last
	// fetch failed, the verification fails with its error), so a flood of tokens naming
	// made-up keys costs one fetch per interval. It is also how long a failed fetch waits
	// before the next try. 0 means DefaultMinRefreshInterval.
	MinRefreshInterval time.Duration

	// MaxKeyAge is how long a fetched JWK Set is used before the next request fetches it again
	// (the other requests keep using the old one meanwhile, without waiting, and keep it if
	// the fetch fails).
	// 0 means DefaultMaxKeyAge.
	MaxKeyAge time.Duration

	// HTTPClient sends the requests to the issuer. Nil means a client of its own with
	// net/http's default transport; either way each request is bounded by FetchTimeout, and
	// follows a redirect only within the origin it was sent to (the verifier uses a copy of
	// the client whose CheckRedirect refuses the others before calling this one's).
	HTTPClient *http.Client

	// FetchTimeout bounds each request to the issuer (metadata, JWK Set), and four times it
	// a whole fetch (three metadata locations, the JWK Set), which runs on a context of its
	// own: a verification that ends (its client gone, the transport's VerifyTimeout) stops
	// waiting for the fetch it started, and the fetch goes on for the others. 0 means
	// DefaultFetchTimeout.
	FetchTimeout time.Duration

	// Now returns the current time. Nil means time.Now.
	Now func() time.Time

	// AllowSenderConstrained accepts tokens bound to a key of the client, those with a cnf
	// claim (a DPoP key's thumbprint, jkt, RFC 9449; a client certificate's, x5t#S256, RFC
	// 8705), as if they were bearer tokens. Such a token is worth something only with the
	// client's proof of possession (a DPoP proof, the TLS client certificate), which this
	// server does not check: accepted without it, anyone holding a copy of the token can use
	// it, which is what the binding is there to prevent. Set it only when something in front
	// of the server (a gateway terminating mutual TLS, a proxy checking DPoP proofs) checks
	// the proof; the claims (Claims.Get("cnf", ...)) carry the binding for a handler that
	// checks it itself. False (the default) rejects them: 401.
	AllowSenderConstrained bool

	// Logger gets a warning for each key of the issuer's JWK Set that cannot verify
	// signatures and is left out (an unsupported key type or curve, a use: enc key), once per
	// key. Nil means no logging.
	Logger *zap.Logger
}

// JWTVerifier verifies JWT access tokens offline with the issuer's published keys. It is a
// [streamable.TokenVerifier] (toolgrain.TokenVerifier); its methods are safe for concurrent use.
//
// A token is accepted when its signature checks with a key of the issuer's JWK Set under an
// accepted algorithm, and its claims say it is valid here and now: iss is the issuer, aud
// contains the audience, exp is present and not past, nbf and iat (when present) are not in
// the future (each with the leeway), and it has a sub or a client_id. Otherwise VerifyToken
// returns an error wrapping [streamable.ErrInvalidToken] that says why (the client gets 401).
// A token longer than 16 KiB, or with characters other than base64url and '.', is rejected
// before it is parsed. A sender-constrained token (a cnf claim: DPoP, mutual TLS) is rejected
// unless [JWTConfig].AllowSenderConstrained.
//
// Keys are fetched on the first verification, not when the verifier is made: an issuer that is
// down then does not keep the server from starting. While no fetched key can decide (nothing
// fetched yet, or a token signed with a key the set does not have while the last fetch failed),
// VerifyToken fails with the fetch's error, which is not a rejection (the client gets 503 and
// the error reaches OnError); once the issuer answers again the next verification fetches and
// succeeds. A known key keeps deciding while the issuer is down.
type JWTVerifier struct {
	issuer   string
	audience string
	secret   []byte
	strict   bool
	bound    bool // AllowSenderConstrained
	parser   *jwt.Parser
	maxAge   time.Duration
	now      func() time.Time
	keys     keyCache
}

var _ streamable.TokenVerifier = (*JWTVerifier)(nil)

// NewJWTVerifier returns the verifier configured by cfg. It checks the configuration only (no
// network I/O): a missing or malformed Issuer, a malformed Audience or JWKSURL, an unknown
// algorithm, "none", or an HMAC algorithm in Algorithms are errors.
func NewJWTVerifier(cfg JWTConfig) (*JWTVerifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("auth: JWTConfig.Issuer is empty")
	}
	iss, err := checkURL("issuer", cfg.Issuer)
	if err != nil {
		return nil, err
	}
	if iss.RawQuery != "" || iss.ForceQuery || iss.User != nil {
		return nil, fmt.Errorf("auth: issuer %q: an issuer identifier has no query and no user information (RFC 8414 §2)", redact(iss))
	}
	if cfg.Audience != "" {
		if _, err := url.Parse(cfg.Audience); err != nil {
			return nil, fmt.Errorf("auth: audience %q: %w", cfg.Audience, err)
		}
	}
	if cfg.JWKSURL != "" {
		if _, err := checkURL("JWK Set URL", cfg.JWKSURL); err != nil {
			return nil, err
		}
	}
	algs := cfg.Algorithms
	if algs == nil {
		algs = DefaultAlgorithms
	}
	valid := make([]string, 0, len(algs)+3)
	for _, a := range algs {
		switch {
		case strings.EqualFold(a, "none"):
			return nil, errors.New(`auth: the algorithm "none" is never accepted`)
		case strings.HasPrefix(a, "HS"):
			return nil, fmt.Errorf("auth: %s is accepted only through JWTConfig.SharedSecret", a)
		case jwt.GetSigningMethod(a) == nil:
			return nil, fmt.Errorf("auth: unknown signature algorithm %q", a)
		}
		valid = append(valid, a)
	}
	if len(cfg.SharedSecret) > 0 {
		valid = append(valid, "HS256", "HS384", "HS512")
	}
	leeway := cfg.Leeway
	switch {
	case leeway == 0:
		leeway = DefaultLeeway
	case leeway < 0:
		leeway = 0
	}
	v := &JWTVerifier{
		issuer:   cfg.Issuer,
		audience: cfg.Audience,
		secret:   slices.Clone(cfg.SharedSecret),
		strict:   cfg.RequireATJWT,
		bound:    cfg.AllowSenderConstrained,
		maxAge:   cfg.MaxKeyAge,
		now:      cfg.Now,
	}
	if v.maxAge <= 0 {
		v.maxAge = DefaultMaxKeyAge
	}
	if v.now == nil {
		v.now = time.Now
	}
	v.parser = jwt.NewParser(jwt.WithValidMethods(valid), jwt.WithIssuer(cfg.Issuer), jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), jwt.WithLeeway(leeway), jwt.WithTimeFunc(v.now), jwt.WithStrictDecoding())
	v.keys = keyCache{
		issuer:      cfg.Issuer,
		https:       iss.Scheme == "https",
		jwksURL:     cfg.JWKSURL,
		client:      guard(cfg.HTTPClient),
		timeout:     cfg.FetchTimeout,
		minInterval: cfg.MinRefreshInterval,
		now:         v.now,
		bind:        v.keyfunc,
		log:         cfg.Logger,
	}
	if v.keys.log == nil {
		v.keys.log = zap.NewNop()
	}
	if v.keys.timeout <= 0 {
		v.keys.timeout = DefaultFetchTimeout
	}
	if v.keys.minInterval <= 0 {
		v.keys.minInterval = DefaultMinRefreshInterval
	}
	return v, nil
}

// maxTokenLength is the longest token the verifiers consider, 16 KiB: twice a JWT with a
// large claims set (Entra ID's with 200 group ids is about 11 KiB; most access tokens are
// under 2 KiB), and what the Streamable HTTP transport lets through. A longer token is
// rejected before any parsing, hashing or request, so that a flood of huge made-up tokens costs
// nothing but reading the header.
const maxTokenLength = 16 << 10

// errTooLong rejects a token over maxTokenLength.
var errTooLong = fmt.Errorf("%w: longer than %d bytes", streamable.ErrInvalidToken, maxTokenLength)

// errUnknownKey: the token names a key (kid) the cached JWK Set does not have.
var errUnknownKey = errors.New("signed with a key the issuer does not publish")

// VerifyToken verifies token and returns its identity: Subject is sub (else client_id), Scopes
// come from scope or scp, and Extra is the token's [*Claims]. See [JWTVerifier] for what is a
// rejection and what is a failure.
func (v *JWTVerifier) VerifyToken(ctx context.Context, token string) (*tools.Identity, error) {
	if len(token) > maxTokenLength {
		return nil, errTooLong
	}
	if !compactJWS(token) {
		return nil, fmt.Errorf("%w: not a compact JWS (characters other than base64url and '.')", streamable.ErrInvalidToken)
	}
	ks := v.keys.keys.Load()
	switch {
	case ks == nil:
		err := v.keys.refresh(ctx, true)
		if ks = v.keys.keys.Load(); ks == nil {
			if errors.Is(err, errRateLimited) {
				err = v.keys.failure()
			}
			if err == nil { // the request that fetched went away
				err = ctx.Err()
			}
			return nil, err
		}
	case v.now().Sub(ks.fetched) > v.maxAge:
		// Stale: fetched again by this request, unless another is doing it; the old set
		// decides meanwhile, and if that fails.
		_ = v.keys.refresh(ctx, false)
		ks = v.keys.keys.Load()
	}
	id, err := v.verify(ctx, token, ks)
	if !errors.Is(err, errUnknownKey) {
		return id, err
	}
	// A key the cached set does not have: the issuer may have rotated its keys.
	if ferr := v.keys.refresh(ctx, true); ferr != nil {
		if errors.Is(ferr, errRateLimited) {
			ferr = v.keys.failure()
		}
		if ferr != nil {
			return nil, ferr
		}
		if next := v.keys.keys.Load(); next == ks {
			return nil, err
		}
	}
	return v.verify(ctx, token, v.keys.keys.Load())
}

// base64url marks the bytes of the base64url alphabet (RFC 4648 §5) and '.', the only ones a
// compact JWS has.
var base64url = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.") {
		t[c] = true
	}
	return t
}()

// compactJWS reports whether token is made of base64url characters and dots only. With the
// parser's strict decoding (no padding, no non-zero trailing bits: RFC 7515 §2 and RFC 4648
// §3.5), which alone still skips line breaks, one token then has exactly one encoding: a
// signed token cannot be re-encoded into another string that verifies, to slip past a cache
// or a deny list keyed on the token's text.
func compactJWS(token string) bool {
	for i := 0; i < len(token); i++ {
		if !base64url[token[i]] {
			return false
		}
	}
	return true
}

// verify checks token with the keys of ks.
func (v *JWTVerifier) verify(ctx context.Context, token string, ks *keySet) (*tools.Identity, error) {
	var c jwtClaims
	_, err := v.parser.ParseWithClaims(token, &c, ks.keyfunc)
	if err != nil {
		if errors.Is(err, errUnknownKey) {
			return nil, fmt.Errorf("%w: %w", streamable.ErrInvalidToken, errUnknownKey)
		}
		return nil, fmt.Errorf("%w: %w", streamable.ErrInvalidToken, err)
	}
	aud := v.audience
	if aud == "" {
		aud = streamable.ResourceFromContext(ctx)
	}
	if !audienceHas(c.Audience, aud) {
		return nil, fmt.Errorf("%w: issued for %q, not %q", streamable.ErrInvalidToken, []string(c.Audience), aud)
	}
	if !v.bound && confirmed(c.Cnf) {
		return nil, errSenderConstrained
	}
	return c.identity()
}

// keyfunc returns the key lookup of tokens in ks: the shared secret for HMAC, else the key of
// the token's kid in ks, after checking the token's typ.
func (v *JWTVerifier) keyfunc(ks *keySet) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		if !v.typeAccepted(t.Header["typ"]) {
			return nil, fmt.Errorf("typ %v is not an access token's", t.Header["typ"])
		}
		if _, ok := t.Method.(*jwt.SigningMethodHMAC); ok {
			return v.secret, nil // only reached with a secret: HS* is not valid otherwise
		}
		return lookup(ks.byKID, ks.all, t)
	}
}

// typeAccepted reports whether a JWT header's typ is an access token's.
func (v *JWTVerifier) typeAccepted(typ any) bool {
	if typ == nil {
		return !v.strict
	}
	s, ok := typ.(string)
	if !ok {
		return false
	}
	s = strings.TrimPrefix(strings.ToLower(s), "application/")
	return s == "at+jwt" || (!v.strict && s == "jwt")
}

// audienceHas reports whether the audience list auds contains want (see [JWTConfig].Audience
// for the comparison). An empty want matches nothing.
func audienceHas(auds []string, want string) bool {
	if want == "" {
		return false
	}
	for _, a := range auds {
		if a == want || sameResource(a, want) {
			return true
		}
	}
	return false
}

// sameResource compares two resource URIs after lowercasing their scheme and host and dropping
// one trailing slash from their path (MCP: accept uppercase scheme and host; prefer no trailing
// slash).
func sameResource(a, b string) bool {
	ua, err := url.Parse(a)
	if err != nil {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false
	}
	norm := func(u *url.URL) string {
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimSuffix(u.EscapedPath(), "/") + "?" + u.RawQuery
	}
	return ua.Opaque == "" && ub.Opaque == "" && ua.Host != "" && norm(ua) == norm(ub)
}

// Claims are the claims of a verified JWT access token, the Extra of its identity. Raw holds
// them all as the token carried them; the fields are the registered ones and those of RFC 9068.
type Claims struct {
	Issuer    string
	Subject   string
	Audience  []string
	ExpiresAt time.Time
	NotBefore time.Time // zero when absent
	IssuedAt  time.Time // zero when absent
	ID        string    // jti
	ClientID  string    // client_id
	Scopes    []string  // from scope or scp
	// Raw is the token's claims set, the JSON object of its payload.
	Raw json.RawMessage

	idx *claimIndex // Raw decoded for Claim, once
}

// MarshalJSON returns Raw, so that the claims cross a cluster as the token carried them.
func (c *Claims) MarshalJSON() ([]byte, error) {
	if len(c.Raw) == 0 {
		return []byte("{}"), nil
	}
	return c.Raw, nil
}

// Get decodes the claim named name into v; it reports false when the token has no such claim.
func (c *Claims) Get(name string, v any) (bool, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(c.Raw, &all); err != nil {
		return false, err
	}
	raw, ok := all[name]
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

// jwtClaims is what the parser decodes a token's payload into.
type jwtClaims struct {
	jwt.RegisteredClaims
	Scope    string          `json:"scope"`
	Scp      json.RawMessage `json:"scp"`
	ClientID string          `json:"client_id"`
	Cnf      json.RawMessage `json:"cnf"`
	raw      []byte
}

// errSenderConstrained rejects a token with a cnf claim, unless AllowSenderConstrained.
var errSenderConstrained = fmt.Errorf("%w: sender-constrained (cnf: DPoP or mutual TLS); this server accepts bearer tokens only", streamable.ErrInvalidToken)

// confirmed reports whether a cnf member (RFC 7800) is present: anything but absent or null,
// an empty object included (oidc-provider's introspection answers {} for a bound token whose
// binding it does not describe).
func confirmed(cnf json.RawMessage) bool {
	return len(cnf) > 0 && string(cnf) != "null"
}

func (c *jwtClaims) UnmarshalJSON(b []byte) error {
	type plain jwtClaims
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	c.raw = slices.Clone(b)
	return nil
}

// identity returns the identity of verified claims; a token with neither sub nor client_id
// names no one and is rejected.
func (c *jwtClaims) identity() (*tools.Identity, error) {
	sub := c.Subject
	if sub == "" {
		sub = c.ClientID
	}
	if sub == "" {
		return nil, fmt.Errorf("%w: neither sub nor client_id", streamable.ErrInvalidToken)
	}
	scopes, err := parseScopes(c.Scope, c.Scp)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streamable.ErrInvalidToken, err)
	}
	out := &struct {
		id tools.Identity
		c  Claims
	}{} // one allocation for both
	out.c = Claims{
		Issuer:   c.Issuer,
		Subject:  c.Subject,
		Audience: c.Audience,
		ID:       c.ID,
		ClientID: c.ClientID,
		Scopes:   scopes,
		Raw:      c.raw,
		idx:      newClaimIndex(c.raw),
	}
	if c.ExpiresAt != nil {
		out.c.ExpiresAt = c.ExpiresAt.Time
	}
	if c.NotBefore != nil {
		out.c.NotBefore = c.NotBefore.Time
	}
	if c.IssuedAt != nil {
		out.c.IssuedAt = c.IssuedAt.Time
	}
	out.id = tools.Identity{Subject: sub, Scopes: scopes, Extra: &out.c}
	return &out.id, nil
}

// parseScopes reads the granted scopes from scope (space-separated) or, when that is empty,
// from scp (an array of strings, or a space-separated string).
func parseScopes(scope string, scp json.RawMessage) ([]string, error) {
	if scope != "" {
		return strings.Fields(scope), nil
	}
	if len(scp) == 0 || string(scp) == "null" {
		return nil, nil
	}
	if scp[0] == '"' {
		var s string
		if err := json.Unmarshal(scp, &s); err != nil {
			return nil, fmt.Errorf("scp: %w", err)
		}
		return strings.Fields(s), nil
	}
	var list []string
	if err := json.Unmarshal(scp, &list); err != nil {
		return nil, fmt.Errorf("scp is neither a string nor an array of strings")
	}
	return list, nil
}
