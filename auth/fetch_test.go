package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// redirector answers every request with a redirect to target followed by the request's path,
// with status.
func redirector(status int, target func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target()+r.URL.Path+"?leak=redirect-secret", status)
	})
}

// TestFetchRedirectsStayAtTheOrigin: the verifiers' requests to the authorization server follow
// a redirect only within the origin they were sent to. The introspection request (its body is
// the token) redirected to another host with 307, which would re-send the body, is refused and
// never reaches that host: 503, Retry-After, a report that says why and carries no query string.
// The same holds for the metadata and the JWK Set, and for a redirect from https to http; a
// redirect within the origin is followed.
func TestFetchRedirectsStayAtTheOrigin(t *testing.T) {
	// Where the redirects point: an endpoint that would accept the token, and an issuer with
	// the right metadata and keys.
	elsewhere := &introspectionStub{status: 200}
	other := httptest.NewServer(elsewhere)
	defer other.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()

	moved := httptest.NewServer(redirector(http.StatusTemporaryRedirect, func() string { return other.URL }))
	defer moved.Close()
	v, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{URL: moved.URL + "/introspect",
		ClientID: "resource-server", ClientSecret: "rs-secret", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	m := startMCP(t, v, mcpOptions{})
	elsewhere.set(200, `{"active":true,"sub":"ada","aud":"`+m.resource+`"}`)
	r := m.call("opaque-token", "whoami")
	if r.status != 503 || r.header.Get("Retry-After") != "5" {
		t.Errorf("introspection redirected to another host: %d %v %s", r.status, r.header, r.body)
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("the token was sent to the redirect's host %d times", n)
	}
	reports := m.flushReports()
	if len(reports) != 1 || !strings.Contains(reports[0].Error(), "another origin") ||
		strings.Contains(reports[0].Error(), "redirect-secret") || strings.Contains(reports[0].Error(), "opaque-token") {
		t.Errorf("reports %v, want one refused redirect, without query or token", reports)
	}

	// The JWT verifier: metadata and JWK Set redirected to another host, and from https to
	// http.
	key := oidctest.NewRSAKey(t, "k1")
	keys, err := os.ReadFile(oidctest.WriteKeySet(t, t.TempDir(), "keys.json", key))
	if err != nil {
		t.Fatal(err)
	}
	stub := &issuerStub{docs: map[string]string{"/keys": string(keys)}}
	honest := httptest.NewServer(stub)
	defer honest.Close()
	const resource = "https://mcp.example/mcp"
	ctx := toolgrain.WithResource(context.Background(), resource)
	tokenOf := func(iss string) string {
		return sign(t, key, nil, map[string]any{"iss": iss, "sub": "s", "aud": resource, "exp": time.Now().Add(time.Minute).Unix()})
	}
	issuerMoved := httptest.NewServer(redirector(http.StatusFound, func() string { return honest.URL }))
	defer issuerMoved.Close()
	stub.docs["/.well-known/oauth-authorization-server"] = `{"issuer":"` + issuerMoved.URL + `","jwks_uri":"` + honest.URL + `/keys"}`
	tlsMoved := httptest.NewTLSServer(redirector(http.StatusFound, func() string { return honest.URL }))
	defer tlsMoved.Close()
	tlsClient := tlsMoved.Client()
	defer tlsClient.CloseIdleConnections()
	for _, tc := range []struct {
		name string
		cfg  auth.JWTConfig
		want string
	}{
		{"metadata on another host", auth.JWTConfig{Issuer: issuerMoved.URL, HTTPClient: hc}, "another origin"},
		{"JWK Set on another host", auth.JWTConfig{Issuer: "https://as.example", JWKSURL: issuerMoved.URL + "/keys", HTTPClient: hc}, "another origin"},
		{"JWK Set from https to http", auth.JWTConfig{Issuer: "https://as.example", JWKSURL: tlsMoved.URL + "/keys", HTTPClient: tlsClient}, "a downgrade from https"},
	} {
		v, err := auth.NewJWTVerifier(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		before := len(stub.paths())
		_, err = v.VerifyToken(ctx, tokenOf(tc.cfg.Issuer))
		if err == nil || errors.Is(err, toolgrain.ErrInvalidToken) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "redirect-secret") {
			t.Errorf("%s: %v, want a failure saying %q, without the query", tc.name, err, tc.want)
		}
		if hits := stub.paths()[before:]; len(hits) != 0 {
			t.Errorf("%s: the redirect was followed: %v", tc.name, hits)
		}
	}

	// Within the origin, a redirect is followed.
	sameOrigin := http.NewServeMux()
	sameOrigin.Handle("/keys", stub)
	sameOrigin.Handle("/old-keys", http.RedirectHandler("/keys", http.StatusMovedPermanently))
	same := httptest.NewServer(sameOrigin)
	defer same.Close()
	v2, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: "https://as.example", JWKSURL: same.URL + "/old-keys", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := v2.VerifyToken(ctx, tokenOf("https://as.example")); err != nil || id.Subject != "s" {
		t.Errorf("a redirect within the origin: %v, %v", id, err)
	}
}

// TestFetchNeedsHTTPS: the issuer, a configured JWK Set URL and the introspection endpoint must
// be https, or http on a loopback host; the metadata of an https issuer naming an http jwks_uri
// is refused (a failure, the JWK Set never fetched); and no error text carries a URL's query or
// user information (a key in a query string, say), the errors of net/http included.
func TestFetchNeedsHTTPS(t *testing.T) {
	for _, iss := range []string{"http://auth.example.com", "http://10.0.0.9", "ftp://auth.example.com"} {
		if _, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: iss}); err == nil || !strings.Contains(err.Error(), "https") {
			t.Errorf("issuer %s: %v, want an error asking for https", iss, err)
		}
		if _, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: "https://as.example", JWKSURL: iss + "/keys"}); err == nil || !strings.Contains(err.Error(), "https") {
			t.Errorf("JWK Set URL %s: %v, want an error asking for https", iss, err)
		}
		if _, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{URL: iss + "/introspect", ClientID: "c", ClientSecret: "s"}); err == nil || !strings.Contains(err.Error(), "https") {
			t.Errorf("introspection endpoint %s: %v, want an error asking for https", iss, err)
		}
	}
	for _, iss := range []string{"https://auth.example.com", "http://127.0.0.1:8080", "http://localhost:9000/realm", "http://[::1]:3000"} {
		if _, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: iss}); err != nil {
			t.Errorf("issuer %s: %v", iss, err)
		}
		if _, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{URL: iss + "/introspect", ClientID: "c", ClientSecret: "s"}); err != nil {
			t.Errorf("introspection endpoint %s: %v", iss, err)
		}
	}
	if _, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: "https://user:pw@as.example/?key=config-secret"}); err == nil || strings.Contains(err.Error(), "config-secret") || strings.Contains(err.Error(), "pw") {
		t.Errorf("an issuer with a query: %v, want an error without the query", err)
	}

	// An https issuer whose metadata names an http jwks_uri.
	key := oidctest.NewRSAKey(t, "k1")
	keys, err := os.ReadFile(oidctest.WriteKeySet(t, t.TempDir(), "keys.json", key))
	if err != nil {
		t.Fatal(err)
	}
	plain := &issuerStub{docs: map[string]string{"/keys": string(keys)}}
	plainTS := httptest.NewServer(plain)
	defer plainTS.Close()
	meta := &issuerStub{docs: map[string]string{}}
	issuer := httptest.NewTLSServer(meta)
	defer issuer.Close()
	meta.docs["/.well-known/oauth-authorization-server"] = `{"issuer":"` + issuer.URL + `","jwks_uri":"` + plainTS.URL + `/keys"}`
	hc := issuer.Client()
	defer hc.CloseIdleConnections()
	v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer.URL, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	const resource = "https://mcp.example/mcp"
	ctx := toolgrain.WithResource(context.Background(), resource)
	tok := sign(t, key, nil, map[string]any{"iss": issuer.URL, "sub": "s", "aud": resource, "exp": time.Now().Add(time.Minute).Unix()})
	_, err = v.VerifyToken(ctx, tok)
	if err == nil || errors.Is(err, toolgrain.ErrInvalidToken) || !strings.Contains(err.Error(), "http jwks_uri") {
		t.Errorf("an http jwks_uri under an https issuer: %v, want a failure", err)
	}
	if hits := plain.paths(); len(hits) != 0 {
		t.Errorf("the http JWK Set was fetched: %v", hits)
	}
	// With https throughout, the same issuer works.
	meta.docs["/keys"] = string(keys)
	meta.docs["/.well-known/oauth-authorization-server"] = `{"issuer":"` + issuer.URL + `","jwks_uri":"` + issuer.URL + `/keys"}`
	v, _ = auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer.URL, HTTPClient: hc})
	if id, err := v.VerifyToken(ctx, tok); err != nil || id.Subject != "s" {
		t.Errorf("https issuer and jwks_uri: %v, %v", id, err)
	}

	// Queries and user information stay out of error texts: a JWK Set URL with a key in its
	// query, on a server that is gone.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	v, err = auth.NewJWTVerifier(auth.JWTConfig{Issuer: "https://as.example", JWKSURL: "http://user:userpw@" + strings.TrimPrefix(gone.URL, "http://") + "/keys?api_key=query-secret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.VerifyToken(ctx, tok)
	if err == nil || strings.Contains(err.Error(), "query-secret") || strings.Contains(err.Error(), "userpw") || !strings.Contains(err.Error(), "/keys") {
		t.Errorf("a JWK Set server that is gone: %v, want the URL without query or user information", err)
	}
}
