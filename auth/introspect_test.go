package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// newIntrospector returns a verifier of as's opaque tokens, with the resource server's
// credentials, whose requests go through ct.
func newIntrospector(t testing.TB, as *oidctest.Server, ct *countingTransport, c *clock, cfg auth.IntrospectionConfig) *auth.IntrospectionVerifier {
	t.Helper()
	cfg.URL = as.Issuer + "/token/introspection"
	if cfg.ClientID == "" {
		cfg.ClientID, cfg.ClientSecret = "resource-server", "rs-secret"
	}
	cfg.Issuer = as.Issuer
	cfg.HTTPClient = &http.Client{Transport: ct}
	if c != nil {
		cfg.Now = c.now
	}
	v, err := auth.NewIntrospectionVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ct.base.CloseIdleConnections)
	return v
}

// TestIntrospectionRealServer runs the introspection verifier against oidc-provider's
// introspection endpoint: a real opaque token reaches the tool with its subject and scopes;
// unknown, revoked and other-resource tokens get 401 and are not reported; the answers are
// cached (the rejections apart), bounded in number and in time, and never kept past the
// token's exp.
func TestIntrospectionRealServer(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	var c clock
	v := newIntrospector(t, as, ct, &c, auth.IntrospectionConfig{CacheSize: 3, CacheTTL: time.Minute})
	m := startMCP(t, v, mcpOptions{})

	good := as.Token("opaque-client", "opaque-secret", "tools:call admin", m.resource)
	if strings.Count(good, ".") == 2 {
		t.Fatalf("the server issued a JWT to the opaque client: %s", good)
	}
	r := m.call(good, "whoami")
	if r.status != 200 || textOf(r.body) != "opaque-client tools:call,admin" {
		t.Fatalf("valid opaque token: %d %s", r.status, r.body)
	}
	id, err := v.VerifyToken(toolgrain.WithResource(context.Background(), m.resource), good)
	if err != nil {
		t.Fatal(err)
	}
	if in, ok := id.Extra.(*auth.Introspection); !ok || in.ClientID != "opaque-client" || in.Iss != as.Issuer || len(in.Aud) != 1 || in.Aud[0] != m.resource {
		t.Errorf("identity's Extra = %#v", id.Extra)
	}
	// Cached: 100 more requests, no more introspection.
	for range 100 {
		if r := m.call(good, "whoami"); r.status != 200 {
			t.Fatalf("cached token: %d %s", r.status, r.body)
		}
	}
	if n := ct.intro.Load(); n != 1 {
		t.Errorf("%d introspections for one token used 102 times, want 1", n)
	}

	revoked := as.Token("opaque-client", "opaque-secret", "tools:call", m.resource)
	as.Revoke("opaque-client", "opaque-secret", revoked)
	for _, tc := range []struct{ name, token string }{
		{"unknown token", "made-up-opaque-token"},
		{"revoked", revoked},
		{"issued for another resource", as.Token("opaque-client", "opaque-secret", "tools:call", "https://other.example/mcp")},
		{"a JWT the opaque client never got", as.Token("mcp-client", "mcp-secret", "tools:call", "https://other.example/mcp")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := m.call(tc.token, "whoami")
			if r.status != 401 || r.body != invalidToken {
				t.Errorf("%d %s", r.status, r.body)
			}
			_, err := v.VerifyToken(toolgrain.WithResource(context.Background(), m.resource), tc.token)
			if !errors.Is(err, toolgrain.ErrInvalidToken) {
				t.Errorf("VerifyToken = %v, want a rejection", err)
			}
			t.Logf("rejected: %v", err)
		})
	}

	// The cache holds 3 answers of active tokens: those of the tokens not active above are kept
	// apart and left good's in; three more active tokens push it out.
	before := ct.intro.Load()
	if r := m.call(good, "whoami"); r.status != 200 {
		t.Fatalf("good again: %d %s", r.status, r.body)
	}
	if n := ct.intro.Load() - before; n != 0 {
		t.Errorf("%d introspections for a cached token after four rejections, want 0", n)
	}
	for range 3 {
		if r := m.call(as.Token("opaque-client", "opaque-secret", "tools:call", m.resource), "whoami"); r.status != 200 {
			t.Fatalf("another token: %d %s", r.status, r.body)
		}
	}
	before = ct.intro.Load()
	if r := m.call(good, "whoami"); r.status != 200 {
		t.Fatalf("good again: %d %s", r.status, r.body)
	}
	if n := ct.intro.Load() - before; n != 1 {
		t.Errorf("%d introspections for an evicted token, want 1", n)
	}
	// Kept for CacheTTL: a minute later it is asked about again.
	c.advance(time.Minute)
	before = ct.intro.Load()
	if r := m.call(good, "whoami"); r.status != 200 {
		t.Fatalf("good after a minute: %d %s", r.status, r.body)
	}
	if n := ct.intro.Load() - before; n != 1 {
		t.Errorf("%d introspections after CacheTTL, want 1", n)
	}
	// Never past exp (the server's tokens live 300 s): with a cache TTL of an hour, a token
	// past its exp is asked about again and rejected, though the server still calls it active.
	long := newIntrospector(t, as, ct, &c, auth.IntrospectionConfig{CacheTTL: time.Hour})
	ctx := toolgrain.WithResource(context.Background(), m.resource)
	if _, err := long.VerifyToken(ctx, good); err != nil {
		t.Fatal(err)
	}
	c.advance(301 * time.Second)
	before = ct.intro.Load()
	if _, err := long.VerifyToken(ctx, good); !errors.Is(err, toolgrain.ErrInvalidToken) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("past exp: %v", err)
	}
	if n := ct.intro.Load() - before; n != 1 {
		t.Errorf("%d introspections past exp, want 1 (the cached answer ended at exp)", n)
	}

	if reports := m.flushReports(); len(reports) != 0 {
		t.Errorf("rejections were reported: %v", reports)
	}
}

// TestIntrospectionOutage: an introspection endpoint that cannot be reached, or that refuses
// the server's credentials, is the server's failure: 503 and one report per failed
// verification; a cached answer keeps deciding; once the server is back, 200.
func TestIntrospectionOutage(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	v := newIntrospector(t, as, ct, nil, auth.IntrospectionConfig{})
	m := startMCP(t, v, mcpOptions{})
	cachedTok := as.Token("opaque-client", "opaque-secret", "tools:call", m.resource)
	fresh := as.Token("opaque-client", "opaque-secret", "tools:call", m.resource)
	if r := m.call(cachedTok, "whoami"); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	as.Stop()
	const down = 4
	for i := range down {
		r := m.call(fresh, "whoami")
		if r.status != 503 || r.header.Get("Retry-After") == "" || r.header.Get("WWW-Authenticate") != "" {
			t.Fatalf("request %d while the server is down: %d %v %s", i, r.status, r.header, r.body)
		}
	}
	if r := m.call(cachedTok, "whoami"); r.status != 200 {
		t.Fatalf("a cached answer while the server is down: %d %s", r.status, r.body)
	}
	as.Resume()
	if r := m.call(fresh, "whoami"); r.status != 200 {
		t.Fatalf("once the server is back: %d %s", r.status, r.body)
	}

	// Wrong credentials of the resource server: the authorization server answers 401, which
	// says nothing about the token.
	bad := newIntrospector(t, as, ct, nil, auth.IntrospectionConfig{ClientID: "resource-server", ClientSecret: "wrong"})
	_, err := bad.VerifyToken(toolgrain.WithResource(context.Background(), m.resource), fresh)
	var se *auth.StatusError
	if !errors.As(err, &se) || se.Status != 401 || errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Errorf("wrong credentials: %v, want a *StatusError 401 that is not a rejection", err)
	}

	reports := m.flushReports()
	if len(reports) != down {
		t.Fatalf("%d reports, want %d: %v", len(reports), down, reports)
	}
	for _, err := range reports {
		// The request's own failure: connection refused, or EOF on a kept-alive connection
		// that the stopped server dropped.
		var ue *url.Error
		if !errors.As(err, &ue) || strings.Contains(err.Error(), fresh) {
			t.Errorf("report %v, want the introspection request's failure, without the token", err)
		}
	}
}

// TestIntrospectionSharedFlight: concurrent verifications of one new token share one
// introspection request; 10,000 verifications of a token the server does not know cost one.
func TestIntrospectionSharedFlight(t *testing.T) {
	as := oidctest.Start(t)
	ct := newCountingTransport()
	v := newIntrospector(t, as, ct, nil, auth.IntrospectionConfig{})
	ctx := toolgrain.WithResource(context.Background(), "http://mcp.example/mcp")
	tok := as.Token("opaque-client", "opaque-secret", "tools:call", "http://mcp.example/mcp")
	for _, tc := range []struct {
		token string
		ok    bool
	}{{tok, true}, {"forged-opaque-token", false}} {
		ct.intro.Store(0)
		var wg sync.WaitGroup
		var wrong sync.Map
		const n, workers = 10000, 16
		for w := range workers {
			wg.Add(1)
			// Owned by the test, which waits for them.
			go func() {
				defer wg.Done()
				for range n / workers {
					if _, err := v.VerifyToken(ctx, tc.token); (err == nil) != tc.ok {
						wrong.Store(w, err)
					}
				}
			}()
		}
		wg.Wait()
		wrong.Range(func(_, err any) bool {
			t.Errorf("verification of %q: %v", tc.token, err)
			return false
		})
		if got := ct.intro.Load(); got != 1 {
			t.Errorf("%d introspections for %d verifications of one token, want 1", got, n)
		}
	}
}

// introspectionStub is an introspection endpoint that answers what the test sets: a status and
// a body for every request. It stands for an authorization server's error answers, which
// oidc-provider gives only for some of them.
type introspectionStub struct {
	mu     sync.Mutex
	status int
	body   string
	hits   int
}

func (s *introspectionStub) set(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

func (s *introspectionStub) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

func (s *introspectionStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits++
	status, body := s.status, s.body
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// TestIntrospectionOwnErrorsAreOutages: an error answer of the introspection endpoint that is
// about this server's request (a rotated client secret: invalid_client, as 400 or 401;
// unauthorized_client; invalid_request; a 400 without a code; 403, 404, 429, 500) is an outage,
// end to end: 503 with Retry-After and no challenge, a private report naming the status and the
// code but not the token, and nothing cached (the next request asks again, and is served once
// the endpoint answers). A refusal of the token itself (unsupported_token_type) is a rejection.
func TestIntrospectionOwnErrorsAreOutages(t *testing.T) {
	stub := &introspectionStub{}
	ts := httptest.NewServer(stub)
	defer ts.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	v, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{URL: ts.URL + "/introspect",
		ClientID: "resource-server", ClientSecret: "rotated-away", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	m := startMCP(t, v, mcpOptions{})
	active := `{"active":true,"sub":"ada","scope":"tools:call","aud":"` + m.resource + `"}`
	const unavailable = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: authentication is temporarily unavailable"}}`

	cases := []struct {
		status int
		body   string
		code   string
	}{
		{400, `{"error":"invalid_client","error_description":"client authentication failed"}`, "invalid_client"},
		{401, `{"error":"invalid_client"}`, "invalid_client"},
		{400, `{"error":"unauthorized_client"}`, "unauthorized_client"},
		{400, `{"error":"invalid_request","error_description":"missing token"}`, "invalid_request"},
		{400, ``, ""},
		{400, `{"error":"a code\nwith a line break"}`, ""},
		{403, `{"error":"access_denied"}`, "access_denied"},
		{404, `not found`, ""},
		{429, `{"error":"slow_down"}`, "slow_down"},
		{500, `{"error":"server_error"}`, "server_error"},
	}
	for i, tc := range cases {
		token := fmt.Sprintf("opaque-token-%d", i)
		stub.set(tc.status, tc.body)
		before := stub.count()
		for try := range 2 {
			r := m.call(token, "whoami")
			if r.status != 503 || r.header.Get("Retry-After") != "5" || r.header.Get("WWW-Authenticate") != "" || r.body != unavailable {
				t.Errorf("%d %s, try %d: %d %v %s", tc.status, tc.body, try, r.status, r.header, r.body)
			}
		}
		if n := stub.count() - before; n != 2 {
			t.Errorf("%d %s: %d introspections for two requests, want 2 (an outage is not cached)", tc.status, tc.body, n)
		}
		// The endpoint answers again: the same token is served.
		stub.set(200, active)
		if r := m.call(token, "whoami"); r.status != 200 || textOf(r.body) != "ada tools:call" {
			t.Errorf("%d %s, then active: %d %s", tc.status, tc.body, r.status, r.body)
		}
	}

	// The token itself refused: a rejection, cached like active: false.
	stub.set(400, `{"error":"unsupported_token_type","error_description":"Structured JWT Tokens cannot be introspected"}`)
	before := stub.count()
	for range 2 {
		if r := m.call("refused-token", "whoami"); r.status != 401 || r.body != invalidToken {
			t.Errorf("unsupported_token_type: %d %s", r.status, r.body)
		}
	}
	if n := stub.count() - before; n != 1 {
		t.Errorf("%d introspections of a refused token asked twice, want 1", n)
	}

	reports := m.flushReports()
	if len(reports) != 2*len(cases) {
		t.Fatalf("%d reports, want %d: %v", len(reports), 2*len(cases), reports)
	}
	for i, err := range reports {
		tc := cases[i/2]
		var se *auth.StatusError
		if !errors.As(err, &se) || se.Status != tc.status || se.Code != tc.code || errors.Is(err, toolgrain.ErrInvalidToken) {
			t.Errorf("report %d: %v, want a *StatusError %d %q", i, err, tc.status, tc.code)
		}
		if strings.Contains(err.Error(), "opaque-token") || strings.Contains(err.Error(), "rotated-away") {
			t.Errorf("report %d holds a credential: %v", i, err)
		}
	}
	if want := "auth: " + ts.URL + "/introspect answered 400 Bad Request (invalid_client)"; reports[0].Error() != want {
		t.Errorf("report text %q, want %q", reports[0], want)
	}
}
