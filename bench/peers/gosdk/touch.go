package main

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type touchIn struct {
	List string `json:"list,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// addTouch adds the tool touch (--touch-tool), which changes the tool list on demand, as the
// engine's does: {"list":"tools"} adds the tool "touched", or removes it if it is there; the SDK
// then tells every client. mcpbench clients --trigger touch measures with it how fast a change
// reaches every client. Resource updates ({"uri":U}) are not offered.
func addTouch(server *mcp.Server) {
	var mu sync.Mutex
	present := false
	mcp.AddTool(server, &mcp.Tool{Name: "touch", Description: "Changes the tool list once."},
		func(_ context.Context, _ *mcp.CallToolRequest, in touchIn) (*mcp.CallToolResult, any, error) {
			if in.List != "tools" {
				return nil, nil, errors.New(`only {"list":"tools"} is offered`)
			}
			mu.Lock()
			defer mu.Unlock()
			if present {
				server.RemoveTools("touched")
			} else {
				mcp.AddTool(server, &mcp.Tool{Name: "touched", Description: "Comes and goes with touch."},
					func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
						return &mcp.CallToolResult{Content: text("touched")}, nil, nil
					})
			}
			present = !present
			return &mcp.CallToolResult{Content: text("tools list changed")}, nil, nil
		})
}
