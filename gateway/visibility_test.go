package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// Tags on mounted components: the mount's, a tool transform's and the upstream's own, under the
// server's visibility rules.

// exchange sends one request frame and returns the frame that answers it, skipping
// notifications.
func exchange(t *testing.T, c *toolgrain.InMemoryClient, frame string) string {
	t.Helper()
	if err := c.Send([]byte(frame)); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := c.Receive(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), `"method":"notifications/`) {
			return string(got)
		}
	}
}

// listedNames returns the member key of the entries of a list result's list.
func listedNames(t *testing.T, answer, list, key string) []string {
	t.Helper()
	var m struct {
		Result map[string][]map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &m); err != nil || m.Result == nil {
		t.Fatalf("not a list result: %s", answer)
	}
	var out []string
	for _, e := range m.Result[list] {
		out = append(out, fmt.Sprint(e[key]))
	}
	return out
}

// TestMountedComponentsFollowVisibility: an in-process toolgrain upstream whose deploy tool, docs
// resource, template and prompt carry the tag ops of their own (listed in their _meta), mounted
// with the mount's tag up and the transform's tag base on status. With the rules "up needs the
// scope mcp" and "ops needs the scope admin": a caller without identity sees none of the
// mounted components but the server's own tool, alice (mcp) the mounted ones without ops, bob
// (mcp, admin) all. What a caller cannot see answers byte for byte as what nobody serves: a
// call, a read, a get and a completion. Lists show the tags of each entry, and a tag disabled
// for bob at run time hides the mounted tool from him alone.
func TestMountedComponentsFollowVisibility(t *testing.T) {
	t.Parallel()
	noop := prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
		return &prompts.GetResult{Messages: []protocol.PromptMessage{prompts.Text("user", "run it")}}, nil
	})
	up, err := toolgrain.NewServer(toolgrain.Config{
		Name:  "up",
		Tools: []tools.Tool{textTool("status", "ok"), textTool("deploy", "deployed", "ops")},
		Resources: []resources.Resource{
			{URI: "doc://ops", Name: "ops", Tags: []string{"ops"}, Reader: resources.Static("text/plain", "secret runbook", nil)},
			{URI: "doc://readme", Name: "readme", Reader: resources.Static("text/plain", "hello", nil)},
		},
		ResourceTemplates: []resources.Template{{URITemplate: "log://ops/{day}", Name: "oplog", Tags: []string{"ops"},
			Reader: resources.ReaderFunc(func(_ context.Context, r *resources.ReadRequest) (*resources.ReadResult, error) {
				return resources.Text(r.URI, "text/plain", "log"), nil
			}),
			Complete: map[string]resources.CompleteFunc{"day": func(context.Context, string, map[string]string) ([]string, error) {
				return []string{"monday"}, nil
			}}}},
		Prompts: []prompts.Prompt{{Name: "runbook", Tags: []string{"ops"}, Handler: noop,
			Arguments: []prompts.Argument{{Name: "step", Complete: func(context.Context, string, map[string]string) ([]string, error) {
				return []string{"one"}, nil
			}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Close() })
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: []tools.Tool{textTool("local", "here")},
		Visibility: visibility.Config{Rules: []visibility.Rule{
			{Tags: []string{"up"}, Scopes: []string{"mcp"}},
			{Tags: []string{"ops"}, Scopes: []string{"admin"}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(srv, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close(); _ = srv.Close() })
	if err := gw.Mount(gateway.Mount{Name: "up", Source: gateway.InProcess{Server: up}, Tags: []string{"up"},
		Tools: map[string]gateway.ToolTransform{"status": {Tags: []string{"base"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := gw.WaitReady(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	connect := func(id *toolgrain.Identity) *toolgrain.InMemoryClient {
		c, err := srv.ConnectInMemoryAs(id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Initialize(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	anon := connect(nil)
	alice := connect(&toolgrain.Identity{Subject: "alice", Scopes: []string{"mcp"}})
	bob := connect(&toolgrain.Identity{Subject: "bob", Scopes: []string{"mcp", "admin"}})

	for _, tc := range []struct {
		name                                 string
		c                                    *toolgrain.InMemoryClient
		tools, resources, templates, prompts []string
	}{
		{"anonymous", anon, []string{"local"}, nil, nil, nil},
		{"alice", alice, []string{"local", "up_status"}, []string{"doc://up/readme"}, nil, nil},
		{"bob", bob, []string{"local", "up_status", "up_deploy"}, []string{"doc://up/ops", "doc://up/readme"}, []string{"log://up/ops/{day}"}, []string{"up_runbook"}},
	} {
		got := []struct {
			list, key string
			want      []string
		}{
			{"tools", "name", tc.tools},
			{"resources", "uri", tc.resources},
			{"resourceTemplates", "uriTemplate", tc.templates},
			{"prompts", "name", tc.prompts},
		}
		methods := []string{"tools/list", "resources/list", "resources/templates/list", "prompts/list"}
		for i, g := range got {
			names := listedNames(t, exchange(t, tc.c, `{"jsonrpc":"2.0","id":1,"method":"`+methods[i]+`"}`), g.list, g.key)
			if !slices.Equal(names, g.want) {
				t.Errorf("%s's %s: %v, want %v", tc.name, g.list, names, g.want)
			}
		}
	}
	list := exchange(t, bob, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	for _, want := range []string{
		`{"name":"up_status","description":"status","inputSchema":{"type":"object"},"_meta":{"io.github.toolgrain/tags":["base","up"]}}`,
		`{"name":"up_deploy","description":"deploy","inputSchema":{"type":"object"},"_meta":{"io.github.toolgrain/tags":["ops","up"]}}`,
	} {
		if !strings.Contains(list, want) {
			t.Errorf("bob's tools/list lacks %s: %s", want, list)
		}
	}

	// Each pair: what is hidden from the caller, and the same of what nobody serves.
	same := func(who string, c *toolgrain.InMemoryClient, hidden, unknown, hiddenName, unknownName string) {
		t.Helper()
		h, u := exchange(t, c, hidden), exchange(t, c, unknown)
		if !strings.Contains(u, `"error"`) {
			t.Fatalf("%s: the unknown one was answered: %s", who, u)
		}
		if strings.ReplaceAll(h, hiddenName, unknownName) != u {
			t.Errorf("%s: the hidden one answers differently\nhidden:  %s\nunknown: %s", who, h, u)
		}
	}
	call := func(name string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`
	}
	read := func(uri string) string {
		return `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"` + uri + `"}}`
	}
	get := func(name string) string {
		return `{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"` + name + `"}}`
	}
	completePrompt := func(name string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"` + name + `"},"argument":{"name":"step","value":"o"}}}`
	}
	completeTemplate := func(uri string) string {
		return `{"jsonrpc":"2.0","id":6,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"` + uri + `"},"argument":{"name":"day","value":"m"}}}`
	}
	same("alice's call of up_deploy", alice, call("up_deploy"), call("up_nosuch"), "up_deploy", "up_nosuch")
	same("the anonymous call of up_status", anon, call("up_status"), call("up_nosuch"), "up_status", "up_nosuch")
	same("alice's read of doc://up/ops", alice, read("doc://up/ops"), read("doc://up/nosuch"), "doc://up/ops", "doc://up/nosuch")
	same("alice's read through the template", alice, read("log://up/ops/monday"), read("log://up/nosuch/monday"), "log://up/ops/monday", "log://up/nosuch/monday")
	same("alice's get of up_runbook", alice, get("up_runbook"), get("up_nosuch"), "up_runbook", "up_nosuch")
	same("alice's completion of up_runbook", alice, completePrompt("up_runbook"), completePrompt("up_nosuch"), "up_runbook", "up_nosuch")
	same("alice's completion of the template", alice, completeTemplate("log://up/ops/{day}"), completeTemplate("log://up/nosuch/{day}"), "log://up/ops/{day}", "log://up/nosuch/{day}")
	for _, tc := range []struct{ frame, want string }{
		{call("up_deploy"), `"text":"deployed"`},
		{read("doc://up/ops"), `"text":"secret runbook"`},
		{get("up_runbook"), `"text":"run it"`},
		{completePrompt("up_runbook"), `"values":["one"]`},
	} {
		if got := exchange(t, bob, tc.frame); !strings.Contains(got, tc.want) {
			t.Errorf("bob: %s: %s", tc.frame, got)
		}
	}

	// At run time: up disabled for bob hides every mounted component from him, and from nobody
	// else.
	if err := srv.DisableTagsFor("bob", "up"); err != nil {
		t.Fatal(err)
	}
	if got := listedNames(t, exchange(t, bob, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`), "tools", "name"); !slices.Equal(got, []string{"local"}) {
		t.Errorf("bob's tools with up disabled for him: %v", got)
	}
	if got := listedNames(t, exchange(t, alice, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`), "tools", "name"); !slices.Equal(got, []string{"local", "up_status"}) {
		t.Errorf("alice's tools with up disabled for bob: %v", got)
	}
}

// TestUpstreamDeclaredTags: a stdio upstream that declares tags in its tools' _meta: echo's good
// tags are honoured (a rule on one of them hides it), its bad ones are dropped, each with a log
// line, and so is public's member that is not an array; nothing else of the mount changes.
func TestUpstreamDeclaredTags(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.WarnLevel)
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Visibility: visibility.Config{Rules: []visibility.Rule{{Tags: []string{"beta"}, Scopes: []string{"admin"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(srv, gateway.Options{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close(); _ = srv.Close() })
	m := fake("fk", map[string]string{"FAKE_META_TAGS": "1"})
	m.Include = []string{"echo", "public", "goodout"}
	if err := gw.Mount(m); err != nil {
		t.Fatal(err)
	}
	if err := gw.WaitReady(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	admin, err := srv.ConnectInMemoryAs(&toolgrain.Identity{Subject: "root", Scopes: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for _, cl := range []*toolgrain.InMemoryClient{admin, c} {
		if _, err := cl.Initialize(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	if got := toolNames(t, c); !slices.Equal(got, []string{"fk_public", "fk_goodout"}) {
		t.Errorf("tools without the scope: %v", got)
	}
	list := exchange(t, admin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if want := `{"name":"fk_echo","description":"echo","inputSchema":{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"},"_meta":{"io.github.toolgrain/tags":["beta","ok.1"]}}`; !strings.Contains(list, want) {
		t.Errorf("the admin's tools/list lacks %s:\n%s", want, list)
	}
	if strings.Contains(list, `"name":"fk_public","description":"a public error","inputSchema":{"type":"object"},"_meta"`) {
		t.Errorf("public got tags: %s", list)
	}
	var dropped []string
	for _, e := range logs.All() {
		f := e.ContextMap()
		dropped = append(dropped, fmt.Sprintf("%s %v %v %v", e.Message, f["tool"], f["tag"], f["upstream"]))
	}
	long := strings.Repeat("x", 72) + "..."
	for _, want := range []string{
		"upstream tag dropped echo a b fk",
		"upstream tag dropped echo " + long + " fk",
		"upstream tags dropped: not an array of strings public <nil> fk",
	} {
		if !slices.Contains(dropped, want) {
			t.Errorf("the log lacks %q: %q", want, dropped)
		}
	}
}

func textTool(name, text string, tags ...string) tools.Tool {
	return tools.Tool{Name: name, Description: name, Tags: tags,
		Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
			return tools.TextResult(text), nil
		})}
}
