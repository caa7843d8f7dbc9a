package auth_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// clock is a settable time source for a verifier, starting at the real time; advancing it
// stands for waiting out the verifier's refresh interval without sleeping.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }

// newJWTVerifier returns a verifier of as's tokens whose requests to as go through ct.
func newJWTVerifier(t testing.TB, as *oidctest.Server, ct *countingTransport, c *clock, cfg auth.JWTConfig) *auth.JWTVerifier {
	t.Helper()
	cfg.Issuer = as.Issuer
	cfg.HTTPClient = &http.Client{Transport: ct}
	if c != nil {
		cfg.Now = c.now
	}
	v, err := auth.NewJWTVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ct.base.CloseIdleConnections)
	return v
}

// sign returns a JWT signed with key (its kid in the header) whose claims are claims.
func sign(t testing.TB, key oidctest.Key, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(key.Alg), claims)
	tok.Header["kid"] = key.KID
	tok.Header["typ"] = "at+jwt"
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key.Priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// claimsFor are valid claims of a token for resource from as, issued now.
func claimsFor(as *oidctest.Server, resource string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": as.Issuer, "sub": "signed-by-test", "aud": resource, "iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(), "client_id": "mcp-client", "scope": "tools:call admin", "jti": "t1"}
}

const invalidToken = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: the access token is invalid or expired"}}`

// TestJWTVerifierRealIssuer runs the JWT verifier against oidc-provider: real tokens obtained by
// the client credentials grant reach the tool with their subject and scopes; every kind of bad
// token gets 401 invalid_token and is not reported.
func TestJWTVerifierRealIssuer(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	// No second fetch within the test, however slow the machine: the count below is exact.
	v := newJWTVerifier(t, as, ct, nil, auth.JWTConfig{MinRefreshInterval: time.Hour})
	m := startMCP(t, v, mcpOptions{})
	rsa, ec := as.Keys[0], as.Keys[1]

	// Valid tokens, RS256 and ES256, issued by the server for this resource.
	r := m.call(as.Token("mcp-client", "mcp-secret", "tools:call admin", m.resource), "whoami")
	if r.status != 200 || textOf(r.body) != "mcp-client tools:call,admin" {
		t.Fatalf("RS256 token: %d %s", r.status, r.body)
	}
	r = m.call(as.Token("es-client", "es-secret", "tools:call", m.resource), "whoami")
	if r.status != 200 || textOf(r.body) != "es-client tools:call" {
		t.Fatalf("ES256 token: %d %s", r.status, r.body)
	}
	// A valid token the test signed with the server's own key, as a control for the forged ones.
	if r := m.call(sign(t, rsa, nil, claimsFor(as, m.resource)), "whoami"); r.status != 200 || textOf(r.body) != "signed-by-test tools:call,admin" {
		t.Fatalf("control token: %d %s", r.status, r.body)
	}

	with := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := claimsFor(as, m.resource)
		change(c)
		return c
	}
	stranger := oidctest.NewRSAKey(t, "never-published")
	impostor := oidctest.NewRSAKey(t, rsa.KID) // the published kid, another key
	narrow := as.Token("narrow-client", "narrow-secret", "tools:call", m.resource)
	parts := strings.Split(narrow, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"scope":"tools:call"`, `"scope":"tools:call admin"`, 1))) + "." + parts[2]
	if tampered == narrow {
		t.Fatalf("the payload of the narrow token has no scope to change: %s", payload)
	}
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt","kid":"r1"}`)) + "." +
		strings.Split(sign(t, rsa, nil, claimsFor(as, m.resource)), ".")[1] + "."
	hmacWithPublicKey := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claimsFor(as, m.resource))
		tok.Header["kid"] = rsa.KID
		s, err := tok.SignedString(pemOf(t, rsa.Priv.Public()))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}()

	for _, tc := range []struct{ name, token string }{
		{"wrong audience (issued by the server for another resource)", as.Token("mcp-client", "mcp-secret", "tools:call", "https://other.example/mcp")},
		{"wrong issuer", sign(t, rsa, nil, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }))},
		{"expired", sign(t, rsa, nil, with(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-2 * time.Minute).Unix() }))},
		{"no exp", sign(t, rsa, nil, with(func(c jwt.MapClaims) { delete(c, "exp") }))},
		{"not yet valid", sign(t, rsa, nil, with(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(2 * time.Minute).Unix() }))},
		{"issued in the future", sign(t, rsa, nil, with(func(c jwt.MapClaims) { c["iat"] = time.Now().Add(2 * time.Minute).Unix() }))},
		{"alg none", none},
		{"a key the issuer never published", sign(t, stranger, nil, claimsFor(as, m.resource))},
		{"another key under a published kid", sign(t, impostor, nil, claimsFor(as, m.resource))},
		{"tampered payload", tampered},
		{"HS256 keyed with the public key", hmacWithPublicKey},
		{"a logout token's typ", sign(t, rsa, map[string]any{"typ": "logout+jwt"}, claimsFor(as, m.resource))},
		{"ES256 header on the RSA key", func() string {
			s := sign(t, ec, map[string]any{"kid": rsa.KID}, claimsFor(as, m.resource))
			return s
		}()},
		{"no subject", sign(t, rsa, nil, with(func(c jwt.MapClaims) { delete(c, "sub"); delete(c, "client_id") }))},
		{"garbage", "not.a.jwt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := m.call(tc.token, "whoami")
			if r.status != 401 || r.body != invalidToken {
				t.Errorf("%d %s", r.status, r.body)
			}
			want := `Bearer resource_metadata="` + m.ts.URL + `/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the access token is invalid or expired"`
			if got := r.header.Get("WWW-Authenticate"); got != want {
				t.Errorf("WWW-Authenticate: %s\nwant %s", got, want)
			}
			// The verifier says why.
			_, err := v.VerifyToken(toolgrain.WithResource(context.Background(), m.resource), tc.token)
			if !errors.Is(err, toolgrain.ErrInvalidToken) {
				t.Errorf("VerifyToken = %v, want a rejection", err)
			}
			t.Logf("rejected: %v", err)
		})
	}
	if reports := m.flushReports(); len(reports) != 0 {
		t.Errorf("rejections were reported: %v", reports)
	}
	// One discovery, then the JWK Set fetched once; the unknown kid of the stranger's token
	// found the set just fetched (the minimum interval) and was rejected without another fetch.
	if n := ct.jwks.Load(); n != 1 {
		t.Errorf("%d JWK Set fetches, want 1", n)
	}
}

// pemOf returns the PEM text of a public key, the secret of a key-confusion forgery.
func pemOf(t testing.TB, k crypto.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// TestJWTVerifierKeyRotation: the issuer rotates its keys; tokens signed with the new key are
// accepted without restarting anything, and those of the withdrawn key no longer are.
func TestJWTVerifierKeyRotation(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	var c clock
	v := newJWTVerifier(t, as, ct, &c, auth.JWTConfig{})
	m := startMCP(t, v, mcpOptions{})
	old := as.Token("mcp-client", "mcp-secret", "tools:call", m.resource)
	if r := m.call(old, "whoami"); r.status != 200 {
		t.Fatalf("before the rotation: %d %s", r.status, r.body)
	}
	// A second verifier that sees only the old token: its cached set keeps the old key until
	// the set is older than MaxKeyAge.
	ct2 := newCountingTransport()
	v2 := newJWTVerifier(t, as, ct2, &c, auth.JWTConfig{MaxKeyAge: time.Hour})
	ctx := toolgrain.WithResource(context.Background(), m.resource)
	if _, err := v2.VerifyToken(ctx, old); err != nil {
		t.Fatal(err)
	}
	as.Rotate(oidctest.NewRSAKey(t, "r2"), oidctest.NewECKey(t, "e2"))
	fresh := as.Token("mcp-client", "mcp-secret", "tools:call", m.resource)
	if !strings.Contains(headerOf(t, fresh), `"kid":"r2"`) {
		t.Fatalf("the rotated server signed with %s", headerOf(t, fresh))
	}
	c.advance(auth.DefaultMinRefreshInterval) // the verifier fetched the set just now
	if r := m.call(fresh, "whoami"); r.status != 200 || textOf(r.body) != "mcp-client tools:call" {
		t.Fatalf("a token of the new key: %d %s", r.status, r.body)
	}
	if r := m.call(old, "whoami"); r.status != 401 {
		t.Fatalf("a token of the withdrawn key: %d %s", r.status, r.body)
	}
	if n := ct.jwks.Load(); n != 2 {
		t.Errorf("%d JWK Set fetches, want 2 (the first verification, the new kid)", n)
	}
	if _, err := v2.VerifyToken(ctx, old); err != nil {
		t.Errorf("the old key, cached, within MaxKeyAge: %v", err)
	}
	c.advance(time.Hour)
	if _, err := v2.VerifyToken(ctx, old); !errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("the old key after MaxKeyAge, the set fetched again without it: %v", err)
	}
	if n := ct2.jwks.Load(); n != 2 {
		t.Errorf("%d JWK Set fetches by the second verifier, want 2 (the first, the stale set)", n)
	}
}

// headerOf returns the decoded header of a JWT.
func headerOf(t testing.TB, token string) string {
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJWTVerifierIssuerOutage: the server starts while the issuer is down and answers 503,
// reporting each failed verification once, then 200 once the issuer is back; a cached key keeps
// deciding while the issuer is down again, and a token whose key it does not have gets 503.
func TestJWTVerifierIssuerOutage(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	var c clock
	v := newJWTVerifier(t, as, ct, &c, auth.JWTConfig{})
	m := startMCP(t, v, mcpOptions{})
	good := as.Token("mcp-client", "mcp-secret", "tools:call", m.resource)
	as.Stop()

	const down = 5
	for i := range down {
		r := m.call(good, "whoami")
		if r.status != 503 || r.header.Get("Retry-After") == "" || r.header.Get("WWW-Authenticate") != "" ||
			r.body != `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: authentication is temporarily unavailable"}}` {
			t.Fatalf("request %d while the issuer is down: %d %v %s", i, r.status, r.header, r.body)
		}
	}
	tries := ct.total.Load()
	if tries != 1 {
		t.Errorf("%d requests to the issuer while it was down, want 1 (then one per interval)", tries)
	}

	as.Resume()
	c.advance(auth.DefaultMinRefreshInterval)
	if r := m.call(good, "whoami"); r.status != 200 {
		t.Fatalf("once the issuer is back: %d %s", r.status, r.body)
	}

	// Down again: the cached key decides for the known kid; a kid it does not know cannot be
	// decided (the issuer may have rotated): 503.
	as.Stop()
	c.advance(auth.DefaultMinRefreshInterval)
	if r := m.call(good, "whoami"); r.status != 200 {
		t.Fatalf("cached key while the issuer is down: %d %s", r.status, r.body)
	}
	unknown := sign(t, oidctest.NewRSAKey(t, "r9"), nil, claimsFor(as, m.resource))
	if r := m.call(unknown, "whoami"); r.status != 503 {
		t.Fatalf("unknown kid while the issuer is down: %d %s", r.status, r.body)
	}

	reports := m.flushReports()
	if len(reports) != down+1 {
		t.Fatalf("%d reports, want %d (one per failed verification): %v", len(reports), down+1, reports)
	}
	for _, err := range reports {
		if errors.Is(err, toolgrain.ErrInvalidToken) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("report %v, want the failure to reach the issuer", err)
		}
		if strings.Contains(err.Error(), good) {
			t.Errorf("a report contains the token: %v", err)
		}
	}
}

// TestJWTVerifierForgedKidFlood: 10,000 requests whose tokens name random keys (the same signed
// claims under a header naming a random kid) cost one discovery and a handful of JWK Set
// fetches, and are all rejected. 1,000 of them go through the HTTP transport, the rest straight
// to the verifier, which keeps the test fast under -race; the count is the verifier's either way.
func TestJWTVerifierForgedKidFlood(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	v := newJWTVerifier(t, as, ct, nil, auth.JWTConfig{})
	m := startMCP(t, v, mcpOptions{})
	signed := strings.SplitN(sign(t, oidctest.NewECKey(t, "x"), nil, claimsFor(as, m.resource)), ".", 2)[1]
	forged := func() string {
		kid := make([]byte, 8)
		_, _ = rand.Read(kid)
		h := `{"alg":"ES256","typ":"at+jwt","kid":"` + hex.EncodeToString(kid) + `"}`
		return base64.RawURLEncoding.EncodeToString([]byte(h)) + "." + signed
	}
	ctx := toolgrain.WithResource(context.Background(), m.resource)
	const n, overHTTP, workers = 10000, 1000, 8
	var next, wrong atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		// Owned by the test, which waits for them.
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= n; i = next.Add(1) {
				if i <= overHTTP {
					if r := m.call(forged(), "whoami"); r.status != 401 {
						wrong.Add(1)
					}
				} else if _, err := v.VerifyToken(ctx, forged()); !errors.Is(err, toolgrain.ErrInvalidToken) {
					wrong.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if wrong.Load() != 0 {
		t.Errorf("%d of %d forged tokens were not rejected", wrong.Load(), n)
	}
	jwks := ct.jwks.Load()
	t.Logf("%d requests in %s: %d JWK Set fetches, %d requests to the issuer", n, time.Since(start).Round(time.Millisecond), jwks, ct.total.Load())
	// One per DefaultMinRefreshInterval (10 s): the first, and one more per 10 s the flood lasts.
	if limit := 1 + int64(time.Since(start)/auth.DefaultMinRefreshInterval); jwks > limit || jwks > 5 {
		t.Errorf("%d JWK Set fetches for %d forged kids, want at most %d", jwks, n, limit)
	}
	if reports := m.flushReports(); len(reports) != 0 {
		t.Errorf("rejections were reported: %v", reports)
	}
}
