// The benchmarks of doc.go: one RS256 or ES256 access token with the claims an authorization
// server issues, verified with the issuer, audience and lifetime checks, the key set parsed once.
package josebench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	gjwt "github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v3/jwk"
	xjwt "github.com/lestrrat-go/jwx/v3/jwt"
)

const iss = "https://as.example.com"
const aud = "https://mcp.example.com/mcp"

type fixture struct {
	jwks  []byte
	token string
}

func makeFixture(b *testing.B, alg string) fixture {
	var priv any
	switch alg {
	case "RS256":
		k, _ := rsa.GenerateKey(rand.Reader, 2048)
		priv = k
	case "ES256":
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		priv = k
	}
	jk, err := jwk.Import(priv)
	if err != nil {
		b.Fatal(err)
	}
	_ = jk.Set(jwk.KeyIDKey, "k1")
	_ = jk.Set(jwk.AlgorithmKey, alg)
	pub, _ := jk.PublicKey()
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	raw, _ := json.Marshal(set)
	now := time.Now()
	claims := gjwt.MapClaims{"iss": iss, "sub": "client-1", "aud": aud, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(),
		"jti": "abcdefghijklmnop", "client_id": "client-1", "scope": "tools:call admin"}
	var m gjwt.SigningMethod = gjwt.SigningMethodRS256
	if alg == "ES256" {
		m = gjwt.SigningMethodES256
	}
	t := gjwt.NewWithClaims(m, claims)
	t.Header["kid"] = "k1"
	t.Header["typ"] = "at+jwt"
	s, err := t.SignedString(priv)
	if err != nil {
		b.Fatal(err)
	}
	return fixture{raw, s}
}

type atClaims struct {
	gjwt.RegisteredClaims
	Scope    string   `json:"scope"`
	Scp      []string `json:"scp"`
	ClientID string   `json:"client_id"`
}

func benchGolangJWT(b *testing.B, alg string) {
	f := makeFixture(b, alg)
	kf, err := keyfunc.NewJWKSetJSON(f.jwks)
	if err != nil {
		b.Fatal(err)
	}
	p := gjwt.NewParser(gjwt.WithValidMethods([]string{"RS256", "PS256", "ES256", "EdDSA"}), gjwt.WithIssuer(iss),
		gjwt.WithAudience(aud), gjwt.WithExpirationRequired(), gjwt.WithLeeway(30*time.Second))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var c atClaims
		if _, err := p.ParseWithClaims(f.token, &c, kf.Keyfunc); err != nil || c.Subject != "client-1" || c.Scope == "" {
			b.Fatal(err)
		}
	}
}

func benchJWX(b *testing.B, alg string) {
	f := makeFixture(b, alg)
	set, err := jwk.Parse(f.jwks)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t, err := xjwt.ParseString(f.token, xjwt.WithKeySet(set), xjwt.WithIssuer(iss), xjwt.WithAudience(aud),
			xjwt.WithAcceptableSkew(30*time.Second), xjwt.WithValidate(true))
		if err != nil {
			b.Fatal(err)
		}
		sub, _ := t.Subject()
		var scope string
		if err := t.Get("scope", &scope); err != nil || sub != "client-1" || scope == "" {
			b.Fatal(err)
		}
	}
}

func BenchmarkGolangJWTKeyfunc_RS256(b *testing.B) { benchGolangJWT(b, "RS256") }
func BenchmarkJWX_RS256(b *testing.B)              { benchJWX(b, "RS256") }
func BenchmarkGolangJWTKeyfunc_ES256(b *testing.B) { benchGolangJWT(b, "ES256") }
func BenchmarkJWX_ES256(b *testing.B)              { benchJWX(b, "ES256") }
