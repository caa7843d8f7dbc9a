package auth_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
)

// A JWTVerifier finds the issuer's keys through its metadata, on the first verification, and
// checks each token's signature, issuer, audience and times offline. Here the issuer is a test
// server that publishes one Ed25519 key.
func ExampleNewJWTVerifier() {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	mux := http.NewServeMux()
	as := httptest.NewServer(mux)
	defer as.Close()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": as.URL, "jwks_uri": as.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "OKP", "crv": "Ed25519", "kid": "k1", "alg": "EdDSA", "use": "sig",
			"x": base64.RawURLEncoding.EncodeToString(pub),
		}}})
	})
	issuer := as.URL // "https://auth.example.com" in production
	issue := func(aud string) string {
		t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
			"iss": issuer, "sub": "ada", "aud": aud, "scope": "mcp:tools",
			"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
		})
		t.Header["kid"] = "k1"
		s, _ := t.SignedString(priv)
		return s
	}

	cfg := toolgrain.Config{} // the server's, with its tools
	v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.HTTP.Auth = &toolgrain.AuthConfig{Verifier: v, Resource: "https://mcp.example.com/mcp",
		AuthorizationServers: []string{issuer}}

	// The transport names the endpoint's resource in each request's context; the audience of a
	// token must contain it.
	ctx := toolgrain.WithResource(context.Background(), cfg.HTTP.Auth.Resource)
	id, err := v.VerifyToken(ctx, issue("https://mcp.example.com/mcp"))
	fmt.Println(id.Subject, id.Scopes, err)
	_, err = v.VerifyToken(ctx, issue("https://other.example.com/mcp")) // a token for another resource
	fmt.Println(errors.Is(err, toolgrain.ErrInvalidToken))
	// Output:
	// ada [mcp:tools] <nil>
	// true
}

// An IntrospectionVerifier asks the authorization server about opaque tokens (RFC 7662) and
// caches its answers. Here the introspection endpoint is a test server.
func ExampleNewIntrospectionVerifier() {
	secret := "s3cret"
	introspect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, pw, ok := r.BasicAuth(); !ok || id != "mcp-server" || pw != secret {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.PostFormValue("token") != "opaque-1" {
			json.NewEncoder(w).Encode(map[string]bool{"active": false})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"active": true, "sub": "ada", "scope": "mcp:tools",
			"aud": "https://mcp.example.com/mcp", "exp": time.Now().Add(time.Hour).Unix()})
	}))
	defer introspect.Close()

	v, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{
		URL: introspect.URL, ClientID: "mcp-server", ClientSecret: secret})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := toolgrain.WithResource(context.Background(), "https://mcp.example.com/mcp")
	id, err := v.VerifyToken(ctx, "opaque-1")
	fmt.Println(id.Subject, id.Scopes, err)
	_, err = v.VerifyToken(ctx, "revoked")
	fmt.Println(errors.Is(err, toolgrain.ErrInvalidToken))
	// Output:
	// ada [mcp:tools] <nil>
	// true
}
