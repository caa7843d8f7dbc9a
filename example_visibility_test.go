package toolgrain_test

import (
	"context"
	"fmt"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// Components tagged ops are visible only to identities with the scope admin, and those tagged
// billing only to identities whose roles claim names finance. A caller that cannot see a tool
// gets, for its call, exactly the answer a call of a tool nobody serves gets.
func Example_visibility() {
	tool := func(name string, tags ...string) tools.Tool {
		return tools.Tool{Name: name, Description: name, Tags: tags,
			Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
				return tools.TextResult(name + " done"), nil
			})}
	}
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: []tools.Tool{tool("status"), tool("deploy", "ops"), tool("invoice", "billing")},
		Visibility: visibility.Config{Rules: []visibility.Rule{
			{Tags: []string{"ops"}, Scopes: []string{"admin"}},
			{Tags: []string{"billing"}, Claim: "roles", Values: []string{"finance"}},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	for _, id := range []*toolgrain.Identity{
		{Subject: "ada", Scopes: []string{"admin"}},
		{Subject: "bob", Claims: map[string][]string{"roles": {"finance"}}},
	} {
		client, err := srv.ConnectInMemoryAs(id)
		if err != nil {
			fmt.Println(err)
			return
		}
		if _, err := client.Initialize(ctx); err != nil {
			fmt.Println(err)
			return
		}
		list, err := client.ListTools(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		var names []string
		for _, t := range list {
			names = append(names, t.Name)
		}
		if _, err := client.CallTool(ctx, "deploy", nil); err != nil {
			fmt.Println(id.Subject, names, err)
		} else {
			fmt.Println(id.Subject, names, "deployed")
		}
		client.Close()
	}
	// Output:
	// ada [status deploy] deployed
	// bob [status invoice] Invalid params: unknown tool "deploy" (code -32602)
}

// A tool's Scopes are checked before anything else of its call. Over HTTP with auth a caller
// without them gets 403 and the step-up challenge; over stdio (ServeStdioAs) and in memory
// (ConnectInMemoryAs, here) the identity the host authenticated decides, with the same
// JSON-RPC error.
func Example_toolScopes() {
	deploy := tools.Tool{
		Name:        "deploy",
		Description: "Deploys the service.",
		Scopes:      []string{"admin"}, // beyond the endpoint's AuthConfig.Scopes
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			return tools.TextResult("deployed by " + tools.IdentityFromContext(ctx).Subject), nil
		}),
	}
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{deploy}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	for _, id := range []*toolgrain.Identity{
		{Subject: "ada", Scopes: []string{"admin"}},
		{Subject: "bob", Scopes: []string{"read"}},
	} {
		client, err := srv.ConnectInMemoryAs(id)
		if err != nil {
			fmt.Println(err)
			return
		}
		if _, err := client.Initialize(ctx); err != nil {
			fmt.Println(err)
			return
		}
		res, err := client.CallTool(ctx, "deploy", nil)
		if err != nil {
			fmt.Println(id.Subject+":", err)
		} else {
			fmt.Println(id.Subject+":", res.Content[0].Text)
		}
		client.Close()
	}
	// Output:
	// ada: deployed by ada
	// bob: Insufficient scope: tool "deploy" needs the scope admin (code -31001)
}
