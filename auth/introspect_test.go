package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// newIntrospector returns a verifier of as's opaque tokens, with the resource server's
// credentials, whose requests go through ct.
func newIntrospector(t testing.TB, as *oidctest.Server, ct *countingTransport, c *clock, cfg auth.IntrospectionConfig) *auth.IntrospectionVerifier {
	t.Helper()
	cfg.URL = as.Issuer + "/token/introspection"
	if cfg.ClientID == "" {
		cfg.ClientID, cfg.ClientSecret = "resource-server", "rs-secret"
	}
	cfg.Issuer = as.Issuer
	cfg.HTTPClient = &http.Client{Transport: ct}
	if c != nil {
		cfg.Now = c.now
	}
	v, err := auth.NewIntrospectionVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ct.base.CloseIdleConnections)
	return v
}

// TestIntrospectionRealServer runs the introspection verifier against oidc-provider's
// introspection endpoint: a real opaque token reaches the tool with its subject and scopes;
// unknown, revoked and other-resource tokens get 401 and are not reported; the answers are
// cached, bounded in number and in time, and never kept past the token's exp.
func TestIntrospectionRealServer(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	var c clock
	v := newIntrospector(t, as, ct, &c, auth.IntrospectionConfig{CacheSize: 3, CacheTTL: time.Minute})
	m := startMCP(t, v, mcpOptions{})

	good := as.Token("opaque-client", "opaque-secret", "tools:call admin", m.resource)
	if strings.Count(good, ".") == 2 {
		t.Fatalf("the server issued a JWT to the opaque client: %s", good)
	}
	r := m.call(good, "whoami")
	if r.status != 200 || textOf(r.body) != "opaque-client tools:call,admin" {
		t.Fatalf("valid opaque token: %d %s", r.status, r.body)
	}
	id, err := v.VerifyToken(toolgrain.WithResource(context.Background(), m.resource), good)
	if err != nil {
		t.Fatal(err)
	}
	if in, ok := id.Extra.(*auth.Introspection); !ok || in.ClientID != "opaque-client" || in.Iss != as.Issuer || len(in.Aud) != 1 || in.Aud[0] != m.resource {
		t.Errorf("identity's Extra = %#v", id.Extra)
	}
	// Cached: 100 more requests, no more introspection.
	for range 100 {
		if r := m.call(good, "whoami"); r.status != 200 {
			t.Fatalf("cached token: %d %s", r.status, r.body)
		}
	}
	if n := ct.intro.Load(); n != 1 {
		t.Errorf("%d introspections for one token used 102 times, want 1", n)
	}

	revoked := as.Token("opaque-client", "opaque-secret", "tools:call", m.resource)
	as.Revoke("opaque-client", "opaque-secret", revoked)
	for _, tc := range []struct{ name, token string }{
		{"unknown token", "made-up-opaque-token"},
		{"revoked", revoked},
		{"issued for another resource", as.Token("opaque-client", "opaque-secret", "tools:call", "https://other.example/mcp")},
		{"a JWT the opaque client never got", as.Token("mcp-client", "mcp-secret", "tools:call", "https://other.example/mcp")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := m.call(tc.token, "whoami")
			if r.status != 401 || r.body != invalidToken {
				t.Errorf("%d %s", r.status, r.body)
			}
			_, err := v.VerifyToken(toolgrain.WithResource(context.Background(), m.resource), tc.token)
			if !errors.Is(err, toolgrain.ErrInvalidToken) {
				t.Errorf("VerifyToken = %v, want a rejection", err)
			}
			t.Logf("rejected: %v", err)
		})
	}

	// The cache holds 3 answers: the four rejected tokens above pushed good's out.
	before := ct.intro.Load()
	if r := m.call(good, "whoami"); r.status != 200 {
		t.Fatalf("good again: %d %s", r.status, r.body)
	}
	if n := ct.intro.Load() - before; n != 1 {
		t.Errorf("%d introspections for an evicted token, want 1", n)
	}
	// Kept for CacheTTL: a minute later it is asked about again.
	c.advance(time.Minute)
	before = ct.intro.Load()
	if r := m.call(good, "whoami"); r.status != 200 {
		t.Fatalf("good after a minute: %d %s", r.status, r.body)
	}
	if n := ct.intro.Load() - before; n != 1 {
		t.Errorf("%d introspections after CacheTTL, want 1", n)
	}
	// Never past exp (the server's tokens live 300 s): with a cache TTL of an hour, a token
	// past its exp is asked about again and rejected, though the server still calls it active.
	long := newIntrospector(t, as, ct, &c, auth.IntrospectionConfig{CacheTTL: time.Hour})
	ctx := toolgrain.WithResource(context.Background(), m.resource)
	if _, err := long.VerifyToken(ctx, good); err != nil {
		t.Fatal(err)
	}
	c.advance(301 * time.Second)
	before = ct.intro.Load()
	if _, err := long.VerifyToken(ctx, good); !errors.Is(err, toolgrain.ErrInvalidToken) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("past exp: %v", err)
	}
	if n := ct.intro.Load() - before; n != 1 {
		t.Errorf("%d introspections past exp, want 1 (the cached answer ended at exp)", n)
	}

	if reports := m.flushReports(); len(reports) != 0 {
		t.Errorf("rejections were reported: %v", reports)
	}
}

// TestIntrospectionOutage: an introspection endpoint that cannot be reached, or that refuses
// the server's credentials, is the server's failure: 503 and one report per failed
// verification; a cached answer keeps deciding; once the server is back, 200.
func TestIntrospectionOutage(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	v := newIntrospector(t, as, ct, nil, auth.IntrospectionConfig{})
	m := startMCP(t, v, mcpOptions{})
	cachedTok := as.Token("opaque-client", "opaque-secret", "tools:call", m.resource)
	fresh := as.Token("opaque-client", "opaque-secret", "tools:call", m.resource)
	if r := m.call(cachedTok, "whoami"); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	as.Stop()
	const down = 4
	for i := range down {
		r := m.call(fresh, "whoami")
		if r.status != 503 || r.header.Get("Retry-After") == "" || r.header.Get("WWW-Authenticate") != "" {
			t.Fatalf("request %d while the server is down: %d %v %s", i, r.status, r.header, r.body)
		}
	}
	if r := m.call(cachedTok, "whoami"); r.status != 200 {
		t.Fatalf("a cached answer while the server is down: %d %s", r.status, r.body)
	}
	as.Resume()
	if r := m.call(fresh, "whoami"); r.status != 200 {
		t.Fatalf("once the server is back: %d %s", r.status, r.body)
	}

	// Wrong credentials of the resource server: the authorization server answers 401, which
	// says nothing about the token.
	bad := newIntrospector(t, as, ct, nil, auth.IntrospectionConfig{ClientID: "resource-server", ClientSecret: "wrong"})
	_, err := bad.VerifyToken(toolgrain.WithResource(context.Background(), m.resource), fresh)
	var se *auth.StatusError
	if !errors.As(err, &se) || se.Status != 401 || errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("wrong credentials: %v, want a *StatusError 401 that is not a rejection", err)
	}

	reports := m.flushReports()
	if len(reports) != down {
		t.Fatalf("%d reports, want %d: %v", len(reports), down, reports)
	}
	for _, err := range reports {
		// The request's own failure: connection refused, or EOF on a kept-alive connection
		// that the stopped server dropped.
		var ue *url.Error
		if !errors.As(err, &ue) || strings.Contains(err.Error(), fresh) {
			t.Errorf("report %v, want the introspection request's failure, without the token", err)
		}
	}
}

// TestIntrospectionSharedFlight: concurrent verifications of one new token share one
// introspection request; 10,000 verifications of a token the server does not know cost one.
func TestIntrospectionSharedFlight(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	v := newIntrospector(t, as, ct, nil, auth.IntrospectionConfig{})
	ctx := toolgrain.WithResource(context.Background(), "http://mcp.example/mcp")
	tok := as.Token("opaque-client", "opaque-secret", "tools:call", "http://mcp.example/mcp")
	for _, tc := range []struct {
		token string
		ok    bool
	}{{tok, true}, {"forged-opaque-token", false}} {
		ct.intro.Store(0)
		var wg sync.WaitGroup
		var wrong sync.Map
		const n, workers = 10000, 16
		for w := range workers {
			wg.Add(1)
			// Owned by the test, which waits for them.
			go func() {
				defer wg.Done()
				for range n / workers {
					if _, err := v.VerifyToken(ctx, tc.token); (err == nil) != tc.ok {
						wrong.Store(w, err)
					}
				}
			}()
		}
		wg.Wait()
		wrong.Range(func(_, err any) bool {
			t.Errorf("verification of %q: %v", tc.token, err)
			return false
		})
		if got := ct.intro.Load(); got != 1 {
			t.Errorf("%d introspections for %d verifications of one token, want 1", got, n)
		}
	}
}
