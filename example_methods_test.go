package toolgrain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
)

// A custom method beside the tools, and an extension declared in the capabilities.
func Example_customMethod() {
	type reindexParams struct {
		Index string `json:"index"`
	}
	type reindexResult struct {
		Documents int `json:"documents"`
	}
	reindex := func(ctx context.Context, p reindexParams) (reindexResult, error) {
		if p.Index == "" {
			return reindexResult{}, errors.New("no index given") // the client gets -32603 only
		}
		return reindexResult{Documents: 42}, nil
	}

	reports := make(chan string, 8)
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: []tools.Tool{echoTool},
		Methods: []toolgrain.Method{{
			Name:    "acme/reindex",
			Handler: toolgrain.TypedMethod(reindex),
		}},
		Extensions: map[string]json.RawMessage{
			"com.acme/search": json.RawMessage(`{"reindex":true}`),
		},
		OnError: func(err error, d *toolgrain.ToolErrorDetails) {
			// Reports reach OnError after the answers, on the diagnostics actor: keep them
			// for the end, so the output has one order.
			reports <- fmt.Sprintf("OnError: %v (method %s)", err, d.Request().Method())
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	init, err := client.Initialize(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n", init.Capabilities.Experimental["com.acme/search"])
	for _, params := range []string{`{"index":"books"}`, `{"index":3}`, `{}`} {
		res, err := client.Call(ctx, "acme/reindex", json.RawMessage(params))
		if err != nil {
			fmt.Println(err) // a *protocol.WireError
			continue
		}
		fmt.Printf("%s\n", res)
	}
	client.Close()
	srv.Close() // delivers the pending OnError report
	close(reports)
	for r := range reports {
		fmt.Println(r)
	}
	// Output:
	// {"reindex":true}
	// {"documents":42}
	// Invalid params: index: must be a string, got number (code -32602)
	// Internal error (code -32603)
	// OnError: acme/reindex: no index given (method acme/reindex)
}
