package toolgrain_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
)

// ExampleServer_Handler mounts the Streamable HTTP transport in a mux, with bearer auth whose
// identity reaches the tool, and talks to it as a client would.
func ExampleServer_Handler() {
	whoami := tools.Tool{
		Name:        "whoami",
		Description: "Says who called.",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			return tools.TextResult("hello, " + tools.IdentityFromContext(ctx).Subject), nil
		}),
	}
	verify := func(ctx context.Context, token string) (*toolgrain.Identity, error) {
		if token != "s3cret" {
			return nil, toolgrain.ErrInvalidToken
		}
		return &toolgrain.Identity{Subject: "ada", Scopes: []string{"mcp"}}, nil
	}
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: []tools.Tool{whoami},
		HTTP: toolgrain.HTTPConfig{Auth: &toolgrain.AuthConfig{
			Verifier: toolgrain.TokenVerifierFunc(verify),
			Scopes:   []string{"mcp"},
			Resource: "https://mcp.example.com/mcp",
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	mux.Handle("/.well-known/oauth-protected-resource/mcp", srv.ResourceMetadataHandler())
	hs := httptest.NewServer(mux)
	defer hs.Close()
	defer srv.Close() // first: it ends the sessions that hs.Close would wait for

	session := ""
	post := func(token, body string) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
		b, _ := io.ReadAll(resp.Body)
		line := fmt.Sprint(resp.StatusCode)
		for _, part := range []string{resp.Header.Get("WWW-Authenticate"), string(b)} {
			if part != "" {
				line += " " + part
			}
		}
		fmt.Println(line)
	}
	post("guess", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ex","version":"1"}}}`)
	post("s3cret", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ex","version":"1"}}}`)
	post("s3cret", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post("s3cret", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`)
	http.DefaultClient.CloseIdleConnections()
	// Output:
	// 401 Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp", error="invalid_token", error_description="the access token is invalid or expired" {"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: the access token is invalid or expired"}}
	// 200 {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}},"serverInfo":{"name":"toolgrain","version":"0.1.0"}}}
	// 202
	// 200 {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello, ada"}]}}
}

// Example_sse serves the HTTP+SSE transport of MCP 2024-11-05 beside Streamable HTTP and talks
// to it as an old client does: a GET opens the stream, whose first event names the URL to POST
// to; each POST gets 202, and its answer comes on the stream.
func Example_sse() {
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{echoTool}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	mux.Handle("/sse", srv.Handler())      // toolgrain.DefaultSSEPath
	mux.Handle("/messages", srv.Handler()) // toolgrain.DefaultMessagesPath
	hs := httptest.NewServer(mux)
	defer hs.Close()
	defer srv.Close() // first: it ends the stream that hs.Close would wait for

	resp, err := http.Get(hs.URL + "/sse")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	// next returns the event type and data of the stream's next event.
	next := func() (event, data string) {
		for events.Scan() {
			line := events.Text()
			if line == "" && data != "" {
				return event, data
			}
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		return event, data
	}
	_, endpoint := next()
	fmt.Println("endpoint:", strings.SplitAfter(endpoint, "=")[0]+"...")
	post := func(body string) {
		resp, err := http.Post(hs.URL+endpoint, "application/json", strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println("POST:", resp.StatusCode)
	}
	post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ex","version":"1"}}}`)
	_, initialized := next()
	fmt.Println(strings.Contains(initialized, `"protocolVersion":"2025-11-25"`))
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over the old transport"}}}`)
	fmt.Println(next())
	// Output:
	// endpoint: /messages?sessionId=...
	// POST: 202
	// true
	// POST: 202
	// POST: 202
	// message {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"over the old transport"}]}}
}
