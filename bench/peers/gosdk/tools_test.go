package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgrain/toolgrain/bench/peers/internal/demo"
)

// TestTools checks the demonstration tool contract through the SDK's own
// client over its in-memory transport.
func TestTools(t *testing.T) {
	ctx := context.Background()
	server, err := newServer(true)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	if r := call("echo", map[string]any{"text": "hi"}); text(r) != "hi" || r.IsError {
		t.Errorf("echo = %q", text(r))
	}
	r := call("greet", map[string]any{"name": "Ann"})
	sc, _ := json.Marshal(r.StructuredContent)
	if text(r) != "Hello, Ann!" || string(sc) != `{"greeting":"Hello, Ann!"}` {
		t.Errorf("greet = %q, %s", text(r), sc)
	}
	if r := call("spin", map[string]any{"ms": 1}); text(r) != demo.SpunText {
		t.Errorf("spin = %q", text(r))
	}
	if r := call("sleep", map[string]any{"ms": 1}); text(r) != demo.SleptText {
		t.Errorf("sleep = %q", text(r))
	}
	if r := call("sleep", map[string]any{"ms": -1}); !r.IsError {
		t.Error("sleep accepted ms=-1")
	}
	if r := call("fail", map[string]any{"mode": "result"}); !r.IsError || text(r) != demo.PublicFailure {
		t.Errorf("fail result = %q", text(r))
	}
	if r := call("fail", map[string]any{"mode": "error"}); !r.IsError || !strings.Contains(text(r), demo.Marker) {
		t.Errorf("fail error = %q; the SDK shows handler errors verbatim", text(r))
	}
	// With recovery, a panic is answered instead of killing the process.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{"mode": "panic"}}); err == nil {
		t.Error("fail panic answered without an error")
	}
}
