package auth

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// Defaults of [IntrospectionConfig].
const (
	// DefaultCacheSize bounds the answers an [IntrospectionVerifier] keeps when
	// [IntrospectionConfig].CacheSize is 0.
	DefaultCacheSize = 10000
	// DefaultCacheTTL is how long an answer is kept when [IntrospectionConfig].CacheTTL is 0.
	DefaultCacheTTL = time.Minute
	// DefaultMaxInFlight bounds the introspection requests sent at once when
	// [IntrospectionConfig].MaxInFlight is 0.
	DefaultMaxInFlight = 32
)

// IntrospectionConfig configures an [IntrospectionVerifier]. URL, ClientID and ClientSecret
// are required.
type IntrospectionConfig struct {
	// URL is the authorization server's introspection endpoint (RFC 7662), its metadata's
	// introspection_endpoint. It must be https (http only on a loopback host).
	URL string

	// ClientID and ClientSecret are this server's credentials at the authorization server,
	// sent with each introspection request by HTTP Basic authentication (client_secret_basic).
	ClientID     string
	ClientSecret string

	// Issuer, when set, must be the iss of an answer that has one. Empty means iss is not
	// checked.
	Issuer string

	// Audience is the resource the tokens must have been issued for: the answer's aud (a string
	// or an array) must contain it, and an answer without aud is a rejection. Empty means the
	// endpoint's resource URI of each request ([streamable.ResourceFromContext]), as for
	// [JWTConfig].Audience.
	Audience string

	// CacheSize bounds the answers kept for active tokens (the least recently used goes
	// first); each is keyed by the SHA-256 of its token, never the token itself. 0 means
	// DefaultCacheSize; negative means none is kept: every request asks the server.
	CacheSize int

	// NegativeCacheSize bounds the answers kept for tokens the server says are not active (or
	// refuses to introspect), in a cache of their own, so that a flood of made-up tokens
	// cannot push the answers of valid tokens out. 0 means DefaultCacheSize; negative means
	// none is kept.
	NegativeCacheSize int

	// CacheTTL is how long an answer is kept, and never past the token's exp: a token revoked
	// at the authorization server is still accepted for up to this long. Answers saying a
	// token is not active are kept as long, so a token repeated in a flood costs one request.
	// 0 means DefaultCacheTTL.
	CacheTTL time.Duration

	// MaxInFlight bounds the introspection requests sent at once (a flood of distinct made-up
	// tokens costs one request each; verifications of one token share one). A verification
	// that needs another request waits for one of those in flight to end, for as long as its
	// context allows (the transport's VerifyTimeout, 10 s by default), and then fails: an
	// outage (503), not a rejection. 0 means DefaultMaxInFlight; negative means no bound.
	MaxInFlight int

	// HTTPClient sends the introspection requests. Nil means a client of its own with
	// net/http's default transport; either way each request is bounded by FetchTimeout, and
	// follows a redirect only within the origin it was sent to (see [JWTConfig].HTTPClient).
	HTTPClient *http.Client

	// FetchTimeout bounds each introspection request. 0 means DefaultFetchTimeout.
	FetchTimeout time.Duration

	// Now returns the current time. Nil means time.Now.
	Now func() time.Time

	// AllowSenderConstrained accepts tokens the answer says are bound to a key of the client
	// (a cnf member, or token_type DPoP) as if they were bearer tokens: see
	// [JWTConfig].AllowSenderConstrained for why that is only for a deployment where
	// something in front of the server checks the proof of possession. False (the default)
	// rejects them: 401.
	AllowSenderConstrained bool
}

// IntrospectionVerifier verifies opaque access tokens by asking the authorization server
// (token introspection, RFC 7662) and caches the answers. It is a [streamable.TokenVerifier]
// (toolgrain.TokenVerifier); its methods are safe for concurrent use.
//
// A token is accepted when the server says it is active (a 400 answer whose error is
// unsupported_token_type or invalid_token, a refusal to introspect the token, says it is not),
// and the answer says it is valid here and now: token_type (when present) is Bearer or
// access_token, iss (when present and Issuer is set) is the issuer, the token is not
// sender-constrained (no cnf, token_type not DPoP) unless AllowSenderConstrained, aud contains
// the audience, exp (when present) is not past, nbf (when present) is not in the future, and it
// names a sub or a client_id. Otherwise VerifyToken
// returns an error wrapping [streamable.ErrInvalidToken] that says why (the client gets 401).
//
// An introspection endpoint that cannot be reached, is slow, or answers anything but 200 with a
// JSON object or a refusal of the token makes VerifyToken fail with that error, which is not a
// rejection (the client gets 503 with Retry-After and the error reaches OnError) and is not
// cached, unless the cache holds an answer for the token. That includes the errors RFC 6749
// §5.2 makes the requesting client's: invalid_client (401 or 400: a rotated or wrong client
// secret), unauthorized_client and invalid_request, each a [*StatusError] with its Code.
//
// Concurrent verifications of one token share one request, and at most MaxInFlight requests
// are sent at once. A token longer than 16 KiB is rejected before anything else (no real
// access token is that long; see [JWTVerifier]).
type IntrospectionVerifier struct {
	cfg    IntrospectionConfig
	auth   string // the Authorization header of the requests
	now    func() time.Time
	cache  *answerCache  // of active tokens; nil: none
	neg    *answerCache  // of the others; nil: none
	slots  chan struct{} // one per request in flight; nil: no bound
	flight flights[[sha256.Size]byte]
}

var _ streamable.TokenVerifier = (*IntrospectionVerifier)(nil)

// NewIntrospectionVerifier returns the verifier configured by cfg. It checks the configuration
// only (no network I/O).
func NewIntrospectionVerifier(cfg IntrospectionConfig) (*IntrospectionVerifier, error) {
	if cfg.URL == "" {
		return nil, errors.New("auth: IntrospectionConfig.URL is empty")
	}
	if _, err := checkURL("introspection endpoint", cfg.URL); err != nil {
		return nil, err
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("auth: IntrospectionConfig needs ClientID and ClientSecret")
	}
	v := &IntrospectionVerifier{cfg: cfg, now: cfg.Now}
	if v.now == nil {
		v.now = time.Now
	}
	v.cfg.HTTPClient = guard(v.cfg.HTTPClient)
	if v.cfg.FetchTimeout <= 0 {
		v.cfg.FetchTimeout = DefaultFetchTimeout
	}
	if v.cfg.CacheTTL <= 0 {
		v.cfg.CacheTTL = DefaultCacheTTL
	}
	v.cache, v.neg = newAnswerCache(v.cfg.CacheSize), newAnswerCache(v.cfg.NegativeCacheSize)
	switch n := v.cfg.MaxInFlight; {
	case n == 0:
		v.slots = make(chan struct{}, DefaultMaxInFlight)
	case n > 0:
		v.slots = make(chan struct{}, n)
	}
	// RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic encoding.
	req, _ := http.NewRequest(http.MethodPost, cfg.URL, nil)
	req.SetBasicAuth(url.QueryEscape(cfg.ClientID), url.QueryEscape(cfg.ClientSecret))
	v.auth = req.Header.Get("Authorization")
	return v, nil
}

// Introspection is the authorization server's answer about an active token, the Extra of its
// identity. It must not be modified: cached answers are shared.
type Introspection struct {
	Active    bool     `json:"active"`
	Scope     string   `json:"scope,omitempty"`
	ClientID  string   `json:"client_id,omitempty"`
	Username  string   `json:"username,omitempty"`
	TokenType string   `json:"token_type,omitempty"`
	Exp       int64    `json:"exp,omitempty"`
	Iat       int64    `json:"iat,omitempty"`
	Nbf       int64    `json:"nbf,omitempty"`
	Sub       string   `json:"sub,omitempty"`
	Aud       audience `json:"aud,omitempty"`
	Iss       string   `json:"iss,omitempty"`
	Jti       string   `json:"jti,omitempty"`
	// Cnf is the confirmation of a sender-constrained token (RFC 7800: jkt for DPoP,
	// x5t#S256 for mutual TLS), nil for a bearer token.
	Cnf json.RawMessage `json:"cnf,omitempty"`
	// Raw is the whole answer, members the fields above leave out included.
	Raw json.RawMessage `json:"-"`

	idx *claimIndex // Raw decoded for Claim, once
}

// MarshalJSON returns Raw, so that the answer crosses a cluster as the server gave it.
func (in *Introspection) MarshalJSON() ([]byte, error) {
	if len(in.Raw) == 0 {
		return []byte("{}"), nil
	}
	return in.Raw, nil
}

// audience is an aud member: a string or an array of strings.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = audience{s}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(a))
}

// answer is a cached introspection: the server's answer and the identity it stands for (nil
// when the token is not active).
type answer struct {
	in      *Introspection
	id      *tools.Identity
	expires time.Time
}

// VerifyToken verifies token and returns its identity: Subject is sub (else client_id), Scopes
// come from scope, and Extra is the server's [*Introspection]. See [IntrospectionVerifier] for
// what is a rejection and what is a failure.
func (v *IntrospectionVerifier) VerifyToken(ctx context.Context, token string) (*tools.Identity, error) {
	if len(token) > maxTokenLength {
		return nil, errTooLong
	}
	key := sha256.Sum256([]byte(token))
	a := v.cached(key)
	if a == nil && (v.cache != nil || v.neg != nil) {
		var mine *answer // set when this request ran the introspection
		err := v.flight.do(ctx, key, func(ctx context.Context) error {
			var err error
			if mine, err = v.introspect(ctx, token); err == nil {
				v.store(key, mine)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if a = mine; a == nil {
			a = v.cached(key) // nil if already evicted, or not kept: asked again below
		}
	}
	if a == nil {
		var err error
		if a, err = v.introspect(ctx, token); err != nil {
			return nil, err
		}
	}
	return v.decide(ctx, a)
}

// cached returns the unexpired answer about the token whose hash is key, or nil.
func (v *IntrospectionVerifier) cached(key [sha256.Size]byte) *answer {
	now := v.now()
	if a := v.cache.get(key, now); a != nil {
		return a
	}
	return v.neg.get(key, now)
}

// store keeps an answer: in the cache of active tokens, or in the other.
func (v *IntrospectionVerifier) store(key [sha256.Size]byte, a *answer) {
	if a.in.Active {
		v.cache.put(key, a)
	} else {
		v.neg.put(key, a)
	}
}

// introspect asks the server about token, once one of the MaxInFlight places is free.
func (v *IntrospectionVerifier) introspect(ctx context.Context, token string) (*answer, error) {
	if v.slots != nil {
		select {
		case v.slots <- struct{}{}:
		default:
			select {
			case v.slots <- struct{}{}:
			case <-ctx.Done():
				return nil, fmt.Errorf("auth: introspection: %d introspection requests in flight, none ended in time: %w", cap(v.slots), ctx.Err())
			}
		}
		defer func() { <-v.slots }()
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequest(http.MethodPost, v.cfg.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("auth: introspection: %w", redactErr(err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", v.auth)
	var raw jsonRaw
	err = doJSON(ctx, v.cfg.HTTPClient, v.cfg.FetchTimeout, req, &raw)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusBadRequest && tokenVerdict(se.Code) {
		// The server refused to introspect this token (oidc-provider does for a JWT): it does
		// not say the token is active.
		return &answer{in: &Introspection{}, expires: v.now().Add(v.cfg.CacheTTL)}, nil
	}
	if err != nil {
		return nil, err
	}
	in := &Introspection{Raw: json.RawMessage(raw), idx: newClaimIndex(json.RawMessage(raw))}
	if err := json.Unmarshal(raw, in); err != nil {
		return nil, fmt.Errorf("auth: introspection answer of %s: %w", redact(req.URL), err)
	}
	now := v.now()
	a := &answer{in: in, expires: now.Add(v.cfg.CacheTTL)}
	if in.Exp > 0 {
		if exp := time.Unix(in.Exp, 0); exp.Before(a.expires) {
			a.expires = exp
		}
	}
	if in.Active {
		sub := in.Sub
		if sub == "" {
			sub = in.ClientID
		}
		a.id = &tools.Identity{Subject: sub, Scopes: strings.Fields(in.Scope), Extra: in}
	}
	return a, nil
}

// tokenVerdict reports whether the error code of a 400 answer from the introspection endpoint
// is about the token rather than about this server's request: unsupported_token_type (RFC 7009
// §2.2.1; oidc-provider's answer for a JWT) and invalid_token (RFC 6750 §3.1). Every other
// error answer (invalid_client for a rotated secret, unauthorized_client, invalid_request, no
// code at all) is this server's problem, an outage: the client's token may well be valid.
func tokenVerdict(code string) bool {
	return code == "unsupported_token_type" || code == "invalid_token"
}

// decide applies the rules of [IntrospectionVerifier] to an answer.
func (v *IntrospectionVerifier) decide(ctx context.Context, a *answer) (*tools.Identity, error) {
	in, now := a.in, v.now()
	reject := func(format string, args ...any) (*tools.Identity, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{streamable.ErrInvalidToken}, args...)...)
	}
	switch tt := strings.ToLower(in.TokenType); {
	case !in.Active:
		return reject("not active")
	case !v.cfg.AllowSenderConstrained && (confirmed(in.Cnf) || tt == "dpop"):
		return nil, errSenderConstrained
	case tt != "" && tt != "bearer" && tt != "access_token" && tt != "dpop":
		return reject("token_type %q", in.TokenType)
	case v.cfg.Issuer != "" && in.Iss != "" && in.Iss != v.cfg.Issuer:
		return reject("issued by %q", in.Iss)
	case in.Exp > 0 && !now.Before(time.Unix(in.Exp, 0)):
		return reject("expired")
	case in.Nbf > 0 && now.Before(time.Unix(in.Nbf, 0)):
		return reject("not yet valid")
	case a.id.Subject == "":
		return reject("neither sub nor client_id")
	}
	aud := v.cfg.Audience
	if aud == "" {
		aud = streamable.ResourceFromContext(ctx)
	}
	if !audienceHas(in.Aud, aud) {
		return reject("issued for %q, not %q", []string(in.Aud), aud)
	}
	return a.id, nil
}

// answerCache keeps at most max answers, the least recently used going first, each until its
// expiry. A nil *answerCache keeps nothing.
type answerCache struct {
	mu  sync.Mutex
	max int
	m   map[[sha256.Size]byte]*list.Element
	lru list.List // of *cached, most recently used first
}

type cached struct {
	key [sha256.Size]byte
	a   *answer
}

// newAnswerCache returns a cache of max answers: 0 means DefaultCacheSize, negative means
// none (nil).
func newAnswerCache(max int) *answerCache {
	switch {
	case max < 0:
		return nil
	case max == 0:
		max = DefaultCacheSize
	}
	return &answerCache{max: max, m: make(map[[sha256.Size]byte]*list.Element)}
}

// get returns the unexpired answer under key, or nil.
func (c *answerCache) get(key [sha256.Size]byte, now time.Time) *answer {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil
	}
	ent := e.Value.(*cached)
	if !now.Before(ent.a.expires) {
		c.lru.Remove(e)
		delete(c.m, key)
		return nil
	}
	c.lru.MoveToFront(e)
	return ent.a
}

// put enters a under key, dropping the least recently used answer when full.
func (c *answerCache) put(key [sha256.Size]byte, a *answer) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		e.Value.(*cached).a = a
		c.lru.MoveToFront(e)
		return
	}
	if c.lru.Len() >= c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.m, last.Value.(*cached).key)
	}
	c.m[key] = c.lru.PushFront(&cached{key: key, a: a})
}
