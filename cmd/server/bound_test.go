package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// TestSenderConstrainedFlag: the binary's JWT verifier refuses a token bound to a DPoP key (a
// cnf claim) unless --auth-allow-sender-constrained says a gateway in front checks the proof.
func TestSenderConstrainedFlag(t *testing.T) {
	key := oidctest.NewRSAKey(t, "k1")
	keys, err := os.ReadFile(oidctest.WriteKeySet(t, t.TempDir(), "keys.json", key))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	as := httptest.NewServer(mux)
	defer as.Close()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": as.URL, "jwks_uri": as.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(keys) })
	const audience = "https://mcp.example.test/mcp"
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": as.URL, "sub": "ada", "aud": audience,
		"exp": time.Now().Add(time.Hour).Unix(), "cnf": map[string]string{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}})
	tok.Header["kid"] = key.KID
	bound, err := tok.SignedString(key.Priv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := toolgrain.WithResource(context.Background(), audience)
	for _, allow := range []bool{false, true} {
		args := []string{"--transport", "http", "--auth-issuer", as.URL, "--auth-audience", audience}
		if allow {
			args = append(args, "--auth-allow-sender-constrained")
		}
		o, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		v, err := o.http.verifier()
		if err != nil {
			t.Fatal(err)
		}
		id, err := v.VerifyToken(ctx, bound)
		switch {
		case !allow && !errors.Is(err, toolgrain.ErrInvalidToken):
			t.Errorf("without the flag: %v, %v; want a rejection", id, err)
		case allow && (err != nil || id.Subject != "ada"):
			t.Errorf("with --auth-allow-sender-constrained: %v, %v", id, err)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}
