package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// inner is a server to mount in the same process: the demonstration tools, a resource, a
// template and a prompt with completions.
func inner(t *testing.T) *toolgrain.Server { return innerWith(t, nil) }

func innerWith(t *testing.T, rec metrics.Recorder) *toolgrain.Server {
	t.Helper()
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Name:      "inner",
		Telemetry: toolgrain.TelemetryConfig{Metrics: rec},
		Tools:     demo.Tools(),
		Resources: []resources.Resource{{
			URI: "data://users", Name: "users", MimeType: "text/plain", Reader: resources.Static("text/plain", "ada, grace", nil),
		}},
		ResourceTemplates: []resources.Template{{
			URITemplate: "file:///logs/{day}", Name: "log",
			Reader: resources.ReaderFunc(func(_ context.Context, r *resources.ReadRequest) (*resources.ReadResult, error) {
				if r.Vars["day"] == "never" {
					return nil, resources.ErrNotFound
				}
				return resources.Text(r.URI, "text/plain", "log of "+r.Vars["day"]), nil
			}),
			Complete: map[string]resources.CompleteFunc{"day": func(_ context.Context, v string, _ map[string]string) ([]string, error) {
				return []string{v + "-monday", v + "-tuesday"}, nil
			}},
		}},
		Prompts: []prompts.Prompt{{
			Name: "review", Description: "Review code",
			Arguments: []prompts.Argument{{Name: "lang", Required: true, Complete: func(_ context.Context, v string, _ map[string]string) ([]string, error) {
				return []string{"go", "gleam"}, nil
			}}},
			Handler: prompts.HandlerFunc(func(_ context.Context, r *prompts.GetRequest) (*prompts.GetResult, error) {
				return &prompts.GetResult{Messages: []protocol.PromptMessage{prompts.Text("user", "review this "+r.Arguments["lang"])}}, nil
			}),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// A server mounted in the same process serves its tools, resources, templates, prompts and
// completions under the prefix, by the documented rules.
func TestInProcessMountServesEverything(t *testing.T) {
	t.Parallel()
	in := inner(t)
	f := newFront(t, toolgrain.Config{Tools: []tools.Tool{{Name: "local", Description: "local", Handler: tools.HandlerFunc(
		func(context.Context, *tools.Request) (*tools.Result, error) { return tools.TextResult("here"), nil })}}},
		gateway.Mount{Name: "inner", Source: gateway.InProcess{Server: in}})
	ctx := ctxT(t)

	names := toolNames(t, f.c)
	want := []string{"local", "inner_echo", "inner_greet", "inner_sleep", "inner_fail", "inner_spin"}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("tools %v lack %s", names, w)
		}
	}
	if got := text(f.call(t, "inner_echo", `{"text":"hi"}`)); got != "hi" {
		t.Errorf("echo: %q", got)
	}
	greet := f.call(t, "inner_greet", `{"name":"Ada"}`)
	if string(greet.StructuredContent) != `{"greeting":"Hello, Ada!"}` {
		t.Errorf("greet: %s", greet.StructuredContent)
	}

	// Resources: data://users is data://inner/users; file:///logs/{day} is file://inner//logs/{day}.
	raw, err := f.c.Call(ctx, protocol.MethodResourcesList, nil)
	if err != nil || !strings.Contains(string(raw), `"uri":"data://inner/users"`) {
		t.Errorf("resources/list: %s %v", raw, err)
	}
	raw, err = f.c.Call(ctx, protocol.MethodResourcesTemplatesList, nil)
	if err != nil || !strings.Contains(string(raw), `"uriTemplate":"file://inner//logs/{day}"`) {
		t.Errorf("resources/templates/list: %s %v", raw, err)
	}
	raw, err = f.c.Call(ctx, protocol.MethodResourcesRead, map[string]string{"uri": "data://inner/users"})
	if err != nil || string(raw) != `{"contents":[{"uri":"data://inner/users","mimeType":"text/plain","text":"ada, grace"}]}` {
		t.Errorf("read users: %s %v", raw, err)
	}
	raw, err = f.c.Call(ctx, protocol.MethodResourcesRead, map[string]string{"uri": "file://inner//logs/friday"})
	if err != nil || !strings.Contains(string(raw), `"uri":"file://inner//logs/friday"`) || !strings.Contains(string(raw), "log of friday") {
		t.Errorf("read template: %s %v", raw, err)
	}
	_, err = f.c.Call(ctx, protocol.MethodResourcesRead, map[string]string{"uri": "file://inner//logs/never"})
	var werr *protocol.WireError
	if !errors.As(err, &werr) || werr.Code != protocol.CodeResourceNotFound {
		t.Errorf("read a missing resource: %v", err)
	}

	// Prompts and completions.
	raw, err = f.c.Call(ctx, protocol.MethodPromptsList, nil)
	if err != nil || !strings.Contains(string(raw), `"name":"inner_review"`) {
		t.Errorf("prompts/list: %s %v", raw, err)
	}
	raw, err = f.c.Call(ctx, protocol.MethodPromptsGet, map[string]any{"name": "inner_review", "arguments": map[string]string{"lang": "go"}})
	if err != nil || !strings.Contains(string(raw), "review this go") {
		t.Errorf("prompts/get: %s %v", raw, err)
	}
	_, err = f.c.Call(ctx, protocol.MethodPromptsGet, map[string]any{"name": "inner_review"})
	if !errors.As(err, &werr) || werr.Code != protocol.CodeInvalidParams {
		t.Errorf("prompts/get without its required argument: %v", err)
	}
	raw, err = f.c.Call(ctx, protocol.MethodCompletionComplete, map[string]any{
		"ref": map[string]string{"type": "ref/prompt", "name": "inner_review"}, "argument": map[string]string{"name": "lang", "value": "g"}})
	if err != nil || !strings.Contains(string(raw), `"values":["go","gleam"]`) {
		t.Errorf("complete prompt: %s %v", raw, err)
	}
	raw, err = f.c.Call(ctx, protocol.MethodCompletionComplete, map[string]any{
		"ref": map[string]string{"type": "ref/resource", "uri": "file://inner//logs/{day}"}, "argument": map[string]string{"name": "day", "value": "x"}})
	if err != nil || !strings.Contains(string(raw), `"values":["x-monday","x-tuesday"]`) {
		t.Errorf("complete template: %s %v", raw, err)
	}
	if f.reps.count() != 0 {
		t.Errorf("reports: %v", f.reps.errs)
	}
}

// A mounted server is live: a tool it adds later is served, and the gateway's clients are told.
func TestInProcessMountIsLive(t *testing.T) {
	t.Parallel()
	in := inner(t)
	f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "in", Source: gateway.InProcess{Server: in}, Separator: "."})
	if names := toolNames(t, f.c); !slices.Contains(names, "in.echo") || slices.Contains(names, "in.later") {
		t.Fatalf("tools: %v", names)
	}
	if err := in.AddTools(tools.Tool{Name: "later", Description: "added later", Handler: tools.HandlerFunc(
		func(context.Context, *tools.Request) (*tools.Result, error) { return tools.TextResult("late"), nil })}); err != nil {
		t.Fatal(err)
	}
	waitTools(t, f.c, func(names []string) bool { return slices.Contains(names, "in.later") })
	if got := text(f.call(t, "in.later", `{}`)); got != "late" {
		t.Errorf("later: %q", got)
	}
	in.RemoveTools("later")
	waitTools(t, f.c, func(names []string) bool { return !slices.Contains(names, "in.later") })
}

// The error model through a mounted toolgrain server: validation against the upstream's
// schema at the gateway, and the upstream's own results (its public error result, and the
// generic result of its own unexpected failures, which it reports to its own OnError) passed
// unchanged, so the gateway has nothing to report.
func TestInProcessErrorModel(t *testing.T) {
	t.Parallel()
	in := inner(t)
	f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "up", Source: gateway.InProcess{Server: in}})

	r := f.call(t, "up_sleep", `{"ms":600001}`)
	if !r.IsError || text(r) != "invalid arguments: ms: must be <= 600000" {
		t.Errorf("invalid arguments: %+v", r)
	}
	r = f.call(t, "up_fail", `{"mode":"result"}`)
	if !r.IsError || text(r) != "public failure message" {
		t.Errorf("public error result: %+v", r)
	}
	for _, mode := range []string{"error", "panic", "bad-output", "provider"} {
		r := f.call(t, "up_fail", `{"mode":"`+mode+`"}`)
		if !r.IsError || text(r) != toolgrain.FailedText || len(r.StructuredContent) != 0 {
			t.Errorf("%s: %+v", mode, r)
		}
	}
	if f.reps.count() != 0 {
		t.Errorf("reports: %v", f.reps.errs)
	}
}

// A call the client cancels is cancelled upstream, and nothing reaches the client afterwards.
func TestInProcessCancellation(t *testing.T) {
	t.Parallel()
	rec := metrics.NewMemory()
	in := innerWith(t, rec)
	f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "up", Source: gateway.InProcess{Server: in}})
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := f.c.Call(ctx, protocol.MethodToolsCall, json.RawMessage(`{"name":"up_sleep","arguments":{"ms":60000},"_meta":{"progressToken":"p1"}}`))
		done <- err
	}()
	// The upstream's first progress notification, relayed with the client's own token: the
	// call runs upstream.
	p := nextNotification(t, f.c, protocol.MethodProgress)
	if !strings.Contains(string(p), `"progressToken":"p1"`) {
		t.Errorf("progress: %s", p)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	mcptest.Eventually(t, "the upstream's call cancelled", func() bool { return rec.Snapshot().Cancellations() == 1 })
	// The connection still works, and the next answer is the next call's.
	if got := text(f.call(t, "up_echo", `{"text":"after"}`)); got != "after" {
		t.Errorf("echo after: %q", got)
	}
	if f.reps.count() != 0 {
		t.Errorf("reports: %v", f.reps.errs)
	}
}

// A tool set mounted in the same process: the gateway serves it through a server of its own,
// closed with the gateway.
func TestInProcessToolSet(t *testing.T) {
	t.Parallel()
	f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "set", Source: gateway.InProcess{Tools: demo.Tools()}})
	if got := text(f.call(t, "set_echo", `{"text":"from a set"}`)); got != "from a set" {
		t.Errorf("echo: %q", got)
	}
	if err := f.gw.Mount(gateway.Mount{Name: "set", Source: gateway.InProcess{Tools: demo.Tools()}}); err == nil {
		t.Error("a second mount of the name was accepted")
	}
	if err := f.gw.Mount(gateway.Mount{Name: "none", Source: gateway.InProcess{}}); err == nil || !strings.Contains(err.Error(), "no server and no tools") {
		t.Errorf("an empty source: %v", err)
	}
}

// The resource links and embedded resources of a mounted tool's result, and of a mounted
// prompt's messages, carry the URIs the gateway serves them under, and the client reads them
// through it; a link to what the mount does not serve keeps its URI.
func TestMountedResourceLinks(t *testing.T) {
	t.Parallel()
	links := []protocol.Content{
		{Type: protocol.ContentResourceLink, URI: "data://users", Name: "users"},
		{Type: protocol.ContentResource, Resource: &protocol.ResourceContents{URI: "file:///logs/monday", MimeType: "text/plain", Text: "log of monday"}},
		{Type: protocol.ContentResourceLink, URI: "https://example.com/doc", Name: "elsewhere"},
		{Type: protocol.ContentResourceLink, URI: "data://unlisted", Name: "unlisted"},
	}
	in := innerWith(t, nil)
	if err := in.AddTools(tools.Tool{Name: "links", Description: "links", Handler: tools.HandlerFunc(
		func(context.Context, *tools.Request) (*tools.Result, error) {
			return &tools.Result{Content: slices.Clone(links)}, nil
		})}); err != nil {
		t.Fatal(err)
	}
	if err := in.AddPrompts(prompts.Prompt{Name: "cite", Description: "cites a resource", Handler: prompts.HandlerFunc(
		func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
			return &prompts.GetResult{Messages: []protocol.PromptMessage{{Role: "user", Content: links[0]}}}, nil
		})}); err != nil {
		t.Fatal(err)
	}
	f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "inner", Source: gateway.InProcess{Server: in}})
	ctx := ctxT(t)
	waitTools(t, f.c, func(names []string) bool { return slices.Contains(names, "inner_links") })

	raw, err := f.c.Call(ctx, protocol.MethodToolsCall, map[string]any{"name": "inner_links", "arguments": map[string]any{}})
	want := `{"content":[{"type":"resource_link","uri":"data://inner/users","name":"users"},` +
		`{"type":"resource","resource":{"uri":"file://inner//logs/monday","mimeType":"text/plain","text":"log of monday"}},` +
		`{"type":"resource_link","uri":"https://example.com/doc","name":"elsewhere"},` +
		`{"type":"resource_link","uri":"data://unlisted","name":"unlisted"}]}`
	if err != nil || string(raw) != want {
		t.Errorf("tools/call:\n got %s %v\nwant %s", raw, err, want)
	}
	// What the links name is read through the gateway.
	for _, c := range []struct{ uri, text string }{{"data://inner/users", "ada, grace"}, {"file://inner//logs/monday", "log of monday"}} {
		raw, err := f.c.Call(ctx, protocol.MethodResourcesRead, map[string]string{"uri": c.uri})
		if err != nil || !strings.Contains(string(raw), `"text":"`+c.text+`"`) {
			t.Errorf("read %s: %s %v", c.uri, raw, err)
		}
	}
	raw, err = f.c.Call(ctx, protocol.MethodPromptsGet, map[string]any{"name": "inner_cite"})
	if err != nil || !strings.Contains(string(raw), `"uri":"data://inner/users"`) {
		t.Errorf("prompts/get: %s %v", raw, err)
	}
}
