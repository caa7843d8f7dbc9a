package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgrain/toolgrain/bench/peers/internal/demo"
)

// TestTools checks the demonstration tool contract through the SDK's own
// in-process client.
func TestTools(t *testing.T) {
	ctx := context.Background()
	c, err := client.NewInProcessClient(newServer(true))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		return c.CallTool(ctx, req)
	}
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	must := func(r *mcp.CallToolResult, err error) *mcp.CallToolResult {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := must(call("echo", map[string]any{"text": "hi"})); text(r) != "hi" || r.IsError {
		t.Errorf("echo = %q", text(r))
	}
	r := must(call("greet", map[string]any{"name": "Ann"}))
	sc, _ := json.Marshal(r.StructuredContent)
	if text(r) != "Hello, Ann!" || string(sc) != `{"greeting":"Hello, Ann!"}` {
		t.Errorf("greet = %q, %s", text(r), sc)
	}
	if r := must(call("spin", map[string]any{"ms": 1})); text(r) != demo.SpunText {
		t.Errorf("spin = %q", text(r))
	}
	if r := must(call("sleep", map[string]any{"ms": 1})); text(r) != demo.SleptText {
		t.Errorf("sleep = %q", text(r))
	}
	if r := must(call("sleep", map[string]any{"ms": -1})); !r.IsError {
		t.Error("sleep accepted ms=-1 with validation on")
	}
	if r := must(call("fail", map[string]any{"mode": "result"})); !r.IsError || text(r) != demo.PublicFailure {
		t.Errorf("fail result = %q", text(r))
	}
	if r := must(call("fail", map[string]any{"mode": "bad-output"})); !r.IsError {
		t.Error("fail bad-output passed output validation")
	}
	// A plain handler error and a recovered panic come back as JSON-RPC
	// errors.
	for _, mode := range []string{"error", "panic"} {
		if _, err := call("fail", map[string]any{"mode": mode}); err == nil {
			t.Errorf("fail %s answered without an error", mode)
		}
	}
}
