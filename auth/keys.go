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

// errInFlight: a fetch is already in progress and the caller chose not to wait for it.
var errInFlight = errors.New("auth: a JWK Set fetch is in progress")

// keyCache holds the issuer's current JWK Set and fetches it again when asked to, at most once
// per minInterval, lazily: when a request needs it, on a goroutine that ends with the fetch.
type keyCache struct {
	issuer      string // for discovery; "" when jwksURL is configured
	https       bool   // the issuer is an https URL: so must its jwks_uri be
	client      *http.Client
	timeout     time.Duration
	minInterval time.Duration
	now         func() time.Time
	bind        func(*keySet) jwt.Keyfunc // makes a fetched set's keyfunc
	log         *zap.Logger

	keys atomic.Pointer[keySet] // nil until the first successful fetch

	mu          sync.Mutex
	jwksURL     string // configured or discovered; "" until discovered
	lastAttempt time.Time
	lastErr     error           // the last attempt's failure; nil after a success
	inFlight    *fetchFlight    // the fetch in progress, nil when none is
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

// refresh makes sure the JWK Set was fetched less than minInterval ago: it starts a fetch
// unless one was started (or tried) that recently, and waits for the fetch in progress, its own
// or another request's (without wait, it returns errInFlight at once for another request's).
// It returns nil when the fetch succeeded, errRateLimited when none was allowed, ctx's error
// when ctx ended first, and the fetch's failure otherwise.
//
// The fetch runs on a goroutine of its own, on a context of its own (ctx's values, not its
// cancellation, and a deadline of fetchBudget): a request that goes away, or whose
// verification times out, abandons the wait, not the fetch, which ends and counts for all
// (its time is the last attempt's, success or failure). So the requests that go away cannot
// each cause a fetch, and those still waiting get its result.
func (c *keyCache) refresh(ctx context.Context, wait bool) error {
	c.mu.Lock()
	f := c.inFlight
	switch {
	case f != nil && !wait:
		c.mu.Unlock()
		return errInFlight
	case f == nil:
		now := c.now()
		if !c.lastAttempt.IsZero() && now.Sub(c.lastAttempt) < c.minInterval {
			c.mu.Unlock()
			return errRateLimited
		}
		c.lastAttempt = now
		f = &fetchFlight{done: make(chan struct{})}
		c.inFlight = f
		jwksURL := c.jwksURL
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.fetchBudget())
		// Owned by the flight: it ends with the fetch, within fetchBudget, whether or not
		// anyone still waits for it.
		go func() {
			defer cancel()
			c.finish(f)(c.fetchGuarded(fctx, jwksURL))
		}()
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetchFlight is the JWK Set fetch in progress; done is closed when it has ended, with err.
type fetchFlight struct {
	done chan struct{}
	err  error
}

// fetchBudget bounds a whole fetch: discovery's three metadata locations and the JWK Set, each
// bounded by the timeout.
func (c *keyCache) fetchBudget() time.Duration { return 4 * c.timeout }

// fetchGuarded is fetch, with a panic (of an HTTPClient's transport, say) turned into an
// error: it runs on a goroutine no request recovers.
func (c *keyCache) fetchGuarded(ctx context.Context, jwksURL string) (ks *keySet, url string, err error) {
	defer func() {
		if v := recover(); v != nil {
			ks, url, err = nil, "", fmt.Errorf("auth: the JWK Set fetch panicked: %v", v)
		}
	}()
	return c.fetch(ctx, jwksURL)
}

// finish returns the function that records the outcome of the flight f and ends it.
func (c *keyCache) finish(f *fetchFlight) func(*keySet, string, error) {
	return func(ks *keySet, url string, err error) {
		c.mu.Lock()
		if err != nil {
			c.lastErr = err
		} else {
			c.jwksURL, c.lastErr = url, nil
			c.keys.Store(ks)
		}
		c.inFlight, f.err = nil, err
		c.mu.Unlock()
		close(f.done)
	}
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
