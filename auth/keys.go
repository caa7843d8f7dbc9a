package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"
)

// keySet is one JWK Set as fetched from the issuer: its keys that can verify signatures.
type keySet struct {
	byKID   map[string]sigKey
	all     []sigKey // byKID's and those without kid, for a token without kid
	fetched time.Time
	// keyfunc is the verifier's key lookup in this set, made once per set rather than per
	// token.
	keyfunc jwt.Keyfunc
}

// errRateLimited: a fetch was wanted sooner than the minimum interval after the last one.
var errRateLimited = errors.New("auth: JWK Set fetched too recently")

// keyCache holds the issuer's current JWK Set and fetches it again when asked to, at most once
// per minInterval, lazily: on the goroutine of the request that needs it.
type keyCache struct {
	issuer      string // for discovery; "" when jwksURL is configured
	https       bool   // the issuer is an https URL: so must its jwks_uri be
	client      *http.Client
	timeout     time.Duration
	minInterval time.Duration
	now         func() time.Time
	bind        func(*keySet) jwt.Keyfunc // makes a fetched set's keyfunc
	log         *zap.Logger

	keys   atomic.Pointer[keySet] // nil until the first successful fetch
	flight flights[struct{}]

	mu          sync.Mutex
	jwksURL     string // configured or discovered; "" until discovered
	lastAttempt time.Time
	lastErr     error           // the last attempt's failure; nil after a success
	skipped     map[string]bool // the keys left out of a set and logged, by name and reason
}

// maxSkippedLogged bounds the unusable keys remembered as logged: an issuer publishing new
// unusable keys at every fetch costs this much memory at most, then no more log lines.
const maxSkippedLogged = 1024

// skip logs, once per key and reason for the life of the cache, that a key of the issuer's
// JWK Set was left out.
func (c *keyCache) skip(jwksURL string) func(name, why string) {
	return func(name, why string) {
		c.mu.Lock()
		id := name + " " + why
		seen := c.skipped[id] || len(c.skipped) >= maxSkippedLogged
		if !seen {
			if c.skipped == nil {
				c.skipped = make(map[string]bool)
			}
			c.skipped[id] = true
		}
		c.mu.Unlock()
		if !seen {
			c.log.Warn("auth: a key of the issuer's JWK Set cannot verify signatures and is left out",
				zap.String("jwks", redactString(jwksURL)), zap.String("key", name), zap.String("reason", why))
		}
	}
}

// refresh fetches the JWK Set unless one was fetched (or tried) less than minInterval ago, or
// waits for the fetch in progress (with wait; without, it returns errInFlight). It returns nil
// when a fetch succeeded, errRateLimited when none was allowed, and the fetch's failure
// otherwise.
func (c *keyCache) refresh(ctx context.Context, wait bool) error {
	run := c.flight.do
	if !wait {
		run = c.flight.try
	}
	return run(ctx, struct{}{}, func(ctx context.Context) error {
		c.mu.Lock()
		now := c.now()
		if !c.lastAttempt.IsZero() && now.Sub(c.lastAttempt) < c.minInterval {
			c.mu.Unlock()
			return errRateLimited
		}
		prev := c.lastAttempt
		c.lastAttempt = now
		jwksURL := c.jwksURL
		c.mu.Unlock()

		ks, url, err := c.fetch(ctx, jwksURL)
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case err != nil && ctx.Err() != nil:
			// The request that ran it went away: nothing was learnt about the issuer.
			c.lastAttempt = prev
		case err != nil:
			c.lastErr = err
		default:
			c.jwksURL, c.lastErr = url, nil
			c.keys.Store(ks)
		}
		return err
	})
}

// failure returns the error of the last fetch attempt, nil if it succeeded.
func (c *keyCache) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// fetch discovers the JWK Set's URL when jwksURL is "", then fetches and parses the set.
func (c *keyCache) fetch(ctx context.Context, jwksURL string) (*keySet, string, error) {
	if jwksURL == "" {
		md, err := discover(ctx, c.client, c.timeout, c.issuer)
		if err != nil {
			return nil, "", err
		}
		if md.JWKSURI == "" {
			return nil, "", fmt.Errorf("auth: the metadata of %s has no jwks_uri", c.issuer)
		}
		u, err := checkURL("jwks_uri", md.JWKSURI)
		if err != nil {
			return nil, "", err
		}
		if c.https && u.Scheme != "https" {
			return nil, "", fmt.Errorf("auth: the metadata of %s names an http jwks_uri, %s: refused under an https issuer", c.issuer, redact(u))
		}
		jwksURL = md.JWKSURI
	}
	req, err := http.NewRequest(http.MethodGet, jwksURL, nil)
	if err != nil {
		return nil, "", fmt.Errorf("auth: JWK Set: %w", redactErr(err))
	}
	var raw jsonRaw
	if err := doJSON(ctx, c.client, c.timeout, req, &raw); err != nil {
		return nil, "", err
	}
	byKID, all, err := parseKeySet(raw, c.skip(jwksURL))
	if err != nil {
		return nil, "", fmt.Errorf("auth: JWK Set of %s: %w", redact(req.URL), err)
	}
	ks := &keySet{byKID: byKID, all: all, fetched: c.now()}
	ks.keyfunc = c.bind(ks)
	return ks, jwksURL, nil
}

// jsonRaw keeps a JSON document as it is (json.RawMessage, checked to be JSON by the decoder).
type jsonRaw []byte

func (r *jsonRaw) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}
