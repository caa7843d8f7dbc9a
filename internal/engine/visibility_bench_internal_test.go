package engine

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// BenchmarkVisibilityCheck measures what visibility adds to one request of a caller, on an
// engine with 1,000 tools (each with one of ten tags) and no rules (rules=0) or ten (rules=10:
// six by scope, two by claim, two by predicate with a key), all of which the caller passes:
// the look-up of the tool a tools/call names, and the tools a tools/list pages from (a view
// from the cache, keyed by the caller's rule outcomes).
func BenchmarkVisibilityCheck(b *testing.B) {
	defs := make([]tools.Tool, 1000)
	for i := range defs {
		defs[i] = tools.Tool{Name: fmt.Sprintf("tool%04d", i), Tags: []string{"t" + strconv.Itoa(i%10)},
			Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) { return nil, nil })}
	}
	set, err := tools.Compile(defs)
	if err != nil {
		b.Fatal(err)
	}
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
			Key:     func(id *tools.Identity) string { return id.Subject }})
	}
	id := &tools.Identity{Subject: "bench", Scopes: []string{"mcp", "s0", "s1", "s2", "s3", "s4", "s5"},
		Claims: map[string][]string{"roles": {"ops"}, "groups": {"eng"}}}
	for _, n := range []int{0, 10} {
		cfg := Config{Tools: set}
		if n > 0 {
			cfg.Visibility.Rules = rules
		}
		e, err := Start(cfg)
		if err != nil {
			b.Fatal(err)
		}
		v := &viewer{id: id}
		b.Run(fmt.Sprintf("call/rules=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := e.lookupTool(e.reg.tools.Load(), "tool0509", v); !ok {
					b.Fatal("tool0509 is not visible")
				}
			}
		})
		b.Run(fmt.Sprintf("list/rules=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := e.visibleTools(v); len(got) != 1000 {
					b.Fatalf("%d tools", len(got))
				}
			}
		})
		_ = e.Shutdown(context.Background())
	}
}
