package e2e_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// jwtIssuer is an issuer for auth.JWTVerifier on loopback: its metadata, one Ed25519 key, and
// tokens with whatever claims a test gives.
type jwtIssuer struct {
	ts   *httptest.Server
	priv ed25519.PrivateKey
}

func startJWTIssuer(t *testing.T) *jwtIssuer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := &jwtIssuer{priv: priv}
	mux := http.NewServeMux()
	iss.ts = httptest.NewServer(mux)
	t.Cleanup(iss.ts.Close)
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q}`, iss.ts.URL, iss.ts.URL+"/jwks")
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q,"kid":"k1","alg":"EdDSA","use":"sig"}]}`,
			base64.RawURLEncoding.EncodeToString(pub))
	})
	return iss
}

// token signs an access token for audience aud with the claims given (sub and client_id among
// them, or not).
func (iss *jwtIssuer) token(t *testing.T, aud string, claims jwt.MapClaims) string {
	t.Helper()
	now := time.Now()
	all := jwt.MapClaims{"iss": iss.ts.URL, "aud": aud, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "tools"}
	for k, v := range claims {
		all[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, all)
	tok.Header["kid"] = "k1"
	tok.Header["typ"] = "at+jwt"
	s, err := tok.SignedString(iss.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestClientIDIsNotASubject: a verifier takes a token's sub as its subject, and a
// client-credentials token's client_id when it has none; a client whose client_id is a user's
// sub is still not that user. With real JWTs checked by auth.JWTVerifier: the user alice (sub
// alice, through the client web-app) opens a session, starts a task and gets a requestState;
// the client alice, with a token without sub and with one whose sub is its client_id (as RFC
// 9068 has it), can use none of them (404, task not found, a state of another request), while
// the user's own tokens can.
func TestClientIDIsNotASubject(t *testing.T) {
	t.Parallel()
	iss := startJWTIssuer(t)
	v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: iss.ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	gate := tools.Tool{Name: "gate", TaskSupport: tools.TaskOptional,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			select {
			case <-release:
				return tools.TextResult("opened"), nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		})}
	e := startHTTP(t, toolgrain.Config{Tools: append(inputTools(), gate), HTTP: toolgrain.HTTPConfig{
		AllowedHosts: []string{"127.0.0.1"},
		Auth:         &toolgrain.AuthConfig{Verifier: v, Resource: "/mcp"}}})
	aud := e.URL
	user := iss.token(t, aud, jwt.MapClaims{"sub": "alice", "client_id": "web-app"})
	userAgain := iss.token(t, aud, jwt.MapClaims{"sub": "alice", "client_id": "web-app", "jti": "2"})
	clients := map[string]string{
		"client alice, no sub":         iss.token(t, aud, jwt.MapClaims{"client_id": "alice"}),
		"client alice, sub its own id": iss.token(t, aud, jwt.MapClaims{"sub": "alice", "client_id": "alice"}),
	}

	// The user's session, task and input round.
	s := e.Session()
	s.Token = user
	s.Initialize()
	tc := &taskConn{t: t, srv: e.srv, do: httpDo(t, &mcptest.Session{HTTP: e.HTTP, Token: user})}
	task := tc.start("gate", `{}`)
	caps := `{"elicitation":{}}`
	first := tc.request("tools/call", `"name":"ask","arguments":{"q":"x"}`, caps)
	state, _ := first.Result["requestState"].(string)
	if first.Result["resultType"] != "input_required" || state == "" {
		t.Fatalf("first round: %s", first.raw)
	}
	retry := `"name":"ask","arguments":{"q":"x"},"inputResponses":{"elicitation-1":{"action":"accept","content":{"a":1}}},"requestState":"` + state + `"`

	for name, tok := range clients {
		t.Run(name, func(t *testing.T) {
			c := &mcptest.Session{HTTP: e.HTTP, Token: tok, ID: s.ID, Version: s.Version}
			assertReply(t, "the user's session", c.Post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), http.StatusNotFound, errUnknown)
			other := &taskConn{t: t, srv: e.srv, do: httpDo(t, &mcptest.Session{HTTP: e.HTTP, Token: tok})}
			if got := other.get(task); got.Error == nil || !strings.Contains(got.raw, "Task not found") {
				t.Errorf("the user's task: %s", got.raw)
			}
			if got := other.request("tools/call", retry, caps); got.Error == nil || !strings.Contains(got.raw, "requestState belongs to another request") {
				t.Errorf("the user's requestState: %s", got.raw)
			}
		})
	}

	// The user, with another token, has all three.
	s.Token = userAgain
	s.Expect(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	again := &taskConn{t: t, srv: e.srv, do: httpDo(t, &mcptest.Session{HTTP: e.HTTP, Token: userAgain})}
	if got := again.get(task); got.Result["status"] != "working" {
		t.Errorf("the user's own task: %s", got.raw)
	}
	if got := again.request("tools/call", retry, caps); got.Result["resultType"] != "input_required" {
		t.Errorf("the user's own requestState: %s", got.raw)
	}
}

// TestTagSettingsFollowThePrincipal: a tag set for one identity is set for its principal, as
// sessions and tasks are bound: the client alice, whose client_id is the user alice's sub, does
// not get the user's settings (Server.DisableTagsFor and the like), nor the user the client's
// (Server.DisableTagsForClient and the like). With real JWTs checked by auth.JWTVerifier, in
// HTTP sessions and as 2026-07-28 requests: beta disabled for the user alice hides report from
// her alone, and base disabled for the client alice hides status from the client alone, with
// or without a sub. Each change tells list_changed exactly to the sessions (on their GET
// streams) and listen streams of the principal it is for; the last change, of a list no
// earlier one changed, reaches everyone, and what each got up to it is compared whole.
func TestTagSettingsFollowThePrincipal(t *testing.T) {
	t.Parallel()
	iss := startJWTIssuer(t)
	v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: iss.ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	e := startHTTP(t, toolgrain.Config{
		Tools: []tools.Tool{textTool("status", "ok", "base"), textTool("report", "reported", "beta")},
		Resources: []resources.Resource{
			{URI: "res://public", Name: "public", Tags: []string{"pub"}, Reader: resources.Static("text/plain", "x", nil)},
		},
		HTTP: toolgrain.HTTPConfig{AllowedHosts: []string{"127.0.0.1"},
			Auth: &toolgrain.AuthConfig{Verifier: v, Resource: "/mcp"}}})
	aud := e.URL
	tokens := []struct{ name, token string }{
		{"the user alice", iss.token(t, aud, jwt.MapClaims{"sub": "alice", "client_id": "web-app"})},
		{"the client alice, no sub", iss.token(t, aud, jwt.MapClaims{"client_id": "alice"})},
		{"the client alice, sub its own id", iss.token(t, aud, jwt.MapClaims{"sub": "alice", "client_id": "alice"})},
	}
	check := func(when string, want ...[]string) {
		t.Helper()
		for i, tok := range tokens {
			s := e.Session()
			s.Token = tok.token
			s.Initialize()
			legacy := listed(t, httpAnswer(s.Post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)), "tools", "name")
			m := e.Session()
			m.Token = tok.token
			modern := listed(t, httpAnswer(m.ModernPost(modernRequest("1", "tools/list", ""))), "tools", "name")
			if !slices.Equal(legacy, want[i]) || !slices.Equal(modern, want[i]) {
				t.Errorf("%s: %s sees %v in a session and %v as 2026-07-28 requests, want %v", when, tok.name, legacy, modern, want[i])
			}
		}
	}

	// Each token's session with its GET stream open, and its listen stream.
	var watchers []*watcher
	listen := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourcesListChanged":true},` + envelope(`{}`) + `}}`
	for _, tok := range tokens {
		s := e.Session()
		s.Token = tok.token
		s.Initialize()
		get := s.Open(http.MethodGet, "")
		watchers = append(watchers, &watcher{name: tok.name + "'s session", next: func() string {
			data, ok := get.Next()
			if !ok {
				t.Fatal("the GET stream ended")
			}
			return methodOf(t, data)
		}})
		ls := e.Session()
		ls.Token = tok.token
		l := ls.Open(http.MethodPost, listen, mcptest.ModernHeaders(t, listen)...)
		if got, _ := l.Next(); !strings.Contains(got, "notifications/subscriptions/acknowledged") {
			t.Fatalf("ack: %s", got)
		}
		watchers = append(watchers, &watcher{name: tok.name + "'s listen stream", next: func() string {
			data, ok := l.Next()
			if !ok {
				t.Fatal("the listen stream ended")
			}
			return methodOf(t, data)
		}})
	}
	const toolsChanged, resChanged = "notifications/tools/list_changed", "notifications/resources/list_changed"
	expect := map[string][]string{}
	expectFor := func(prefix string, methods ...string) {
		for _, w := range watchers {
			if strings.HasPrefix(w.name, prefix) {
				expect[w.name] = append(expect[w.name], methods...)
			}
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	both, onlyStatus, onlyReport := []string{"status", "report"}, []string{"status"}, []string{"report"}
	check("at start", both, both, both)
	must(e.srv.DisableTagsFor("alice", "beta"))
	expectFor("the user", toolsChanged)
	check("beta disabled for the user alice", onlyStatus, both, both)
	must(e.srv.DisableTagsForClient("alice", "base"))
	expectFor("the client", toolsChanged)
	check("and base for the client alice", onlyStatus, onlyReport, onlyReport)
	must(e.srv.EnableTagsForClient("alice", "beta")) // enabled for everyone: nobody's view changes
	must(e.srv.ResetTagsFor("alice", "base"))        // the user had no setting of base
	must(e.srv.ResetTagsFor("alice", "beta"))
	expectFor("the user", toolsChanged)
	check("beta reset for the user alice", both, onlyReport, onlyReport)
	must(e.srv.ResetTagsForClient("alice", "base"))
	expectFor("the client", toolsChanged)
	check("base reset for the client alice", both, both, both)
	must(e.srv.DisableTags("pub")) // the last, for everyone
	expectFor("", resChanged)

	for _, w := range watchers {
		var got []string
		for range expect[w.name] {
			got = append(got, w.next())
		}
		if !slices.Equal(got, expect[w.name]) {
			t.Errorf("%s was told %v, want %v", w.name, got, expect[w.name])
		}
	}
	if err := e.srv.DisableTagsForClient("", "beta"); err == nil {
		t.Error("DisableTagsForClient without a client id")
	}
}
