package e2e_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// Tags changed while the server runs: each change tells list_changed to exactly the connections
// and listen streams whose view of that list changed.

// changesConfig serves the tools status (base), deploy (ops) and report (beta), the resources
// res://opsdoc (ops) and res://public (pub) and the prompt runbook (ops), with the rule that ops needs the scope admin.
// HTTP sessions passivate at once when idle, so that notifications reach them from their
// records as well as from their actors.
func changesConfig() toolgrain.Config {
	handler := prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
		return &prompts.GetResult{}, nil
	})
	return toolgrain.Config{
		Tools: []tools.Tool{textTool("status", "ok", "base"), textTool("deploy", "deployed", "ops"), textTool("report", "reported", "beta")},
		Resources: []resources.Resource{
			{URI: "res://opsdoc", Name: "opsdoc", Tags: []string{"ops"}, Reader: resources.Static("text/plain", "x", nil)},
			{URI: "res://public", Name: "public", Tags: []string{"pub"}, Reader: resources.Static("text/plain", "x", nil)},
		},
		Prompts: []prompts.Prompt{{Name: "runbook", Tags: []string{"ops"}, Handler: handler}},
		Visibility: visibility.Config{Rules: []visibility.Rule{
			{Tags: []string{"ops"}, Scopes: []string{"admin"}},
		}},
		HTTP: toolgrain.HTTPConfig{
			AllowedHosts:   []string{"127.0.0.1"},
			Auth:           &toolgrain.AuthConfig{Verifier: visVerifier, Resource: "/mcp"},
			PassivateAfter: time.Millisecond,
		},
	}
}

// watcher is a client that receives notifications: next returns the method of the next one.
type watcher struct {
	name string
	next func() string
}

// methodOf returns the method of a notification frame.
func methodOf(t *testing.T, frame string) string {
	t.Helper()
	m, _ := jsonOf(t, frame)["method"].(string)
	if m == "" {
		t.Fatalf("not a notification: %s", frame)
	}
	return m
}

// TestTagChangesReachExactlyTheAffected: alice (scope mcp), bob (scopes mcp and admin) and an
// anonymous stdio client, each over stdio, in memory and in an HTTP session with its GET stream
// open, and alice and bob with listen streams over stdio and HTTP. Each change of the tags
// must reach exactly those whose view changed, each list once; a change that changes nobody's
// view reaches nobody. The last change reaches every client, with a list no earlier change
// told anyone of, and what each gets up to and including it is compared whole: anything sent
// to the wrong client would be there, in place of what it should get.
func TestTagChangesReachExactlyTheAffected(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, changesConfig())
	var watchers []*watcher
	expect := map[string][]string{}
	add := func(name string, next func() string) { watchers = append(watchers, &watcher{name: name, next: next}) }

	for _, who := range []struct {
		name  string
		id    *toolgrain.Identity
		token string
	}{{"alice", alice, "alice"}, {"bob", bob, "bob"}, {"anonymous", nil, ""}} {
		c := attachAs(t, e.srv, who.id)
		c.Initialize()
		add(who.name+" over stdio", func() string { return methodOf(t, c.Recv()) })
		if who.id == nil {
			continue
		}
		m, err := e.srv.ConnectInMemoryAs(who.id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
		t.Cleanup(cancel)
		if _, err := m.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		add(who.name+" in memory", func() string {
			b, err := m.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return methodOf(t, string(b))
		})
		s := e.Session()
		s.Token = who.token
		s.Initialize()
		get := s.Open(http.MethodGet, "")
		add(who.name+"'s HTTP session", func() string {
			data, ok := get.Next()
			if !ok {
				t.Fatal("the GET stream ended")
			}
			return methodOf(t, data)
		})
		listen := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourcesListChanged":true,"promptsListChanged":true},` + envelope(`{}`) + `}}`
		l := attachAs(t, e.srv, who.id)
		l.Send(listen)
		if got := l.Recv(); !strings.Contains(got, "notifications/subscriptions/acknowledged") {
			t.Fatalf("ack: %s", got)
		}
		add(who.name+"'s listen stream over stdio", func() string { return methodOf(t, l.Recv()) })
		hs := e.Session()
		hs.Token = who.token
		hl := hs.Open(http.MethodPost, listen, mcptest.ModernHeaders(t, listen)...)
		if got, _ := hl.Next(); !strings.Contains(got, "notifications/subscriptions/acknowledged") {
			t.Fatalf("HTTP ack: %s", got)
		}
		add(who.name+"'s listen stream over HTTP", func() string {
			data, ok := hl.Next()
			if !ok {
				t.Fatal("the listen stream ended")
			}
			return methodOf(t, data)
		})
	}
	const (
		tools  = "notifications/tools/list_changed"
		res    = "notifications/resources/list_changed"
		prompt = "notifications/prompts/list_changed"
	)
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

	must(e.srv.DisableTagsFor("bob", "beta")) // bob no longer sees report
	expectFor("bob", tools)
	must(e.srv.DisableTags("ops")) // bob no longer sees deploy, res://opsdoc, runbook; alice never did
	expectFor("bob", tools, res, prompt)
	must(e.srv.EnableTagsFor("alice", "beta")) // beta is enabled for everyone: no view changes
	must(e.srv.DisableTags("nosuchtag"))       // no component has it
	must(e.srv.DisableTags("ops"))             // already so
	must(e.srv.ResetTagsFor("bob", "beta"))    // bob sees report again
	expectFor("bob", tools)
	must(e.srv.DisableTags("base")) // nobody sees status: everyone's tools change
	expectFor("", tools)
	must(e.srv.DisableTags("pub")) // nobody sees res://public: the last, for everyone
	expectFor("", res)

	for _, w := range watchers {
		var got []string
		for range expect[w.name] {
			got = append(got, w.next())
		}
		if !slices.Equal(got, expect[w.name]) {
			t.Errorf("%s was told %v, want %v", w.name, got, expect[w.name])
		}
	}

	// The lists are what the notifications said.
	for _, tc := range []struct {
		id   *toolgrain.Identity
		want []string
	}{{alice, []string{"report"}}, {bob, []string{"report"}}, {nil, []string{"report"}}} {
		c := attachAs(t, e.srv, tc.id)
		c.Initialize()
		c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if got := listed(t, c.Recv(), "tools", "name"); !slices.Equal(got, tc.want) {
			t.Errorf("tools of %v: %v, want %v", tc.id, got, tc.want)
		}
	}
	if err := e.srv.EnableTagsFor("", "x"); err == nil {
		t.Error("EnableTagsFor without a subject")
	}
	if err := e.srv.DisableTags("a b"); err == nil || !strings.Contains(err.Error(), `tag "a b"`) {
		t.Errorf("a bad tag: %v", err)
	}
}
