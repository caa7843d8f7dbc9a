package toolgrain_test

import (
	"bufio"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
)

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
