package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

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
		{auth.JWTConfig{Issuer: "auth.example.com"}, "absolute http or https URL"},
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
