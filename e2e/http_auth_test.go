package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

// errIdPOutage stands for an identity provider that is down; its text must reach the operator
// only.
var errIdPOutage = errors.New("introspection endpoint unreachable: " + demo.Marker)

// testVerifier knows a few tokens and fails in every unexpected way on request.
var testVerifier = toolgrain.TokenVerifierFunc(func(ctx context.Context, token string) (*toolgrain.Identity, error) {
	switch token {
	case "alice-token":
		return &toolgrain.Identity{Subject: "user-alice", Scopes: []string{"tools:call", "extra"}}, nil
	case "bob-token":
		return &toolgrain.Identity{Subject: "user-bob", Scopes: []string{"tools:call"}}, nil
	case "narrow-token":
		return &toolgrain.Identity{Subject: "carol", Scopes: []string{"read"}}, nil
	case "outage":
		return nil, errIdPOutage
	case "panic":
		panic("verifier bug: " + demo.Marker)
	case "nothing":
		return nil, nil
	}
	return nil, fmt.Errorf("unknown or expired token: %w", toolgrain.ErrInvalidToken)
})

func authConfig(rec *mcptest.Recorder, log *zap.Logger) toolgrain.Config {
	whoami := tools.Tool{Name: "whoami", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		id := tools.IdentityFromContext(ctx)
		if id == nil {
			return tools.TextResult("anonymous"), nil
		}
		return tools.TextResult(id.Subject + " " + strings.Join(id.Scopes, ",")), nil
	})}
	boom := tools.Tool{Name: "boom", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		return nil, errors.New("boom: " + demo.Marker)
	})}
	return toolgrain.Config{
		Tools:   []tools.Tool{whoami, boom},
		OnError: rec.OnError,
		Logger:  log,
		HTTP: toolgrain.HTTPConfig{
			// The endpoint's URI takes the loopback name and port of each request.
			AllowedHosts: []string{"127.0.0.1"},
			Auth: &toolgrain.AuthConfig{
				Verifier:             testVerifier,
				Scopes:               []string{"tools:call"},
				Resource:             "/mcp",
				AuthorizationServers: []string{"https://auth.example.com"},
			}},
	}
}

// TestHTTPAuthRows asserts the exact answer to every row of bearer auth, and what onError gets.
func TestHTTPAuthRows(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	e := startHTTP(t, authConfig(rec, nil))
	metadata := e.ts.URL + "/.well-known/oauth-protected-resource/mcp"
	challenge := `Bearer resource_metadata="` + metadata + `", scope="tools:call"`
	tests := []struct {
		name      string
		auth      string // the Authorization header; "" sends none
		status    int
		challenge string // WWW-Authenticate
		body      string
	}{
		{"missing token", "", 401, challenge,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: authentication required"}}`},
		{"other scheme", "Basic YWxpY2U6c2VjcmV0", 401, challenge,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: authentication required"}}`},
		{"rejected token", "Bearer expired-token", 401, challenge + `, error="invalid_token", error_description="the access token is invalid or expired"`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: the access token is invalid or expired"}}`},
		{"insufficient scope", "Bearer narrow-token", 403, challenge + `, error="insufficient_scope", error_description="the access token lacks a required scope"`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Forbidden: the access token lacks a required scope"}}`},
		{"verifier outage", "Bearer outage", 503, "",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: authentication is temporarily unavailable"}}`},
		{"verifier panic", "Bearer panic", 503, "",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: authentication is temporarily unavailable"}}`},
		{"verifier returns nothing", "Bearer nothing", 503, "",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: authentication is temporarily unavailable"}}`},
		{"valid token", "bearer alice-token", 200, "", initResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Session().Post(mcptest.InitRequest, "Authorization", tt.auth)
			assertReply(t, tt.name, r, tt.status, tt.body)
			if got := r.Header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate\n got: %s\nwant: %s", got, tt.challenge)
			}
			if tt.status == 503 && r.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			for k, v := range r.Header {
				if strings.Contains(strings.Join(v, " "), demo.Marker) {
					t.Errorf("header %s leaks the internal error: %s", k, v)
				}
			}
		})
	}

	// GET and DELETE are authenticated too.
	c := e.Session()
	c.Token = "alice-token"
	c.Initialize()
	c.Token = ""
	assertReply(t, "DELETE without a token", c.Do(http.MethodDelete, ""), 401,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: authentication required"}}`)
	assertReply(t, "GET without a token", c.Do(http.MethodGet, "", "Accept", "text/event-stream"), 401,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: authentication required"}}`)

	// Exactly the three unexpected failures were reported, each with the original error and no
	// details; the rejections and the missing scope were not.
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil { // flushes the reports
		t.Fatal(err)
	}
	got := rec.Snapshot()
	if len(got) != 3 {
		t.Fatalf("%d reports, want 3: %v", len(got), got)
	}
	if got[0].Err != errIdPOutage || got[0].Details != nil {
		t.Errorf("outage report = (%v, %v), want the original error and nil details", got[0].Err, got[0].Details)
	}
	var pe *toolgrain.VerifierPanicError
	if !errors.As(got[1].Err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), demo.Marker) || len(pe.Stack) == 0 || got[1].Details != nil {
		t.Errorf("panic report = (%v, %v), want a *VerifierPanicError with its stack and nil details", got[1].Err, got[1].Details)
	}
	if !strings.Contains(got[2].Err.Error(), "neither an identity nor an error") || got[2].Details != nil {
		t.Errorf("third report = (%v, %v)", got[2].Err, got[2].Details)
	}
}

func TestHTTPResourceMetadata(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, authConfig(mcptest.NewRecorder(), nil))
	want := `{"resource":"` + e.ts.URL + `/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["tools:call"],"bearer_methods_supported":["header"]}`
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := e.Client.Get(e.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || string(b) != want {
			t.Errorf("GET %s: %d %q %s\nwant %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b, want)
		}
	}

	// Without auth there is no metadata.
	plain := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	resp, err := plain.Client.Get(plain.ts.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("metadata without auth: %d", resp.StatusCode)
	}
}

// TestHTTPIdentity: the verified identity reaches the handler's context; sessions are bound to
// their subject; neither the identity nor the token appears in diagnostics or logs.
func TestHTTPIdentity(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	core, logs := observer.New(zapcore.DebugLevel)
	e := startHTTP(t, authConfig(rec, zap.New(core)))
	alice := e.Session()
	alice.Token = "alice-token"
	alice.Initialize()
	alice.Expect(call("1", "whoami", `{}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"user-alice tools:call,extra"}]}}`)
	alice.Expect(call("2", "boom", `{}`), `{"jsonrpc":"2.0","id":2,"result":`+failedResult+`}`)

	// Another valid subject cannot use alice's session.
	bob := e.Session()
	bob.Token, bob.ID, bob.Version = "bob-token", alice.ID, alice.Version
	assertReply(t, "bob on alice's session", bob.Post(call("3", "whoami", `{}`)), http.StatusNotFound, errUnknown)
	bob.ID = ""
	bob.Initialize()
	bob.Expect(call("4", "whoami", `{}`), `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"user-bob tools:call"}]}}`)

	r := rec.Wait(t, 1)[0]
	if !strings.Contains(r.Err.Error(), demo.Marker) || r.Details.ToolName() != "boom" {
		t.Fatalf("report = (%v, tool %q)", r.Err, r.Details.ToolName())
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	dump := fmt.Sprintf("%v %+v %#v %#v", r.Err, r.Details, r.Details, r.Details.Request())
	for _, entry := range logs.All() {
		dump += fmt.Sprintf(" %s %v", entry.Message, entry.ContextMap())
	}
	for _, secret := range []string{"user-alice", "alice-token", "user-bob", "bob-token", "tools:call"} {
		if strings.Contains(dump, secret) {
			t.Errorf("diagnostics or logs contain %q: %s", secret, dump)
		}
	}
}

// TestHTTPVerifierTimeout: a verifier that does not answer within VerifyTimeout is an unexpected
// failure (503), reported with the context's error.
func TestHTTPVerifierTimeout(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	stuck := toolgrain.TokenVerifierFunc(func(ctx context.Context, token string) (*toolgrain.Identity, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("introspection: %w", ctx.Err())
	})
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError,
		HTTP: toolgrain.HTTPConfig{AllowedHosts: []string{"127.0.0.1"}, Auth: &toolgrain.AuthConfig{Verifier: stuck, VerifyTimeout: 50 * time.Millisecond}}})
	c := e.Session()
	c.Token = "any"
	assertReply(t, "stuck verifier", c.Post(mcptest.InitRequest), http.StatusServiceUnavailable,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: authentication is temporarily unavailable"}}`)
	if r := rec.Wait(t, 1)[0]; !errors.Is(r.Err, context.DeadlineExceeded) || r.Details != nil {
		t.Errorf("report = (%v, %v), want the deadline and nil details", r.Err, r.Details)
	}
}

func TestHTTPAuthConfigErrors(t *testing.T) {
	t.Parallel()
	_, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{Auth: &toolgrain.AuthConfig{}}})
	if err == nil || !strings.Contains(err.Error(), "Verifier is nil") {
		t.Errorf("NewServer with an Auth without Verifier = %v", err)
	}
}
