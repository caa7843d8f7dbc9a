package e2e_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
)

// deployTools are a tool that needs two scopes and one that needs none.
func deployTools(ran *int) []tools.Tool {
	return []tools.Tool{
		{Name: "deploy", Scopes: []string{"admin", "deploy:write"}, Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			*ran++ // one call at a time in these tests
			return tools.TextResult("deployed"), nil
		})},
		{Name: "status", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			return tools.TextResult("ok"), nil
		})},
	}
}

// TestToolScopesStdio: over stdio the identity the host gives (ServeStdioAs) decides whether a
// tool with Scopes may be called; a refusal is a JSON-RPC error naming the missing scopes, in
// both eras, and the handler does not run. Without an identity there is no scope.
func TestToolScopesStdio(t *testing.T) {
	t.Parallel()
	var ran int
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: deployTools(&ran)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	anon := attachAs(t, srv, nil)
	anon.Initialize()
	anon.Expect(call("1", "deploy", `{}`), `{"jsonrpc":"2.0","id":1,"error":{"code":-31001,"message":"Insufficient scope: tool \"deploy\" needs the scopes admin, deploy:write","data":{"tool":"deploy","missing":["admin","deploy:write"]}}}`)
	anon.Expect(call("2", "status", `{}`), `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}`)

	half := attachAs(t, srv, &toolgrain.Identity{Subject: "ops", Scopes: []string{"admin", "read"}})
	half.Initialize()
	half.Expect(call("3", "deploy", `{}`), `{"jsonrpc":"2.0","id":3,"error":{"code":-31001,"message":"Insufficient scope: tool \"deploy\" needs the scope deploy:write","data":{"tool":"deploy","missing":["deploy:write"]}}}`)
	half.Expect(modernCall("4", "deploy", `{}`, `{}`), `{"jsonrpc":"2.0","id":4,"error":{"code":-31001,"message":"Insufficient scope: tool \"deploy\" needs the scope deploy:write","data":{"tool":"deploy","missing":["deploy:write"]}}}`)
	if ran != 0 {
		t.Fatalf("deploy ran %d times without its scopes", ran)
	}

	full := attachAs(t, srv, &toolgrain.Identity{Subject: "ops", Scopes: []string{"deploy:write", "admin"}})
	full.Initialize()
	full.Expect(call("5", "deploy", `{}`), `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"deployed"}]}}`)
	if ran != 1 {
		t.Errorf("deploy ran %d times, want 1", ran)
	}
}

// TestToolScopesInMemory: the identity of ConnectInMemoryAs decides; with HideForbiddenTools,
// tools/list leaves out what the caller may not call, and a call of it is a call of an unknown
// tool.
func TestToolScopesInMemory(t *testing.T) {
	t.Parallel()
	for _, hide := range []bool{false, true} {
		var ran int
		srv, err := toolgrain.NewServer(toolgrain.Config{Tools: deployTools(&ran), HideForbiddenTools: hide})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, tc := range []struct {
			id     *toolgrain.Identity
			listed []string
			err    string
		}{
			{nil, []string{"status"}, `Insufficient scope: tool "deploy" needs the scopes admin, deploy:write (code -31001)`},
			{&toolgrain.Identity{Subject: "a", Scopes: []string{"deploy:write"}}, []string{"status"}, `Insufficient scope: tool "deploy" needs the scope admin (code -31001)`},
			{&toolgrain.Identity{Subject: "b", Scopes: []string{"admin", "deploy:write"}}, []string{"deploy", "status"}, ""},
		} {
			c, err := srv.ConnectInMemoryAs(tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
			_, err = c.CallTool(ctx, "deploy", map[string]any{})
			want := tc.err
			if hide && want != "" {
				want = `Invalid params: unknown tool "deploy" (code -32602)`
			}
			if got := errText(err); got != want {
				t.Errorf("hide=%v, %v: CallTool error %q, want %q", hide, tc.id, got, want)
			}
			list, err := c.ListTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range list {
				names = append(names, tl.Name)
			}
			listed := tc.listed
			if !hide {
				listed = []string{"deploy", "status"}
			}
			if !slices.Equal(names, listed) {
				t.Errorf("hide=%v, %v: tools/list %v, want %v", hide, tc.id, names, listed)
			}
			_ = c.Close()
		}
		if ran != 1 {
			t.Errorf("hide=%v: deploy ran %d times, want 1", hide, ran)
		}
		_ = srv.Close()
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestToolScopesConstruction: a scope that cannot be written into a challenge is refused.
func TestToolScopesConstruction(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "two words", `quo"te`, `back\slash`, "tab\t"} {
		_, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{{Name: "x", Scopes: []string{bad},
			Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) { return nil, nil })}}})
		if err == nil {
			t.Errorf("scope %q accepted", bad)
		} else {
			t.Logf("%q: %v", bad, err)
		}
	}
}
