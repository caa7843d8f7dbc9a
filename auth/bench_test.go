package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// BenchmarkJWTVerify is the cost of one request's verification with the key cached: an RS256
// (or ES256) token with the claims oidc-provider issues, checked by VerifyToken. The JWK Set is
// served once, by an httptest server, before the timer starts.
func BenchmarkJWTVerify(b *testing.B) {
	for _, k := range []struct {
		name string
		key  func(testing.TB, string) oidctest.Key
	}{{"RS256", oidctest.NewRSAKey}, {"ES256", oidctest.NewECKey}} {
		b.Run(k.name, func(b *testing.B) {
			key := k.key(b, "k1")
			path := oidctest.WriteKeySet(b, b.TempDir(), "keys.json", key)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.ServeFile(w, r, path) // private members too: the verifier reads the public ones
			}))
			defer ts.Close()
			hc := &http.Client{}
			defer hc.CloseIdleConnections()
			const issuer = "https://as.example"
			v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, JWKSURL: ts.URL, HTTPClient: hc})
			if err != nil {
				b.Fatal(err)
			}
			resource := "https://mcp.example/mcp"
			as := &oidctest.Server{Issuer: issuer}
			token := sign(b, key, nil, claimsFor(as, resource))
			ctx := toolgrain.WithResource(context.Background(), resource)
			if _, err := v.VerifyToken(ctx, token); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if id, err := v.VerifyToken(ctx, token); err != nil || id.Subject != "signed-by-test" {
					b.Fatal(err)
				}
			}
		})
	}
}
