package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// heldKeys serves a JWK Set at /keys and counts the requests; while hold is set, the next
// request is held (arrived is told) until release is closed or the request goes away.
type heldKeys struct {
	mu      sync.Mutex
	set     string
	fetches int
	hold    bool
	arrived chan struct{}
	release chan struct{}
	gone    chan struct{} // closed when a held request went away unanswered
}

func (h *heldKeys) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.fetches++
	hold, set := h.hold, h.set
	h.hold = false
	h.mu.Unlock()
	if hold {
		h.arrived <- struct{}{}
		select {
		case <-h.release:
			h.mu.Lock()
			set = h.set // what the issuer publishes by the time it answers
			h.mu.Unlock()
		case <-r.Context().Done():
			close(h.gone)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(set))
}

func (h *heldKeys) holdNext() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hold = true
	h.arrived, h.release, h.gone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
}

func (h *heldKeys) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fetches
}

// TestJWTVerifierAbandonedFetch: a JWK Set fetch started by a request that then goes away (the
// client gone, VerifyTimeout) is not abandoned with it. It runs on, on a context of its own;
// the refresh clock keeps its start, so the next request with a forged kid does not fetch
// again but waits for that fetch and gets its result (here the issuer's new key, which it
// accepts). Then, within the interval, requests with forged kids cost no fetch; and a fetch
// the issuer never answers ends by its own deadline (FetchTimeout per request), whoever waits.
func TestJWTVerifierAbandonedFetch(t *testing.T) {
	old, rotated := oidctest.NewRSAKey(t, "old"), oidctest.NewRSAKey(t, "rotated")
	keys := &heldKeys{set: keySetOf(t, publicJWKs(t, "sig", old)...)}
	ts := httptest.NewServer(keys)
	defer ts.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	const issuer, resource = "https://as.example", "https://mcp.example/mcp"
	ctx := toolgrain.WithResource(context.Background(), resource)
	var c clock
	// FetchTimeout of a minute: the held fetch ends when the test releases it, however slow
	// the machine.
	v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, JWKSURL: ts.URL + "/keys", HTTPClient: hc, Now: c.now, FetchTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{"iss": issuer, "sub": "s", "aud": resource, "exp": time.Now().Add(time.Hour).Unix()}
	if _, err := v.VerifyToken(ctx, sign(t, old, nil, claims)); err != nil {
		t.Fatal(err)
	}
	c.advance(auth.DefaultMinRefreshInterval)

	// A request with a forged kid starts a fetch, which the issuer holds; the request goes.
	keys.holdNext()
	leaving, leave := context.WithCancel(ctx)
	done := make(chan error, 1)
	// Owned by the test, which waits for it.
	go func() {
		_, err := v.VerifyToken(leaving, sign(t, old, map[string]any{"kid": "forged-1"}, claims))
		done <- err
	}()
	<-keys.arrived
	leave()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the request that went away: %v, want its context's end", err)
	}
	// The issuer rotates meanwhile. A request with a token of the new key comes: it waits for
	// the fetch in progress rather than starting one, and gets the new set from it.
	keys.mu.Lock()
	keys.set = keySetOf(t, publicJWKs(t, "sig", old, rotated)...)
	keys.mu.Unlock()
	// Owned by the test, which waits for it.
	go func() {
		_, err := v.VerifyToken(ctx, sign(t, rotated, nil, claims))
		done <- err
	}()
	close(keys.release)
	if err := <-done; err != nil {
		t.Errorf("a token of the new key, after the abandoned fetch: %v", err)
	}
	select {
	case <-keys.gone:
		t.Error("the fetch went away with the request that started it")
	default:
	}
	if n := keys.count(); n != 2 {
		t.Errorf("%d JWK Set fetches, want 2 (the first, the one the leaving request started)", n)
	}

	// Within the interval, forged kids from requests that go away at once cost no fetch.
	for i := range 20 {
		gone, cancel := context.WithCancel(ctx)
		cancel()
		_, _ = v.VerifyToken(gone, sign(t, old, map[string]any{"kid": fmt.Sprintf("forged-%d", i+2)}, claims))
	}
	if n := keys.count(); n != 2 {
		t.Errorf("%d JWK Set fetches after 20 abandoned forged kids, want 2", n)
	}

	// A fetch the issuer never answers, abandoned by its starter, ends by its own deadline
	// (four times FetchTimeout at most) and its failure decides for the next request.
	short, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, JWKSURL: ts.URL + "/keys", HTTPClient: hc, FetchTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	keys.holdNext()
	leaving, leave = context.WithCancel(ctx)
	// Owned by the test, which waits for it.
	go func() {
		_, err := short.VerifyToken(leaving, sign(t, old, nil, claims))
		done <- err
	}()
	<-keys.arrived
	leave()
	<-done
	<-keys.gone // the fetch's own deadline passed
	if _, err := short.VerifyToken(ctx, sign(t, old, nil, claims)); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("after a fetch that timed out: %v, want its failure", err)
	}
	if n := keys.count(); n != 3 {
		t.Errorf("%d JWK Set fetches, want 3", n)
	}
}
