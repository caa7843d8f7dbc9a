package auth_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// issuerStub serves what a test sets: metadata documents and a JWK Set at paths, or a status, or
// nothing at all (a hang until the request ends). It stands for an issuer's misbehaviour, which a
// real server cannot be made to show; the real server's behaviour is tested against oidc-provider.
type issuerStub struct {
	mu     sync.Mutex
	docs   map[string]string // path -> body (200)
	status int               // when set, every answer
	hang   bool
	hits   []string
}

func (s *issuerStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits = append(s.hits, r.URL.Path)
	body, ok := s.docs[r.URL.Path]
	status, hang := s.status, s.hang
	s.mu.Unlock()
	switch {
	case hang:
		<-r.Context().Done()
	case status != 0:
		w.WriteHeader(status)
	case !ok:
		http.NotFound(w, r)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}
}

func (s *issuerStub) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

// TestJWTVerifierDiscovery: a path-bearing issuer's metadata is looked for where MCP clients
// look (RFC 8414 inserted, OpenID inserted, OpenID appended); a document naming another issuer
// is refused (a failure, not a rejection); an issuer answering 5xx or too slowly is a failure
// bounded by FetchTimeout.
func TestJWTVerifierDiscovery(t *testing.T) {
	stub := &issuerStub{docs: map[string]string{}}
	ts := httptest.NewServer(stub)
	defer ts.Close()
	issuer := ts.URL + "/tenant1"
	key := oidctest.NewRSAKey(t, "k1")
	keys, err := os.ReadFile(oidctest.WriteKeySet(t, t.TempDir(), "keys.json", key))
	if err != nil {
		t.Fatal(err)
	}
	stub.docs["/tenant1/.well-known/openid-configuration"] = `{"issuer":"` + issuer + `","jwks_uri":"` + ts.URL + `/keys"}`
	stub.docs["/keys"] = string(keys)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	const resource = "https://mcp.example/mcp"
	ctx := toolgrain.WithResource(context.Background(), resource)
	claims := func(iss string) map[string]any {
		return map[string]any{"iss": iss, "sub": "s", "aud": resource, "exp": time.Now().Add(time.Minute).Unix()}
	}

	v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := v.VerifyToken(ctx, sign(t, key, nil, claims(issuer))); err != nil || id.Subject != "s" {
		t.Fatalf("VerifyToken = %v, %v", id, err)
	}
	want := []string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1",
		"/tenant1/.well-known/openid-configuration", "/keys"}
	if got := stub.paths(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests %v, want %v", got, want)
	}

	// A metadata document naming another issuer.
	stub.docs["/.well-known/oauth-authorization-server/tenant1"] = `{"issuer":"https://honest.example","jwks_uri":"` + ts.URL + `/keys"}`
	v, _ = auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, HTTPClient: hc})
	_, err = v.VerifyToken(ctx, sign(t, key, nil, claims(issuer)))
	if err == nil || errors.Is(err, toolgrain.ErrInvalidToken) || !strings.Contains(err.Error(), `names the issuer "https://honest.example"`) {
		t.Errorf("metadata of another issuer: %v", err)
	}

	// 5xx, then a hang: failures, the hang bounded by FetchTimeout.
	stub.mu.Lock()
	stub.status = http.StatusBadGateway
	stub.mu.Unlock()
	v, _ = auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, HTTPClient: hc})
	_, err = v.VerifyToken(ctx, sign(t, key, nil, claims(issuer)))
	var se *auth.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadGateway || errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("a 502 from the issuer: %v", err)
	}
	stub.mu.Lock()
	stub.hang = true
	stub.mu.Unlock()
	v, _ = auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, HTTPClient: hc, FetchTimeout: 100 * time.Millisecond})
	start := time.Now()
	_, err = v.VerifyToken(ctx, sign(t, key, nil, claims(issuer)))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("a hanging issuer: %v", err)
	}
	// Generous: the point is that the wait ends, not how fast.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a hanging issuer held the verification %s", d)
	}
}

// TestVerifierConfigErrors: a configuration that cannot work is refused when the verifier is
// made.
func TestVerifierConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  auth.JWTConfig
		want string
	}{
		{auth.JWTConfig{}, "Issuer is empty"},
		{auth.JWTConfig{Issuer: "auth.example.com"}, "absolute https URL"},
		{auth.JWTConfig{Issuer: "https://as.example", Algorithms: []string{"none"}}, `"none" is never accepted`},
		{auth.JWTConfig{Issuer: "https://as.example", Algorithms: []string{"HS256"}}, "only through JWTConfig.SharedSecret"},
		{auth.JWTConfig{Issuer: "https://as.example", Algorithms: []string{"XX1"}}, "unknown signature algorithm"},
	} {
		if _, err := auth.NewJWTVerifier(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, tc := range []struct {
		cfg  auth.IntrospectionConfig
		want string
	}{
		{auth.IntrospectionConfig{}, "URL is empty"},
		{auth.IntrospectionConfig{URL: "https://as.example/introspect"}, "needs ClientID and ClientSecret"},
	} {
		if _, err := auth.NewIntrospectionVerifier(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestJWTVerifierAlgorithmsAndClaims: the default algorithms (RS256, PS256, ES256, EdDSA) are
// accepted, others only when configured, HMAC only with a shared secret; scopes come from scope
// or scp (an array or a string); exp has the leeway.
func TestJWTVerifierAlgorithmsAndClaims(t *testing.T) {
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey := oidctest.NewRSAKey(t, "rs")
	ps := oidctest.Key{KID: "ps", Alg: "PS256", Priv: rsaKey.Priv}
	rs384 := oidctest.Key{KID: "rs384", Alg: "RS384", Priv: rsaKey.Priv}
	ed := oidctest.Key{KID: "ed", Alg: "EdDSA", Priv: edPriv}
	es := oidctest.NewECKey(t, "es")
	keys, err := os.ReadFile(oidctest.WriteKeySet(t, t.TempDir(), "keys.json", rsaKey, ps, rs384, ed, es))
	if err != nil {
		t.Fatal(err)
	}
	stub := &issuerStub{docs: map[string]string{"/keys": string(keys)}}
	ts := httptest.NewServer(stub)
	defer ts.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	const issuer, resource = "https://as.example", "https://mcp.example/mcp"
	secret := []byte("a shared secret of at least thirty-two bytes")
	newV := func(cfg auth.JWTConfig) *auth.JWTVerifier {
		cfg.Issuer, cfg.JWKSURL, cfg.HTTPClient = issuer, ts.URL+"/keys", hc
		v, err := auth.NewJWTVerifier(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ctx := toolgrain.WithResource(context.Background(), resource)
	claims := func(extra map[string]any) jwt.MapClaims {
		c := jwt.MapClaims{"iss": issuer, "sub": "s", "aud": []string{"https://other.example", resource}, "exp": time.Now().Add(time.Minute).Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	hmac := func(c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	defaults, withRS384, withSecret := newV(auth.JWTConfig{}), newV(auth.JWTConfig{Algorithms: []string{"RS384"}}), newV(auth.JWTConfig{SharedSecret: secret})
	for _, tc := range []struct {
		name   string
		v      *auth.JWTVerifier
		token  string
		scopes string // "" expects a rejection
	}{
		{"RS256", defaults, sign(t, rsaKey, nil, claims(map[string]any{"scope": "a b"})), "a b"},
		{"PS256", defaults, sign(t, ps, nil, claims(map[string]any{"scp": []string{"a", "c"}})), "a c"},
		{"ES256", defaults, sign(t, es, nil, claims(map[string]any{"scp": "x y"})), "x y"},
		{"EdDSA", defaults, sign(t, ed, nil, claims(map[string]any{"scope": "e"})), "e"},
		{"RS384 not in the defaults", defaults, sign(t, rs384, nil, claims(nil)), ""},
		{"RS384 configured", withRS384, sign(t, rs384, nil, claims(map[string]any{"scope": "r"})), "r"},
		{"HS256 without a secret", defaults, hmac(claims(nil)), ""},
		{"HS256 with the secret", withSecret, hmac(claims(map[string]any{"scope": "h"})), "h"},
		{"expired 10 s ago, within the leeway", defaults, sign(t, es, nil, claims(map[string]any{"exp": time.Now().Add(-10 * time.Second).Unix(), "scope": "l"})), "l"},
		{"expired 10 s ago, no leeway", newV(auth.JWTConfig{Leeway: -1}), sign(t, es, nil, claims(map[string]any{"exp": time.Now().Add(-10 * time.Second).Unix()})), ""},
		{"typ JWT, strict", newV(auth.JWTConfig{RequireATJWT: true}), sign(t, es, map[string]any{"typ": "JWT"}, claims(nil)), ""},
	} {
		id, err := tc.v.VerifyToken(ctx, tc.token)
		switch {
		case tc.scopes == "" && !errors.Is(err, toolgrain.ErrInvalidToken):
			t.Errorf("%s: %v, %v; want a rejection", tc.name, id, err)
		case tc.scopes != "" && (err != nil || strings.Join(id.Scopes, " ") != tc.scopes):
			t.Errorf("%s: %v, %v; want scopes %q", tc.name, id, err, tc.scopes)
		case tc.scopes != "":
			c := id.Extra.(*auth.Claims)
			var sub string
			if ok, err := c.Get("sub", &sub); !ok || err != nil || sub != "s" || c.Issuer != issuer || len(c.Audience) != 2 {
				t.Errorf("%s: claims %+v", tc.name, c)
			}
		}
	}
}
