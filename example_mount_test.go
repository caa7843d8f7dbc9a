package toolgrain_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
)

// One server serves every transport at once: its Streamable HTTP handler sits in the host's
// mux next to the host's routes and behind its middleware, and a stdio connection runs beside
// it. Shutdown ends both; the host's HTTP server shuts down after it.
func Example_mount() {
	ctx := context.Background()
	health := func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }
	var mu sync.Mutex
	var seen []string
	logRequests := func(next http.Handler) http.Handler { // the host's own middleware
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Method+" "+r.URL.Path)
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}

	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: []tools.Tool{echoTool},
		HTTP: toolgrain.HTTPConfig{
			SessionIdleTimeout: 10 * time.Minute, // default 30 minutes
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", health) // the host's own routes
	mux.Handle("/mcp", srv.Handler())      // MCP next to them, behind the same middleware
	hs := &http.Server{Handler: logRequests(mux), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	// A stdio connection on the same server, here on pipes rather than os.Stdin and os.Stdout.
	in, toServer := io.Pipe()
	fromServer, out := io.Pipe()
	stdio := make(chan error, 1)
	go func() {
		stdio <- srv.ServeStdio(ctx, in, out)
		out.Close()
	}()

	url := "http://" + ln.Addr().String()
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("healthz:", resp.StatusCode, string(body))
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ex","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("mcp over HTTP:", resp.StatusCode, resp.Header.Get("Mcp-Session-Id") != "")

	lines := bufio.NewScanner(fromServer)
	fmt.Fprintln(toServer, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ex","version":"1"}}}`)
	fmt.Fprintln(toServer, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(toServer, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over stdio"}}}`)
	lines.Scan() // the initialize result
	lines.Scan()
	fmt.Println("mcp over stdio:", lines.Text())

	// Shutdown first: it cancels the calls in flight and ends the sessions and SSE streams
	// that http.Server.Shutdown would otherwise wait for, and the stdio connection.
	shutCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		fmt.Println(err)
	}
	if err := hs.Shutdown(shutCtx); err != nil {
		fmt.Println(err)
	}
	fmt.Println("stdio:", <-stdio, "http:", <-served)
	mu.Lock()
	fmt.Println("host middleware saw:", strings.Join(seen, ", "))
	mu.Unlock()
	toServer.Close()
	http.DefaultClient.CloseIdleConnections()
	// Output:
	// healthz: 200 ok
	// mcp over HTTP: 200 true
	// mcp over stdio: {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"over stdio"}]}}
	// stdio: toolgrain: server closed http: http: Server closed
	// host middleware saw: GET /healthz, POST /mcp
}
