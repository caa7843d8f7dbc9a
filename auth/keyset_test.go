package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// publicJWKs returns the JWKs of keys, public members only, with use set to use ("" for none).
func publicJWKs(t testing.TB, use string, keys ...oidctest.Key) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(oidctest.WriteKeySet(t, t.TempDir(), "keys.json", keys...))
	if err != nil {
		t.Fatal(err)
	}
	var set struct{ Keys []map[string]any }
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	for _, k := range set.Keys {
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi"} {
			delete(k, private)
		}
		delete(k, "use")
		if use != "" {
			k["use"] = use
		}
	}
	return set.Keys
}

// keySetOf returns the JSON of a JWK Set of keys.
func keySetOf(t testing.TB, keys ...map[string]any) string {
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJWTVerifierOddKeys: keys of the issuer's JWK Set that cannot verify signatures (a
// secp256k1 key, a key type this verifier does not know, X25519, a symmetric key, a malformed
// RSA key, an encryption key) are left out, each logged once for the life of the verifier,
// and the rest of the set works; a token signed with the private half of a use: enc key is
// rejected, though the set publishes the key under the token's kid.
func TestJWTVerifierOddKeys(t *testing.T) {
	sig, enc, es := oidctest.NewRSAKey(t, "sig1"), oidctest.NewRSAKey(t, "enc1"), oidctest.NewECKey(t, "es1")
	xy := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	odd := []map[string]any{
		{"kty": "EC", "crv": "secp256k1", "kid": "k1", "x": xy, "y": xy, "use": "sig"},
		{"kty": "AKP", "alg": "ML-DSA-44", "kid": "pq1", "pub": xy},
		{"kty": "OKP", "crv": "X25519", "kid": "x1", "x": xy},
		{"kty": "oct", "kid": "hmac1", "k": xy},
		{"kty": "RSA", "kid": "bad1", "n": "not base64!", "e": "AQAB"},
	}
	var keys []map[string]any
	keys = append(keys, odd[:2]...)
	keys = append(keys, publicJWKs(t, "sig", sig)...)
	keys = append(keys, odd[2:]...)
	keys = append(keys, publicJWKs(t, "enc", enc)...)
	keys = append(keys, publicJWKs(t, "", es)...) // no use: a signature key
	stub := &issuerStub{docs: map[string]string{"/keys": keySetOf(t, keys...), "/enc-keys": keySetOf(t, append(publicJWKs(t, "sig", sig), publicJWKs(t, "enc", enc)...)...)}}
	ts := httptest.NewServer(stub)
	defer ts.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	const issuer, resource = "https://as.example", "https://mcp.example/mcp"
	ctx := toolgrain.WithResource(context.Background(), resource)
	claims := jwt.MapClaims{"iss": issuer, "sub": "s", "aud": resource, "exp": time.Now().Add(time.Hour).Unix()}
	core, logs := observer.New(zap.WarnLevel)
	var c clock
	v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, JWKSURL: ts.URL + "/keys", HTTPClient: hc, Logger: zap.New(core), Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []oidctest.Key{sig, es} {
		if id, err := v.VerifyToken(ctx, sign(t, k, nil, claims)); err != nil || id.Subject != "s" {
			t.Fatalf("a token of %s, beside the odd keys: %v, %v", k.KID, id, err)
		}
	}
	if _, err := v.VerifyToken(ctx, sign(t, enc, nil, claims)); !errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("a token signed with the encryption key: %v, want a rejection", err)
	}
	// The set fetched again (a kid it does not have, once the interval has passed): the keys
	// left out are not logged again.
	c.advance(time.Hour)
	if _, err := v.VerifyToken(ctx, sign(t, oidctest.NewRSAKey(t, "new"), nil, claims)); !errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("an unknown kid: %v", err)
	}
	if n := strings.Count(strings.Join(stub.paths(), " "), "/keys"); n != 2 {
		t.Errorf("%d JWK Set fetches, want 2", n)
	}
	var got []string
	for _, e := range logs.All() {
		f := e.ContextMap()
		got = append(got, f["key"].(string)+": "+f["reason"].(string))
	}
	want := []string{`"k1": unsupported key: kty "EC", crv "secp256k1"`, `"pq1": unsupported key type "AKP"`,
		`"x1": not a signature key: kty "OKP", crv "X25519"`, `"hmac1": a symmetric (oct) key: HMAC keys come from JWTConfig.SharedSecret only`,
		`"bad1": malformed RSA key`, `"enc1": use enc: an encryption key, never used for signatures`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A set of nothing but a signature key and an encryption key: the latter never verifies.
	v, _ = auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, JWKSURL: ts.URL + "/enc-keys", HTTPClient: hc})
	if _, err := v.VerifyToken(ctx, sign(t, enc, nil, claims)); !errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("a token of the use: enc key: %v, want a rejection", err)
	}
	kidless := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	s, err := kidless.SignedString(enc.Priv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyToken(ctx, s); !errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("a token of the use: enc key without kid: %v, want a rejection", err)
	}
	if id, err := v.VerifyToken(ctx, sign(t, sig, nil, claims)); err != nil || id.Subject != "s" {
		t.Errorf("a token of the signature key: %v, %v", id, err)
	}

	// A set with no usable key at all is the issuer's failure, not the token's.
	stub.docs["/odd-keys"] = keySetOf(t, odd...)
	v, _ = auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, JWKSURL: ts.URL + "/odd-keys", HTTPClient: hc})
	if _, err := v.VerifyToken(ctx, sign(t, sig, nil, claims)); err == nil || errors.Is(err, toolgrain.ErrInvalidToken) || !strings.Contains(err.Error(), "none of its 5 keys can verify signatures") {
		t.Errorf("a set of unusable keys: %v, want a failure", err)
	}
}

// noncanonical returns seg, a base64url segment whose length leaves unused low bits in its last
// character, with one of those bits set: lenient decoders read the same bytes from it.
func noncanonical(t *testing.T, seg string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	if len(seg)%4 == 0 {
		t.Fatalf("a segment of %d characters has no unused bits", len(seg))
	}
	last := strings.IndexByte(alphabet, seg[len(seg)-1])
	out := seg[:len(seg)-1] + string(alphabet[last|1])
	a, err1 := base64.RawURLEncoding.DecodeString(seg)
	b, err2 := base64.RawURLEncoding.DecodeString(out)
	if err1 != nil || err2 != nil || string(a) != string(b) || out == seg {
		t.Fatalf("%q and %q do not decode alike: %v %v", seg, out, err1, err2)
	}
	return out
}

// TestJWTVerifierStrictEncoding: a token has one encoding. The same signed token re-encoded
// is rejected, while the token itself is accepted: above all its signature, the one segment
// the signature does not cover, with non-zero trailing bits or a line break (which lenient
// base64 decoders read as the same bytes); and, as controls, the header and payload so
// re-encoded, padding and the standard alphabet.
func TestJWTVerifierStrictEncoding(t *testing.T) {
	key := oidctest.NewRSAKey(t, "k1")
	stub := &issuerStub{docs: map[string]string{"/keys": keySetOf(t, publicJWKs(t, "sig", key)...)}}
	ts := httptest.NewServer(stub)
	defer ts.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	const issuer, resource = "https://as.example", "https://mcp.example/mcp"
	ctx := toolgrain.WithResource(context.Background(), resource)
	v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: issuer, JWKSURL: ts.URL + "/keys", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	// A payload whose length leaves unused bits; the RS256 signature (256 bytes, 342
	// characters) always does.
	claims := jwt.MapClaims{"iss": issuer, "sub": "s", "aud": resource, "exp": time.Now().Add(time.Hour).Unix()}
	var token string
	for pad := ""; ; pad += "x" {
		claims["pad"] = pad
		token = sign(t, key, nil, claims)
		if len(strings.Split(token, ".")[1])%4 != 0 {
			break
		}
	}
	if _, err := v.VerifyToken(ctx, token); err != nil {
		t.Fatalf("the token itself: %v", err)
	}
	p := strings.Split(token, ".")
	std := strings.NewReplacer("-", "+", "_", "/")
	for _, tc := range []struct{ name, token string }{
		{"signature with non-zero trailing bits", p[0] + "." + p[1] + "." + noncanonical(t, p[2])},
		{"payload with non-zero trailing bits", p[0] + "." + noncanonical(t, p[1]) + "." + p[2]},
		{"padded payload", p[0] + "." + p[1] + strings.Repeat("=", 4-len(p[1])%4) + "." + p[2]},
		{"a line break in the signature", p[0] + "." + p[1] + "." + p[2][:100] + "\n" + p[2][100:]},
		{"a carriage return in the header", p[0][:5] + "\r" + p[0][5:] + "." + p[1] + "." + p[2]},
		{"the standard alphabet", std.Replace(token)},
	} {
		if tc.token == token { // the standard alphabet, for a token without '-' and '_'
			continue
		}
		if _, err := v.VerifyToken(ctx, tc.token); !errors.Is(err, toolgrain.ErrInvalidToken) {
			t.Errorf("%s: %v, want a rejection", tc.name, err)
		}
	}
}
