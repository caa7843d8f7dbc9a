package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain/bench/peers/internal/demo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const env = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

const serverTag = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"stdlib-floor","version":"1.0.0"}}`

// stdio runs the server on pipes; send writes a line, recv reads one.
type stdio struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startStdio(t *testing.T, grace time.Duration) *stdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	// Ends when the input ends (close below, or the test's cleanup).
	go func() {
		done <- (&server{}).serveStdio(inR, outW, grace)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	s := &stdio{t: t, in: inW, out: sc, done: done}
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // let the server finish writing
		<-done
	})
	return s
}

func (s *stdio) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

func (s *stdio) recv() string {
	s.t.Helper()
	if !s.out.Scan() {
		s.t.Fatalf("no line: %v", s.out.Err())
	}
	return s.out.Text()
}

func (s *stdio) expect(send, want string) {
	s.t.Helper()
	s.send(send)
	if got := s.recv(); got != want {
		s.t.Errorf("sent %s\n got %s\nwant %s", send, got, want)
	}
}

func TestStdioLegacy(t *testing.T) {
	s := startStdio(t, time.Second)
	s.expect(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"capabilities":{"tools":{}},"protocolVersion":"2025-06-18","serverInfo":{"name":"stdlib-floor","version":"1.0.0"}}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.expect(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	s.expect(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	s.expect(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"greet","arguments":{"name":"Ann"}}}`,
		`{"jsonrpc":"2.0","id":"s","result":{"content":[{"type":"text","text":"Hello, Ann!"}],"structuredContent":{"greeting":"Hello, Ann!"}}}`)
	s.expect(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":42}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"invalid arguments: json: cannot unmarshal number into Go struct field arguments.text of type string"}],"isError":true}}`)
	s.expect(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":-1}}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"invalid arguments: ms must be an integer from 0 to 600000"}],"isError":true}}`)
	s.expect(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: unknown tool \"nope\""}}`)
	s.expect(`{"jsonrpc":"2.0","id":6,"method":"nope"}`, `{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found: nope"}}`)
	s.expect(`{"jsonrpc":"2.0","id":7,"method":"ping"`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
	s.expect(`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: batches are not supported"}}`)
	s.expect(`{"jsonrpc":"2.0","id":null,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: the id must not be null"}}`)
	s.expect(`{"id":9,"method":"ping"}`, `{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"Invalid request: jsonrpc must be \"2.0\""}}`)
	s.expect(`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":10,"result":{"tools":`+string(toolList)+`}}`)
}

func TestStdioFail(t *testing.T) {
	s := startStdio(t, time.Second)
	for mode, want := range map[string]string{
		"result":     `"content":[{"type":"text","text":"public failure message"}],"isError":true`,
		"error":      `"content":[{"type":"text","text":"Tool execution failed"}],"isError":true`,
		"provider":   `"content":[{"type":"text","text":"Tool execution failed"}],"isError":true`,
		"panic":      `"content":[{"type":"text","text":"Tool execution failed"}],"isError":true`,
		"bad-output": `"content":[{"type":"text","text":"bad output"}],"structuredContent":{"value":"` + demo.Marker + `"}`,
	} {
		s.expect(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","arguments":{"mode":"`+mode+`"}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{`+want+`}}`)
	}
}

func TestStdioModern(t *testing.T) {
	s := startStdio(t, time.Second)
	s.expect(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+env+`}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"stdlib-floor","version":"1.0.0"}},"cacheScope":"public","capabilities":{"tools":{}},"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"ttlMs":0}}`)
	s.expect(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},`+env+`}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[{"type":"text","text":"hi"}],`+serverTag+`}}`)
	s.expect(`{"jsonrpc":"2.0","id":3,"method":"ping","params":{`+env+`}}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found: ping"}}`)
	s.expect(`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{`+env+`}}`, `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: initialize"}}`)
	s.expect(`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32022,"message":"Unsupported protocol version: v9","data":{"requested":"v9","supported":["2026-07-28"]}}}`)
	s.expect(`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: params._meta.io.modelcontextprotocol/clientCapabilities must be an object"}}`)
}

// TestStdioCancellation: a cancelled call is never answered, in either
// era, and the server answers what comes next.
func TestStdioCancellation(t *testing.T) {
	s := startStdio(t, time.Second)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}}}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},` + env + `}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"test"}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`)
	s.expect(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":50}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"slept"}]}}`)
}

// TestStdioProgress: a sleep with a progress token sends progress before
// its result.
func TestStdioProgress(t *testing.T) {
	s := startStdio(t, time.Second)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1500},"_meta":{"progressToken":"p"}}}`)
	if got := s.recv(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":`) ||
		!strings.HasSuffix(got, `,"progressToken":"p","total":1500}}`) {
		t.Errorf("first line = %s, want progress", got)
	}
	if got := s.recv(); got != `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept"}]}}` {
		t.Errorf("second line = %s, want the result", got)
	}
}

// TestStdioEndOfInput: calls in flight when the input ends are answered
// within the grace period; the rest are cancelled.
func TestStdioEndOfInput(t *testing.T) {
	s := startStdio(t, 2*time.Second)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":100}}}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}}}`)
	s.in.Close()
	start := time.Now()
	if got := s.recv(); got != `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept"}]}}` {
		t.Errorf("got %s, want the short sleep's answer", got)
	}
	if s.out.Scan() {
		t.Errorf("got %s after the end of input; the long sleep must be cancelled unanswered", s.out.Text())
	}
	if err := <-s.done; err != nil {
		t.Errorf("serveStdio = %v", err)
	}
	s.done <- nil // for the cleanup
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to end", d)
	}
}

// httpClient talks to the handler.
type httpClient struct {
	t       *testing.T
	url     string
	session string
}

func startHTTP(t *testing.T) *httpClient {
	t.Helper()
	h := newHTTPHandler(&server{})
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		h.close()
	})
	return &httpClient{t: t, url: hs.URL + demo.EndpointPath}
}

func (c *httpClient) post(ctx context.Context, body string, headers ...string) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ""
		}
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *httpClient) legacy(body string) (int, string) {
	c.t.Helper()
	resp, b := c.post(context.Background(), body, "Mcp-Session-Id", c.session, "MCP-Protocol-Version", "2025-11-25")
	return resp.StatusCode, b
}

func modernHeaders(method, name string) []string {
	h := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method}
	if name != "" {
		h = append(h, "Mcp-Name", name)
	}
	return h
}

func TestHTTPLegacy(t *testing.T) {
	c := startHTTP(t)
	resp, body := c.post(context.Background(), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	c.session = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || len(c.session) != 32 || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %d %q %s", resp.StatusCode, c.session, body)
	}
	if code, b := c.legacy(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != 202 {
		t.Errorf("initialized: %d %s", code, b)
	}
	if code, b := c.legacy(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`); code != 200 ||
		b != `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}` {
		t.Errorf("echo: %d %s", code, b)
	}
	if code, b := c.legacy(`{"jsonrpc":"2.0","id":1,"method":"ping"`); code != 400 || !strings.Contains(b, "-32700") {
		t.Errorf("malformed: %d %s", code, b)
	}
	// Sessions: none is 400, an unknown one 404, DELETE ends it.
	if resp, _ := c.post(context.Background(), `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != 400 {
		t.Errorf("no session: %d", resp.StatusCode)
	}
	if resp, _ := c.post(context.Background(), `{"jsonrpc":"2.0","id":2,"method":"ping"}`, "Mcp-Session-Id", "nope"); resp.StatusCode != 404 {
		t.Errorf("unknown session: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodDelete, c.url, nil)
	req.Header.Set("Mcp-Session-Id", c.session)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Errorf("DELETE: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if code, _ := c.legacy(`{"jsonrpc":"2.0","id":3,"method":"ping"}`); code != 404 {
		t.Errorf("ended session: %d", code)
	}
}

// TestHTTPLegacyCancellation: a call cancelled by notifications/cancelled
// ends its stream without an answer.
func TestHTTPLegacyCancellation(t *testing.T) {
	c := startHTTP(t)
	resp, _ := c.post(context.Background(), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	c.session = resp.Header.Get("Mcp-Session-Id")
	answered := make(chan string, 1)
	// Ends when the POST does, which the cancellation below causes.
	go func() {
		_, b := c.legacy(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}}}`)
		answered <- b
	}()
	for {
		if code, _ := c.legacy(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`); code != 202 {
			t.Fatalf("cancellation: %d", code)
		}
		select {
		case b := <-answered:
			if b != "" {
				t.Errorf("cancelled call answered %q", b)
			}
			return
		case <-time.After(20 * time.Millisecond):
			// The cancellation may have overtaken the call: again.
		}
	}
}

func TestHTTPModern(t *testing.T) {
	c := startHTTP(t)
	echo := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + env + `}}`
	tests := []struct {
		name    string
		body    string
		headers []string
		status  int
		want    string
	}{
		{"echo", echo, modernHeaders("tools/call", "echo"), 200,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"hi"}],` + serverTag + `}}`},
		{"Mcp-Name in Base64", echo, modernHeaders("tools/call", "=?base64?ZWNobw==?="), 200,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"hi"}],` + serverTag + `}}`},
		{"Mcp-Name of another tool", echo, modernHeaders("tools/call", "greet"), 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: Mcp-Name header value \"greet\" does not match body value \"echo\""}}`},
		{"Mcp-Method of another method", echo, modernHeaders("tools/list", ""), 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: Mcp-Method header value \"tools/list\" does not match body value \"tools/call\""}}`},
		{"no envelope", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, modernHeaders("tools/list", ""), 400,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: a 2026-07-28 request needs the envelope in params._meta"}}`},
		{"ping", `{"jsonrpc":"2.0","id":3,"method":"ping","params":{` + env + `}}`, modernHeaders("ping", ""), 404,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found: ping"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			resp, b := c.post(context.Background(), tt.body, tt.headers...)
			if resp.StatusCode != tt.status || b != tt.want || resp.Header.Get("Mcp-Session-Id") != "" {
				t.Errorf("got %d %s (session %q)\nwant %d %s", resp.StatusCode, b, resp.Header.Get("Mcp-Session-Id"), tt.status, tt.want)
			}
		})
	}
}

// TestHTTPModernProgressAndDisconnect: progress turns the answer into an
// event stream; a client that closes its stream cancels the call (the
// leak check at the end would see a sleeping handler).
func TestHTTPModernProgressAndDisconnect(t *testing.T) {
	c := startHTTP(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1200},"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp, b := c.post(context.Background(), body, modernHeaders("tools/call", "sleep")...)
	if resp.Header.Get("Content-Type") != "text/event-stream" || !strings.Contains(b, `"method":"notifications/progress"`) ||
		!strings.HasSuffix(b, `data: {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"slept"}],`+serverTag+"}}\n\n") {
		t.Errorf("got %s: %s", resp.Header.Get("Content-Type"), b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	sleep := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},` + env + `}}`
	if resp, _ := c.post(ctx, sleep, modernHeaders("tools/call", "sleep")...); resp != nil {
		t.Errorf("a 600 s sleep answered: %d", resp.StatusCode)
	}
}

func TestParseEdgeCases(t *testing.T) {
	tests := []struct {
		give      string
		wantReply string
		request   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "", false},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}`, "", true},
		{`{"jsonrpc":"2.0","method":"x","params":5}`, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":5}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: json: cannot unmarshal number into Go struct field message.params of type main.params"}}`, false},
		{`{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: no method"}}`, false},
	}
	for _, tt := range tests {
		m, reply := parse([]byte(tt.give))
		if string(reply) != tt.wantReply || (m != nil && m.Method != "") != tt.request {
			t.Errorf("parse(%s) = %+v, %s; want reply %s", tt.give, m, reply, tt.wantReply)
		}
	}
}
