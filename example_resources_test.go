package toolgrain_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// Besides tools, a server offers fixed resources, resource templates (whose variables can be
// completed) and prompts; each handler is user code under the error model.
func Example_resourcesAndPrompts() {
	logs := map[string]string{"2026-12-01": "all quiet", "2026-12-02": "one restart"}
	suggestDays := func(ctx context.Context, value string, _ map[string]string) ([]string, error) {
		var days []string
		for day := range logs {
			if strings.HasPrefix(day, value) {
				days = append(days, day)
			}
		}
		return days, nil
	}
	myTools := []tools.Tool{echoTool}

	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: myTools,
		Resources: []resources.Resource{{
			URI: "config://app", Name: "app-config", MimeType: "application/json",
			Reader: resources.Static("application/json", `{"debug":false}`, nil),
		}},
		ResourceTemplates: []resources.Template{{
			URITemplate: "logs://{day}", Name: "daily-log", MimeType: "text/plain",
			Reader: resources.ReaderFunc(func(ctx context.Context, req *resources.ReadRequest) (*resources.ReadResult, error) {
				text, ok := logs[req.Vars["day"]]
				if !ok {
					return nil, resources.ErrNotFound // the client gets -32002
				}
				return resources.Text(req.URI, "text/plain", text), nil
			}),
			Complete: map[string]resources.CompleteFunc{"day": suggestDays},
		}},
		Prompts: []prompts.Prompt{{
			Name: "review", Description: "Reviews a change.",
			Arguments: []prompts.Argument{{Name: "diff", Required: true}},
			Handler: prompts.HandlerFunc(func(ctx context.Context, req *prompts.GetRequest) (*prompts.GetResult, error) {
				return &prompts.GetResult{Messages: []protocol.PromptMessage{
					prompts.Text(protocol.RoleUser, "Review this change:\n"+req.Arguments["diff"]),
				}}, nil
			}),
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range []struct {
		method string
		params any
	}{
		{"resources/read", map[string]string{"uri": "logs://2026-12-02"}},
		{"resources/read", map[string]string{"uri": "logs://1999-01-01"}},
		{"completion/complete", map[string]any{
			"ref":      map[string]string{"type": "ref/resource", "uri": "logs://{day}"},
			"argument": map[string]string{"name": "day", "value": "2026-12-01"},
		}},
		{"prompts/get", map[string]any{"name": "review", "arguments": map[string]string{"diff": "+1 line"}}},
		{"prompts/get", map[string]any{"name": "review"}},
	} {
		res, err := client.Call(ctx, c.method, c.params)
		if err != nil {
			fmt.Println(c.method, "error:", err)
			continue
		}
		fmt.Println(c.method, string(res))
	}
	// Output:
	// resources/read {"contents":[{"uri":"logs://2026-12-02","mimeType":"text/plain","text":"one restart"}]}
	// resources/read error: Resource not found (code -32002)
	// completion/complete {"completion":{"values":["2026-12-01"],"total":1}}
	// prompts/get {"messages":[{"role":"user","content":{"type":"text","text":"Review this change:\n+1 line"}}]}
	// prompts/get error: Invalid params: argument "diff": missing required argument (code -32602)
}
