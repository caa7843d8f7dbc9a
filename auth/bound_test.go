package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// TestSenderConstrainedTokens, end to end: a JWT signed by oidc-provider's key with a cnf
// claim (bound to a DPoP key, RFC 9449, or to a client certificate, RFC 8705) is refused with
// 401 invalid_token and not reported, unless the verifier is configured to accept bound tokens
// as bearer tokens (a gateway in front checks the proof): then it reaches the tool. The same for
// an introspection answer with cnf or token_type DPoP; cnf: null is no binding.
func TestSenderConstrainedTokens(t *testing.T) {
	as := oidctest.Start(t)
	strict := startMCP(t, newJWTVerifier(t, as, newCountingTransport(), nil, auth.JWTConfig{}), mcpOptions{})
	lenient := startMCP(t, newJWTVerifier(t, as, newCountingTransport(), nil, auth.JWTConfig{AllowSenderConstrained: true}), mcpOptions{})
	bound := func(m *mcpServer, cnf any) string {
		c := claimsFor(as, m.resource)
		c["cnf"] = cnf
		return sign(t, as.Keys[0], nil, c)
	}
	for _, tc := range []struct {
		name string
		cnf  any
	}{
		{"DPoP", map[string]string{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}},
		{"mutual TLS", map[string]string{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}},
		{"an empty confirmation", map[string]string{}},
	} {
		if r := strict.call(bound(strict, tc.cnf), "whoami"); r.status != 401 || r.body != invalidToken || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s, refused by default: %d %v %s", tc.name, r.status, r.header, r.body)
		}
		if r := lenient.call(bound(lenient, tc.cnf), "whoami"); r.status != 200 || textOf(r.body) != "signed-by-test tools:call,admin" {
			t.Errorf("%s, accepted when allowed: %d %s", tc.name, r.status, r.body)
		}
	}
	if r := strict.call(bound(strict, nil), "whoami"); r.status != 200 {
		t.Errorf("cnf: null: %d %s", r.status, r.body)
	}
	_, err := newJWTVerifier(t, as, newCountingTransport(), nil, auth.JWTConfig{}).VerifyToken(
		toolgrain.WithResource(context.Background(), strict.resource), bound(strict, map[string]string{"jkt": "x"}))
	if !errors.Is(err, toolgrain.ErrInvalidToken) || !strings.Contains(err.Error(), "sender-constrained") {
		t.Errorf("the verifier's reason: %v", err)
	}
	if reports := strict.flushReports(); len(reports) != 0 {
		t.Errorf("refusals were reported: %v", reports)
	}

	// Introspection answers.
	stub := &introspectionStub{}
	ts := httptest.NewServer(stub)
	defer ts.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	newV := func(allow bool) *mcpServer {
		v, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{URL: ts.URL, ClientID: "c", ClientSecret: "s",
			HTTPClient: hc, CacheSize: -1, NegativeCacheSize: -1, AllowSenderConstrained: allow})
		if err != nil {
			t.Fatal(err)
		}
		return startMCP(t, v, mcpOptions{})
	}
	strictI, lenientI := newV(false), newV(true)
	for _, tc := range []struct{ name, extra string }{
		{"DPoP", `"token_type":"DPoP","cnf":{"jkt":"0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}`},
		{"mutual TLS", `"token_type":"Bearer","cnf":{"x5t#S256":"bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}`},
		{"token_type DPoP alone", `"token_type":"DPoP"`},
	} {
		for _, m := range []*mcpServer{strictI, lenientI} {
			stub.set(200, `{"active":true,"sub":"ada","scope":"tools:call","aud":"`+m.resource+`",`+tc.extra+`}`)
			r := m.call("opaque-token", "whoami")
			if m == strictI && (r.status != 401 || r.body != invalidToken) {
				t.Errorf("introspection, %s, refused by default: %d %s", tc.name, r.status, r.body)
			}
			if m == lenientI && (r.status != 200 || textOf(r.body) != "ada tools:call") {
				t.Errorf("introspection, %s, accepted when allowed: %d %s", tc.name, r.status, r.body)
			}
		}
	}
	stub.set(200, `{"active":true,"sub":"ada","aud":"`+strictI.resource+`","token_type":"Bearer","cnf":null}`)
	if r := strictI.call("opaque-token", "whoami"); r.status != 200 {
		t.Errorf("introspection, cnf: null: %d %s", r.status, r.body)
	}
}
