package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// Visibility that follows identity: the tests below run the same questions as two identities,
// alice (scope mcp) and bob (scopes mcp and admin), over every transport (stdio, in memory,
// Streamable HTTP) in both eras (a legacy session, modern requests), against a server whose
// components tagged ops are visible only to identities with the scope admin. What alice cannot
// see must answer her exactly as what nobody serves: each hidden name is compared with an unknown
// one of the same length, so that the whole answers (HTTP status and headers included) must be
// equal once the name is replaced.

var (
	alice = &toolgrain.Identity{Subject: "alice", Scopes: []string{"mcp"}}
	bob   = &toolgrain.Identity{Subject: "bob", Scopes: []string{"mcp", "admin"}}
)

var visVerifier = toolgrain.TokenVerifierFunc(func(_ context.Context, token string) (*toolgrain.Identity, error) {
	switch token {
	case "alice":
		return alice, nil
	case "bob":
		return bob, nil
	}
	return nil, toolgrain.ErrInvalidToken
})

func textTool(name, text string, tags ...string) tools.Tool {
	return tools.Tool{Name: name, Description: name, Tags: tags,
		Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
			return tools.TextResult(text), nil
		})}
}

// visConfig serves, with the rule that ops needs the scope admin:
//   - the tools status (no tags), deploy (ops; it mirrors its region argument in an
//     Mcp-Param-Region header, which must not be checked for a caller who cannot see it) and
//     report (beta);
//   - the resources res://status, res://opsdoc (ops) and docs://secret (ops), and the templates
//     docs://{name} and logs://{day} (ops), both with completions: docs://secret is served to
//     who cannot see it by docs://{name}, and logs://today only by a template alice cannot see;
//   - the prompts hello and runbook (ops), whose argument service completes.
func visConfig() toolgrain.Config {
	deploy := textTool("deploy", "deployed", "ops")
	deploy.InputSchema = json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
	complete := func(_ context.Context, value string, _ map[string]string) ([]string, error) {
		return []string{value + "-1", value + "-2"}, nil
	}
	text := func(s string) resources.Reader {
		return resources.ReaderFunc(func(_ context.Context, req *resources.ReadRequest) (*resources.ReadResult, error) {
			return resources.Text(req.URI, "text/plain", s+" "+req.Vars["name"]+req.Vars["day"]), nil
		})
	}
	prompt := func(name string, tags ...string) prompts.Prompt {
		return prompts.Prompt{Name: name, Description: name, Tags: tags,
			Arguments: []prompts.Argument{{Name: "service", Complete: prompts.CompleteFunc(complete)}},
			Handler: prompts.HandlerFunc(func(_ context.Context, req *prompts.GetRequest) (*prompts.GetResult, error) {
				return &prompts.GetResult{Messages: []protocol.PromptMessage{prompts.Text(protocol.RoleUser, name)}}, nil
			})}
	}
	return toolgrain.Config{
		Tools: []tools.Tool{textTool("status", "ok"), deploy, textTool("report", "reported", "beta")},
		Resources: []resources.Resource{
			{URI: "res://status", Name: "status", Reader: text("status")},
			{URI: "res://opsdoc", Name: "opsdoc", Tags: []string{"ops"}, Reader: text("opsdoc")},
			{URI: "docs://secret", Name: "secret", Tags: []string{"ops"}, Reader: text("the secret")},
		},
		ResourceTemplates: []resources.Template{
			{URITemplate: "docs://{name}", Name: "docs", Reader: text("doc"), Complete: map[string]resources.CompleteFunc{"name": complete}},
			{URITemplate: "logs://{day}", Name: "logs", Tags: []string{"ops"}, Reader: text("log"), Complete: map[string]resources.CompleteFunc{"day": complete}},
		},
		Prompts: []prompts.Prompt{prompt("hello"), prompt("runbook", "ops")},
		Visibility: visibility.Config{Rules: []visibility.Rule{
			{Tags: []string{"ops"}, Scopes: []string{"admin"}},
		}},
		HTTP: toolgrain.HTTPConfig{
			AllowedHosts: []string{"127.0.0.1"},
			Auth:         &toolgrain.AuthConfig{Verifier: visVerifier, Resource: "/mcp"},
		},
	}
}

// asker sends one request and returns its whole answer: the JSON-RPC message, preceded over
// HTTP by the status and the headers (see httpAnswer).
type asker func(req string) string

// visTransport opens, for one identity, a client over one transport in one era.
type visTransport struct {
	name   string
	modern bool
	open   func(t *testing.T, e *httpEnv, id *toolgrain.Identity, token string) asker
}

var visTransports = []visTransport{
	{"stdio, legacy", false, openStdio(true)},
	{"stdio, modern", true, openStdio(false)},
	{"in memory, legacy", false, openMemory(true)},
	{"in memory, modern", true, openMemory(false)},
	{"HTTP, legacy session", false, func(t *testing.T, e *httpEnv, _ *toolgrain.Identity, token string) asker {
		s := e.Session()
		s.Token = token
		s.Initialize()
		return func(req string) string { return httpAnswer(s.Post(req)) }
	}},
	{"HTTP, modern", true, func(t *testing.T, e *httpEnv, _ *toolgrain.Identity, token string) asker {
		s := e.Session()
		s.Token = token
		return func(req string) string { return httpAnswer(s.ModernPost(req)) }
	}},
}

func openStdio(initialize bool) func(*testing.T, *httpEnv, *toolgrain.Identity, string) asker {
	return func(t *testing.T, e *httpEnv, id *toolgrain.Identity, _ string) asker {
		c := attachAs(t, e.srv, id)
		if initialize {
			c.Initialize()
		}
		return func(req string) string { c.Send(req); return c.Recv() }
	}
}

func openMemory(initialize bool) func(*testing.T, *httpEnv, *toolgrain.Identity, string) asker {
	return func(t *testing.T, e *httpEnv, id *toolgrain.Identity, _ string) asker {
		c, err := e.srv.ConnectInMemoryAs(id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
		t.Cleanup(cancel)
		if initialize {
			if _, err := c.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return func(req string) string {
			if err := c.Send([]byte(req)); err != nil {
				t.Fatal(err)
			}
			b, err := c.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}

// rpc is a request in the era of tr: params is the members of its params object ("" for none),
// to which a modern request adds its envelope.
func (tr *visTransport) rpc(id, method, params string) string {
	if tr.modern {
		return modernRequest(id, method, params)
	}
	if params == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q}`, id, method)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{%s}}`, id, method, params)
}

// jsonOf returns the JSON-RPC message of an answer (after the HTTP status and headers, if any).
func jsonOf(t *testing.T, answer string) map[string]any {
	t.Helper()
	i := strings.Index(answer, "{")
	if i < 0 {
		t.Fatalf("no JSON in %q", answer)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(answer[i:]), &m); err != nil {
		t.Fatalf("answer %q: %v", answer, err)
	}
	return m
}

// listed returns the value of member key of each entry of the list member of an answer's
// result.
func listed(t *testing.T, answer, list, key string) []string {
	t.Helper()
	res, ok := jsonOf(t, answer)["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %s", answer)
	}
	var out []string
	entries, _ := res[list].([]any)
	for _, e := range entries {
		out = append(out, e.(map[string]any)[key].(string))
	}
	return out
}

// sameAs fails unless hidden, once the hidden name is replaced by the unknown one, is unknown.
func sameAs(t *testing.T, what, hidden, hiddenName, unknown, unknownName string) {
	t.Helper()
	if len(hiddenName) != len(unknownName) {
		t.Fatalf("%s: names of different lengths", what)
	}
	if got := strings.ReplaceAll(hidden, hiddenName, unknownName); got != unknown {
		t.Errorf("%s: %s answers differently from %s, which nothing serves\nhidden:  %s\nunknown: %s", what, hiddenName, unknownName, hidden, unknown)
	}
}

// TestVisibleToolsFollowIdentity: alice does not see the tool tagged ops, bob does; alice's call
// of it is answered exactly as a call of a tool nobody serves, and bob's runs.
func TestVisibleToolsFollowIdentity(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, visConfig())
	for _, tr := range visTransports {
		t.Run(tr.name, func(t *testing.T) {
			a, b := tr.open(t, e, alice, "alice"), tr.open(t, e, bob, "bob")
			if got, want := listed(t, a(tr.rpc("1", "tools/list", "")), "tools", "name"), []string{"status", "report"}; !slices.Equal(got, want) {
				t.Errorf("alice's tools: %v, want %v", got, want)
			}
			if got, want := listed(t, b(tr.rpc("1", "tools/list", "")), "tools", "name"), []string{"status", "deploy", "report"}; !slices.Equal(got, want) {
				t.Errorf("bob's tools: %v, want %v", got, want)
			}
			for _, args := range []string{`{}`, `{"region":"eu"}`} {
				call := func(name string) string {
					return tr.rpc("2", "tools/call", `"name":"`+name+`","arguments":`+args)
				}
				unknown := a(call("absent"))
				if !strings.Contains(unknown, `unknown tool \"absent\"`) {
					t.Fatalf("the unknown tool: %s", unknown)
				}
				sameAs(t, "alice's call "+args, a(call("deploy")), "deploy", unknown, "absent")
			}
			if got := b(tr.rpc("3", "tools/call", `"name":"deploy","arguments":{}`)); !strings.Contains(got, `"text":"deployed"`) {
				t.Errorf("bob's call: %s", got)
			}
		})
	}
}

// TestVisibleComponentsFollowIdentity: resources, templates and prompts follow the rules as
// tools do. Alice's lists leave out what is tagged ops and bob's do not; alice's read of a
// resource she cannot see, or of a URI only a template she cannot see serves, her get of a
// prompt she cannot see and her completions of an argument of either answer exactly as those of
// what nobody serves; a URI served by a resource she cannot see and a template she can is read
// from the template, as if the resource did not exist; bob's reads, gets and completions run.
func TestVisibleComponentsFollowIdentity(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, visConfig())
	for _, tr := range visTransports {
		t.Run(tr.name, func(t *testing.T) {
			a, b := tr.open(t, e, alice, "alice"), tr.open(t, e, bob, "bob")
			for _, l := range []struct{ method, list, key, alice, bob string }{
				{"resources/list", "resources", "uri", "res://status", "res://status res://opsdoc docs://secret"},
				{"resources/templates/list", "resourceTemplates", "uriTemplate", "docs://{name}", "docs://{name} logs://{day}"},
				{"prompts/list", "prompts", "name", "hello", "hello runbook"},
			} {
				if got := strings.Join(listed(t, a(tr.rpc("1", l.method, "")), l.list, l.key), " "); got != l.alice {
					t.Errorf("alice's %s: %s, want %s", l.list, got, l.alice)
				}
				if got := strings.Join(listed(t, b(tr.rpc("1", l.method, "")), l.list, l.key), " "); got != l.bob {
					t.Errorf("bob's %s: %s, want %s", l.list, got, l.bob)
				}
			}
			for _, c := range []struct{ what, method, params, hidden, unknown, bob string }{
				{"read of a resource", "resources/read", `"uri":"%s"`, "res://opsdoc", "res://absent", `"text":"opsdoc "`},
				{"read of a URI only a hidden template serves", "resources/read", `"uri":"%s"`, "logs://today", "lugs://today", `"text":"log today"`},
				{"get of a prompt", "prompts/get", `"name":"%s","arguments":{"service":"web"}`, "runbook", "nothing", `"text":"runbook"`},
				{"completion of a prompt's argument", "completion/complete", `"ref":{"type":"ref/prompt","name":"%s"},"argument":{"name":"service","value":"w"}`, "runbook", "nothing", `"values":["w-1","w-2"]`},
				{"completion of a template's variable", "completion/complete", `"ref":{"type":"ref/resource","uri":"%s"},"argument":{"name":"day","value":"m"}`, "logs://{day}", "lugs://{day}", `"values":["m-1","m-2"]`},
				{"completion of a resource", "completion/complete", `"ref":{"type":"ref/resource","uri":"%s"},"argument":{"name":"day","value":"m"}`, "res://opsdoc", "res://absent", `resource \"res://opsdoc\" has no argument`},
			} {
				hidden := a(tr.rpc("2", c.method, fmt.Sprintf(c.params, c.hidden)))
				unknown := a(tr.rpc("2", c.method, fmt.Sprintf(c.params, c.unknown)))
				if !strings.Contains(unknown, `"error"`) {
					t.Fatalf("%s, unknown: %s", c.what, unknown)
				}
				sameAs(t, "alice's "+c.what, hidden, c.hidden, unknown, c.unknown)
				if got := b(tr.rpc("3", c.method, fmt.Sprintf(c.params, c.hidden))); !strings.Contains(got, c.bob) {
					t.Errorf("bob's %s: %s, want %s in it", c.what, got, c.bob)
				}
			}
			if got := a(tr.rpc("4", "resources/read", `"uri":"docs://secret"`)); !strings.Contains(got, `"text":"doc secret"`) {
				t.Errorf("alice's read of docs://secret: %s", got)
			}
			if got := b(tr.rpc("4", "resources/read", `"uri":"docs://secret"`)); !strings.Contains(got, `"text":"the secret "`) {
				t.Errorf("bob's read of docs://secret: %s", got)
			}
		})
	}
}

// TestHiddenResourceUpdates: a subscription to a URI only components a caller cannot see serve
// is accepted as one to a URI nothing serves (resources/subscribe answers alike), and its
// updates are not told to that caller: not on a legacy session's notification path, not on a
// modern listen stream; the caller who sees the resource is told.
func TestHiddenResourceUpdates(t *testing.T) {
	t.Parallel()
	srv, err := toolgrain.NewServer(visConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	session := func(id *toolgrain.Identity) *stdioClient {
		c := attachAs(t, srv, id)
		c.Initialize()
		return c
	}
	sa, sb := session(alice), session(bob)
	hidden := `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"logs://today"}}`
	unknown := `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"lugs://today"}}`
	sa.Send(hidden)
	h := sa.Recv()
	sa.Send(unknown)
	sameAs(t, "alice's subscription", h, "logs://today", sa.Recv(), "lugs://today")
	sb.Expect(hidden, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	listen := func(id *toolgrain.Identity) *stdioClient {
		c := attachAs(t, srv, id)
		c.Send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["logs://today","lugs://today"]},` + envelope(`{}`) + `}}`)
		if got := c.Recv(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged"`) {
			t.Fatalf("ack: %s", got)
		}
		return c
	}
	la, lb := listen(alice), listen(bob)
	srv.NotifyResourceUpdated("logs://today")
	srv.NotifyResourceUpdated("lugs://today") // nothing serves it: told to every subscriber, as always
	if got := sb.Recv(); got != `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"logs://today"}}` {
		t.Errorf("bob's session: %s", got)
	}
	if got := lb.Recv(); !strings.Contains(got, `"uri":"logs://today"`) {
		t.Errorf("bob's listen stream: %s", got)
	}
	// Alice would have been told before the next answer, on the same path.
	if got := sa.Recv(); !strings.Contains(got, `"uri":"lugs://today"`) {
		t.Errorf("alice's session was told of the hidden resource: %s", got)
	}
	if got := la.Recv(); !strings.Contains(got, `"uri":"lugs://today"`) {
		t.Errorf("alice's listen stream was told of the hidden resource: %s", got)
	}
	for _, c := range []*stdioClient{la, lb} {
		c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	}
}

// TestVisibilityRules: rules by scope, by claim (Identity.Claims, and a claim source in Extra),
// and by predicate (with and without a key) each decide, every rule that applies to a component
// must let the caller see it, a rule without tags applies to every component, and tags
// disabled at start hide their components from everyone.
func TestVisibilityRules(t *testing.T) {
	t.Parallel()
	var calls int
	cfg := toolgrain.Config{
		Tools: []tools.Tool{
			textTool("plain", "p"),
			textTool("ops", "o", "ops"),
			textTool("finance", "f", "finance"),
			textTool("tenant-a", "a", "tenant"),
			textTool("both", "b", "ops", "finance"),
			textTool("draft", "d", "draft"),
			textTool("beta", "b", "beta"),
		},
		Visibility: visibility.Config{
			Rules: []visibility.Rule{
				{Tags: []string{"ops"}, Scopes: []string{"admin"}},
				{Tags: []string{"finance"}, Claim: "roles", Values: []string{"accountant", "auditor"}},
				{Tags: []string{"tenant"}, Visible: func(id *tools.Identity, c visibility.Component) bool {
					calls++
					return id != nil && strings.HasSuffix(c.Name, "-"+id.Subject)
				}},
				{Tags: []string{"draft"}, Visible: func(id *tools.Identity, _ visibility.Component) bool {
					return id != nil && id.Subject == "a"
				}, Key: func(id *tools.Identity) string {
					if id == nil {
						return ""
					}
					return id.Subject
				}},
			},
			Disabled: []string{"beta"},
		},
	}
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	list := func(id *toolgrain.Identity) []string {
		t.Helper()
		c, err := srv.ConnectInMemoryAs(id)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
		defer cancel()
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		ts, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range ts {
			names = append(names, tool.Name)
		}
		return names
	}
	for _, tc := range []struct {
		who  string
		id   *toolgrain.Identity
		want []string
	}{
		{"no identity", nil, []string{"plain"}},
		{"a, no scope, no role", &toolgrain.Identity{Subject: "a"}, []string{"plain", "tenant-a", "draft"}},
		{"admin", &toolgrain.Identity{Subject: "x", Scopes: []string{"admin"}}, []string{"plain", "ops"}},
		{"accountant (Claims)", &toolgrain.Identity{Subject: "x", Claims: map[string][]string{"roles": {"accountant"}}}, []string{"plain", "finance"}},
		{"auditor (Extra)", &toolgrain.Identity{Subject: "x", Extra: claimSource{"roles": {"viewer", "auditor"}}}, []string{"plain", "finance"}},
		{"admin and auditor", &toolgrain.Identity{Subject: "x", Scopes: []string{"admin"}, Claims: map[string][]string{"roles": {"auditor"}}},
			[]string{"plain", "ops", "finance", "both"}},
	} {
		if got := list(tc.id); !slices.Equal(got, tc.want) {
			t.Errorf("%s sees %v, want %v", tc.who, got, tc.want)
		}
	}
	if calls == 0 {
		t.Error("the predicate was never asked")
	}
}

// claimSource is an Identity.Extra that gives claims, as package auth's do.
type claimSource map[string][]string

func (c claimSource) Claim(name string) []string { return c[name] }

// TestVisibilityConfigErrors: NewServer refuses rules it cannot apply and tags it cannot carry.
func TestVisibilityConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  toolgrain.Config
		want string
	}{
		{"rule without condition", toolgrain.Config{Visibility: visibility.Config{Rules: []visibility.Rule{{Tags: []string{"a"}}}}}, "no condition"},
		{"claim without values", toolgrain.Config{Visibility: visibility.Config{Rules: []visibility.Rule{{Claim: "roles"}}}}, "without Values"},
		{"values without claim", toolgrain.Config{Visibility: visibility.Config{Rules: []visibility.Rule{{Values: []string{"x"}, Scopes: []string{"s"}}}}}, "Values without a Claim"},
		{"key without predicate", toolgrain.Config{Visibility: visibility.Config{Rules: []visibility.Rule{{Scopes: []string{"s"}, Key: func(*tools.Identity) string { return "" }}}}}, "Key without Visible"},
		{"bad scope", toolgrain.Config{Visibility: visibility.Config{Rules: []visibility.Rule{{Scopes: []string{"two words"}}}}}, "scope token"},
		{"bad rule tag", toolgrain.Config{Visibility: visibility.Config{Rules: []visibility.Rule{{Tags: []string{"a,b"}, Scopes: []string{"s"}}}}}, `tag "a,b"`},
		{"bad disabled tag", toolgrain.Config{Visibility: visibility.Config{Disabled: []string{"a b"}}}, `tag "a b"`},
		{"bad tool tag", toolgrain.Config{Tools: []tools.Tool{textTool("x", "x", "has/slash")}}, `tool "x": tag "has/slash"`},
		{"empty tool tag", toolgrain.Config{Tools: []tools.Tool{textTool("x", "x", "")}}, `tool "x": tag "": empty`},
		{"long tool tag", toolgrain.Config{Tools: []tools.Tool{textTool("x", "x", strings.Repeat("t", 65))}}, "longer than 64"},
	} {
		_, err := toolgrain.NewServer(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestTagsListed: a component's tags are listed in its _meta, sorted and without duplicates; a
// component without tags has no _meta.
func TestTagsListed(t *testing.T) {
	t.Parallel()
	reader := resources.Static("text/plain", "x", nil)
	handler := prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
		return &prompts.GetResult{}, nil
	})
	c := startStdio(t, toolgrain.Config{
		Tools:             []tools.Tool{textTool("a", "a", "z", "b", "z"), textTool("b", "b")},
		Resources:         []resources.Resource{{URI: "r://a", Name: "a", Tags: []string{"t"}, Reader: reader}},
		ResourceTemplates: []resources.Template{{URITemplate: "r://{x}", Name: "x", Tags: []string{"u", "t"}, Reader: reader}},
		Prompts:           []prompts.Prompt{{Name: "p", Tags: []string{"v"}, Handler: handler}},
	})
	c.Initialize()
	c.Expect(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","description":"a","inputSchema":{"type":"object"},"_meta":{"io.github.toolgrain/tags":["b","z"]}},{"name":"b","description":"b","inputSchema":{"type":"object"}}]}}`)
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":2,"result":{"resources":[{"uri":"r://a","name":"a","_meta":{"io.github.toolgrain/tags":["t"]}}]}}`)
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":3,"result":{"resourceTemplates":[{"uriTemplate":"r://{x}","name":"x","_meta":{"io.github.toolgrain/tags":["t","u"]}}]}}`)
	c.Expect(`{"jsonrpc":"2.0","id":4,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":4,"result":{"prompts":[{"name":"p","_meta":{"io.github.toolgrain/tags":["v"]}}]}}`)
}

// TestToolsets: over HTTP, in a legacy session and as modern requests, the X-MCP-Toolsets
// header and a /mcp/t/TAG[,TAG...] endpoint path narrow a request's view to the components with
// one of the tags named (with both, the tags both name), and never widen it: alice asking for ops
// still sees nothing tagged ops. Outside the view a component does not exist: a call of it
// answers as an unknown tool's. Modern lists and server/discover name the toolsets applied in
// their _meta, and stay private to the caller. A tag that breaks the syntax gets 400.
func TestToolsets(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, visConfig())
	at := func(path string) *httpEnv {
		pe := *e
		pe.URL = e.ts.URL + path
		return &pe
	}
	for _, modern := range []bool{false, true} {
		tr := &visTransport{modern: modern}
		era := map[bool]string{false: "legacy session", true: "modern"}[modern]
		// client returns an asker of token's at path, which sends the header when set.
		client := func(token, path, header string) asker {
			s := at(path).Session()
			s.Token = token
			var extra []string
			if header != "" {
				extra = []string{"X-MCP-Toolsets", header}
			}
			if !modern {
				s.Initialize()
				return func(req string) string { return httpAnswer(s.Post(req, extra...)) }
			}
			return func(req string) string { return httpAnswer(s.ModernPost(req, extra...)) }
		}
		for _, tc := range []struct {
			who, token, path, header  string
			tools, resources, prompts string
		}{
			{"bob", "bob", "/mcp", "", "status deploy report", "res://status res://opsdoc docs://secret", "hello runbook"},
			{"bob, header beta", "bob", "/mcp", "beta", "report", "", ""},
			{"bob, path beta", "bob", "/mcp/t/beta", "", "report", "", ""},
			{"bob, header ops", "bob", "/mcp", " ops ,", "deploy", "res://opsdoc docs://secret", "runbook"},
			{"bob, header beta,ops and path ops,nosuch", "bob", "/mcp/t/ops,nosuch", "beta,ops", "deploy", "res://opsdoc docs://secret", "runbook"},
			{"bob, header beta and path ops", "bob", "/mcp/t/ops", "beta", "", "", ""},
			{"alice, header ops", "alice", "/mcp", "ops", "", "", ""},
			{"alice, path ops,beta", "alice", "/mcp/t/ops,beta", "", "report", "", ""},
		} {
			ask := client(tc.token, tc.path, tc.header)
			for _, l := range []struct{ method, list, key, want string }{
				{"tools/list", "tools", "name", tc.tools},
				{"resources/list", "resources", "uri", tc.resources},
				{"prompts/list", "prompts", "name", tc.prompts},
			} {
				got := ask(tr.rpc("1", l.method, ""))
				if names := strings.Join(listed(t, got, l.list, l.key), " "); names != l.want {
					t.Errorf("%s, %s: %s: %s, want %s", era, tc.who, l.list, names, l.want)
				}
				narrowed := tc.header != "" || tc.path != "/mcp"
				if modern && narrowed != strings.Contains(got, `"io.github.toolgrain/toolsets":[`) {
					t.Errorf("%s, %s: %s does not say what was applied: %s", era, tc.who, l.method, got)
				}
				if modern && !strings.Contains(got, `"cacheScope":"private"`) {
					t.Errorf("%s, %s: %s is not private: %s", era, tc.who, l.method, got)
				}
			}
			if !strings.Contains(tc.tools, "deploy") {
				unknown := ask(tr.rpc("2", "tools/call", `"name":"absent","arguments":{}`))
				sameAs(t, era+", "+tc.who+": the call of deploy", ask(tr.rpc("2", "tools/call", `"name":"deploy","arguments":{}`)), "deploy", unknown, "absent")
			}
		}
		if modern {
			got := client("bob", "/mcp/t/ops,beta", "")(tr.rpc("3", "server/discover", ""))
			if !strings.Contains(got, `"io.github.toolgrain/toolsets":["beta","ops"]`) {
				t.Errorf("server/discover does not say what was applied: %s", got)
			}
		}
	}
	s := e.Session()
	s.Token = "bob"
	if r := s.ModernPost(modernRequest("1", "tools/list", ""), "X-MCP-Toolsets", "a b"); r.Status != 400 || !strings.Contains(r.Body, `tag \"a b\"`) {
		t.Errorf("a bad tag: %d %s", r.Status, r.Body)
	}
	if r := at("/mcp/t/x!y").Session(); true {
		r.Token = "bob"
		if got := r.ModernPost(modernRequest("1", "tools/list", "")); got.Status != 400 || !strings.Contains(got.Body, `tag \"x!y\"`) {
			t.Errorf("a bad tag in the path: %d %s", got.Status, got.Body)
		}
	}
}
