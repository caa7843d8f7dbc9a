package client_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// A handler asks its client for input with Input, the same code in both protocol eras. In a
// legacy session the request goes to the client at once and Input waits for the answer; in the
// modern era (MCP 2026-07-28, shown here) the engine answers the call input_required, and the
// client retries it with its answer and the requestState it was given: the handler runs again
// and Input returns the answer.
func ExampleInput() {
	type deployIn struct {
		Service string `json:"service"`
	}
	deploy := tools.Tool{
		Name:        "deploy",
		Description: "Deploys a service after the user confirms.",
		Handler: tools.Func(func(ctx context.Context, in deployIn) (*tools.Result, error) {
			got, err := client.Input(ctx, map[string]client.InputRequest{
				"confirm": client.ElicitInput(&protocol.ElicitParams{
					Message:         "Deploy now?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`),
				}),
			})
			if err != nil {
				return nil, err // client.ErrInputRequired in the first round: the engine has answered
			}
			answer, err := got["confirm"].Elicit()
			if err != nil {
				return nil, err
			}
			if answer.Action != protocol.ElicitAccept {
				return tools.ErrorResult("deployment declined"), nil
			}
			return tools.TextResult("deployed " + in.Service), nil
		}),
	}
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{deploy}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	conn, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	ctx := context.Background()
	meta := json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`)
	params := map[string]any{"name": "deploy", "arguments": map[string]string{"service": "api"}, "_meta": meta}
	raw, err := conn.Call(ctx, "tools/call", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	var round struct {
		ResultType    string                           `json:"resultType"`
		InputRequests map[string]protocol.InputRequest `json:"inputRequests"`
		RequestState  string                           `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &round); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(round.ResultType, round.InputRequests["confirm"].Method)

	// The client asks its user, then retries with the answer and the state, byte for byte.
	params["inputResponses"] = map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]bool{"ok": true}}}
	params["requestState"] = round.RequestState
	raw, err = conn.Call(ctx, "tools/call", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	var done protocol.CallToolResult
	if err := json.Unmarshal(raw, &done); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done.Content[0].Text)
	// Output:
	// input_required elicitation/create
	// deployed api
}
