package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// benchRules are ten rules of every kind: six by scope, two by claim, two by predicate (with a
// key). The benchmark's caller passes them all, so that it lists and calls as many tools with
// them as without: the difference is what the rules cost.
func benchRules() []visibility.Rule {
	var rules []visibility.Rule
	for i := 0; i < 6; i++ {
		rules = append(rules, visibility.Rule{Tags: []string{"t" + strconv.Itoa(i)}, Scopes: []string{"s" + strconv.Itoa(i)}})
	}
	rules = append(rules,
		visibility.Rule{Tags: []string{"t6"}, Claim: "roles", Values: []string{"ops", "admin"}},
		visibility.Rule{Tags: []string{"t7"}, Claim: "groups", Values: []string{"eng"}})
	for i := 8; i < 10; i++ {
		rules = append(rules, visibility.Rule{Tags: []string{"t" + strconv.Itoa(i)},
			Visible: func(id *tools.Identity, _ visibility.Component) bool { return id != nil && id.Subject == "bench" },
			Key: func(id *tools.Identity) string {
				if id == nil {
					return ""
				}
				return id.Subject
			}})
	}
	return rules
}

// BenchmarkVisibility measures a caller listing every one of 1,000 tools (tools/list, ten pages
// of 100) and calling one, in a legacy session of an in-memory client, on a server without
// visibility rules (rules=0) and with ten (rules=10). Each tool has one of ten tags, so that
// every rule applies to 100 tools. Compare the pairs: the rules must cost at most 10 %.
func BenchmarkVisibility(b *testing.B) {
	defs := make([]tools.Tool, 1000)
	for i := range defs {
		defs[i] = textTool(fmt.Sprintf("tool%04d", i), "ok", "t"+strconv.Itoa(i%10))
	}
	id := &toolgrain.Identity{Subject: "bench", Scopes: []string{"mcp", "s0", "s1", "s2", "s3", "s4", "s5"},
		Claims: map[string][]string{"roles": {"ops"}, "groups": {"eng"}}}
	for _, n := range []int{0, 10} {
		cfg := toolgrain.Config{Tools: defs}
		if n > 0 {
			cfg.Visibility.Rules = benchRules()
		}
		srv, err := toolgrain.NewServer(cfg)
		if err != nil {
			b.Fatal(err)
		}
		c, err := srv.ConnectInMemoryAs(id)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if _, err := c.Initialize(ctx); err != nil {
			b.Fatal(err)
		}
		ask := func(req []byte) []byte {
			if err := c.Send(req); err != nil {
				b.Fatal(err)
			}
			resp, err := c.Receive(ctx)
			if err != nil {
				b.Fatal(err)
			}
			return resp
		}
		b.Run(fmt.Sprintf("list/rules=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
				for pages := 0; ; pages++ {
					resp := ask(req)
					i := bytes.Index(resp, []byte(`"nextCursor":"`))
					if i < 0 {
						if pages != 9 || !bytes.Contains(resp, []byte(`"tool0999"`)) {
							b.Fatalf("page %d: %.200s", pages, resp)
						}
						break
					}
					cur := resp[i+len(`"nextCursor":"`):]
					cur = cur[:bytes.IndexByte(cur, '"')]
					req = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"` + string(cur) + `"}}`)
				}
			}
		})
		b.Run(fmt.Sprintf("call/rules=%d", n), func(b *testing.B) {
			req := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool0509","arguments":{}}}`)
			b.ReportAllocs()
			for b.Loop() {
				if resp := ask(req); !bytes.Contains(resp, []byte(`"text":"ok"`)) {
					b.Fatalf("call: %s", resp)
				}
			}
		})
		_ = c.Close()
		_ = srv.Close()
	}
}
