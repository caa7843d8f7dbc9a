package main

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// addTouch adds the tool touch (--touch-tool), which changes the tool list on demand, as the
// engine's does: {"list":"tools"} adds the tool "touched", or removes it if it is there; the SDK
// then tells every client. mcpbench clients --trigger touch measures with it how fast a change
// reaches every client. Resource updates ({"uri":U}) are not offered.
func addTouch(s *server.MCPServer) {
	var mu sync.Mutex
	present := false
	s.AddTool(mcp.NewTool("touch",
		mcp.WithDescription("Changes the tool list once."),
		mcp.WithString("list"),
		mcp.WithString("uri"),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.GetString("list", "") != "tools" {
			return mcp.NewToolResultError(`only {"list":"tools"} is offered`), nil
		}
		mu.Lock()
		defer mu.Unlock()
		if present {
			s.DeleteTools("touched")
		} else {
			s.AddTool(mcp.NewTool("touched", mcp.WithDescription("Comes and goes with touch.")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("touched"), nil
				})
		}
		present = !present
		return mcp.NewToolResultText("tools list changed"), nil
	})
}
