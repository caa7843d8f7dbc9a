package auth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/oidctest"
	"github.com/toolgrain/toolgrain/tools"
)

// maxToken is the longest token the transport and the verifiers accept (16 KiB).
const maxToken = 16 << 10

// TestTokenLengthCap, end to end: a token longer than 16 KiB (up to the 1 MiB net/http lets
// through in a header) gets 401 invalid_token before any verifier sees it, and the verifiers
// of package auth refuse it before any parsing or request too (no introspection, no JWK Set
// fetch); a token of 16 KiB reaches the verifier, and a real JWT with a large claims set (200
// group ids, as many as Entra ID puts in a token: over 8 KiB) is accepted.
func TestTokenLengthCap(t *testing.T) {
	var calls atomic.Int64
	var longest atomic.Int64
	counting := toolgrain.TokenVerifierFunc(func(_ context.Context, token string) (*tools.Identity, error) {
		calls.Add(1)
		longest.Store(int64(len(token)))
		return &tools.Identity{Subject: "anyone"}, nil
	})
	m := startMCP(t, counting, mcpOptions{})
	huge := strings.Repeat("a", 1<<20-4096)
	for _, tok := range []string{huge, strings.Repeat("b", maxToken+1)} {
		r := m.call(tok, "whoami")
		if r.status != 401 || r.body != invalidToken || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("a token of %d bytes: %d %v %s", len(tok), r.status, r.header, r.body)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the verifier was called %d times for over-long tokens", n)
	}
	if r := m.call(strings.Repeat("c", maxToken), "whoami"); r.status != 200 || calls.Load() != 1 || longest.Load() != maxToken {
		t.Errorf("a token of 16 KiB: %d %s, %d verifier calls", r.status, r.body, calls.Load())
	}

	// The verifiers themselves, called with a token over the cap: a rejection, and not one
	// request to the authorization server (the JWT verifier has fetched nothing yet).
	stub := &introspectionStub{status: 200, body: `{"active":false}`}
	ts := httptest.NewServer(stub)
	defer ts.Close()
	keys := &issuerStub{docs: map[string]string{}}
	ks := httptest.NewServer(keys)
	defer ks.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	iv, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{URL: ts.URL, ClientID: "c", ClientSecret: "s", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	jv, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: ks.URL, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := toolgrain.WithResource(context.Background(), "https://mcp.example/mcp")
	long := strings.Repeat("eyJhbGciOiJSUzI1NiJ9", (maxToken+20)/20) + ".e30.c2ln"
	for name, v := range map[string]toolgrain.TokenVerifier{"introspection": iv, "JWT": jv} {
		_, err := v.VerifyToken(ctx, long)
		if !errors.Is(err, toolgrain.ErrInvalidToken) || !strings.Contains(err.Error(), "longer than 16384 bytes") {
			t.Errorf("%s verifier, a token of %d bytes: %v", name, len(long), err)
		}
	}
	if n, hits := stub.count(), keys.paths(); n != 0 || len(hits) != 0 {
		t.Errorf("over-long tokens cost %d introspections and requests %v", n, hits)
	}

	// A real JWT with many claims fits.
	as := oidctest.Start(t)
	real := startMCP(t, newJWTVerifier(t, as, newCountingTransport(), nil, auth.JWTConfig{}), mcpOptions{})
	claims := claimsFor(as, real.resource)
	var groups []string
	for i := range 200 {
		groups = append(groups, fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
	}
	claims["groups"] = groups
	big := sign(t, as.Keys[0], nil, claims)
	if len(big) <= 8<<10 || len(big) > maxToken {
		t.Fatalf("the token with many claims has %d bytes, want 8 to 16 KiB", len(big))
	}
	if r := real.call(big, "whoami"); r.status != 200 || textOf(r.body) != "signed-by-test tools:call,admin" {
		t.Errorf("a JWT of %d bytes: %d %s", len(big), r.status, r.body)
	}
}

// gatedTransport holds every request until the test lets it go, and records how many were in
// flight at once.
type gatedTransport struct {
	base    http.RoundTripper
	release chan struct{} // one receive lets one request go; closed, all go
	arrived chan string   // the token of each request, as it arrives

	mu       sync.Mutex
	inFlight int
	max      int
}

func (g *gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	g.mu.Lock()
	g.inFlight++
	g.max = max(g.max, g.inFlight)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	g.arrived <- form.Get("token")
	select {
	case <-g.release:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	sent := r.Clone(r.Context())
	sent.Body = io.NopCloser(strings.NewReader(string(body)))
	return g.base.RoundTrip(sent)
}

// TestIntrospectionInFlightBound: with MaxInFlight 4, four introspections of distinct tokens
// are sent and a fifth verification waits instead of sending a fifth: when its context ends
// while it waits, it fails (an outage, not a rejection) without a request; with time, it is sent
// as soon as one of the four ends. At no point are more than four requests in flight.
func TestIntrospectionInFlightBound(t *testing.T) {
	stub := &introspectionStub{status: 200, body: `{"active":false}`}
	ts := httptest.NewServer(stub)
	defer ts.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	gate := &gatedTransport{base: base, release: make(chan struct{}), arrived: make(chan string, 100)}
	v, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{URL: ts.URL, ClientID: "c", ClientSecret: "s",
		HTTPClient: &http.Client{Transport: gate}, MaxInFlight: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx := toolgrain.WithResource(context.Background(), "https://mcp.example/mcp")
	results := make(chan error, 10)
	verify := func(ctx context.Context, token string) {
		_, err := v.VerifyToken(ctx, token)
		results <- err
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		// Owned by the test, which waits for them.
		go func() { defer wg.Done(); verify(ctx, fmt.Sprintf("made-up-%d", i)) }()
	}
	for range 4 {
		<-gate.arrived
	}
	// A fifth, whose caller has gone: refused while waiting, nothing sent.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err = v.VerifyToken(gone, "made-up-4")
	if err == nil || errors.Is(err, toolgrain.ErrInvalidToken) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "4 introspection requests in flight") {
		t.Errorf("a fifth verification whose context ended: %v, want a failure naming the bound", err)
	}
	// A sixth, with time: sent once one of the four ends.
	wg.Add(1)
	// Owned by the test, which waits for it.
	go func() { defer wg.Done(); verify(ctx, "made-up-5") }()
	gate.release <- struct{}{}
	if got := <-gate.arrived; got != "made-up-5" {
		t.Errorf("after one introspection ended, %q was sent, want made-up-5", got)
	}
	close(gate.release)
	wg.Wait()
	close(results)
	for err := range results {
		if !errors.Is(err, toolgrain.ErrInvalidToken) {
			t.Errorf("a made-up token: %v, want a rejection", err)
		}
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if gate.max != 4 {
		t.Errorf("%d introspection requests in flight at once, want at most 4", gate.max)
	}
	if stub.count() != 5 {
		t.Errorf("%d introspections, want 5", stub.count())
	}
}

// tokenStub is an introspection endpoint that calls the tokens starting with "good-" active
// (for audience aud) and every other token not active, and counts the requests.
type tokenStub struct {
	aud  string
	hits atomic.Int64
}

func (s *tokenStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	tok := r.PostFormValue("token")
	w.Header().Set("Content-Type", "application/json")
	if strings.HasPrefix(tok, "good-") {
		fmt.Fprintf(w, `{"active":true,"sub":%q,"aud":%q,"exp":%d}`, tok, s.aud, time.Now().Add(time.Hour).Unix())
		return
	}
	fmt.Fprint(w, `{"active":false}`)
}

// TestIntrospectionNegativeCacheApart: answers for tokens the server says are not active are
// kept apart from the others: 5,000 made-up tokens do not push the answers of three valid
// tokens out of a cache of three, and the made-up ones are bounded on their own
// (NegativeCacheSize).
func TestIntrospectionNegativeCacheApart(t *testing.T) {
	const resource = "https://mcp.example/mcp"
	stub := &tokenStub{aud: resource}
	ts := httptest.NewServer(stub)
	defer ts.Close()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	v, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{URL: ts.URL, ClientID: "c", ClientSecret: "s",
		HTTPClient: hc, CacheSize: 3, NegativeCacheSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := toolgrain.WithResource(context.Background(), resource)
	good := []string{"good-1", "good-2", "good-3"}
	for _, tok := range good {
		if _, err := v.VerifyToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	const flood = 5000
	for i := range flood {
		if _, err := v.VerifyToken(ctx, fmt.Sprintf("made-up-%d", i)); !errors.Is(err, toolgrain.ErrInvalidToken) {
			t.Fatalf("made-up token %d: %v", i, err)
		}
	}
	before := stub.hits.Load()
	for _, tok := range good {
		if id, err := v.VerifyToken(ctx, tok); err != nil || id.Subject != tok {
			t.Errorf("%s after the flood: %v, %v", tok, id, err)
		}
	}
	if n := stub.hits.Load() - before; n != 0 {
		t.Errorf("%d introspections of valid tokens after a flood of made-up ones, want 0 (still cached)", n)
	}
	// The last 100 made-up tokens are cached, the first are not any more.
	before = stub.hits.Load()
	if _, err := v.VerifyToken(ctx, fmt.Sprintf("made-up-%d", flood-1)); !errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Error(err)
	}
	if _, err := v.VerifyToken(ctx, "made-up-0"); !errors.Is(err, toolgrain.ErrInvalidToken) {
		t.Error(err)
	}
	if n := stub.hits.Load() - before; n != 1 {
		t.Errorf("%d introspections for the last and the first made-up token, want 1 (the first, evicted)", n)
	}
	// A fourth valid token pushes the least recently used valid one out.
	if _, err := v.VerifyToken(ctx, "good-4"); err != nil {
		t.Fatal(err)
	}
	before = stub.hits.Load()
	if _, err := v.VerifyToken(ctx, "good-1"); err != nil {
		t.Fatal(err)
	}
	if n := stub.hits.Load() - before; n != 1 {
		t.Errorf("%d introspections for the evicted valid token, want 1", n)
	}
}
