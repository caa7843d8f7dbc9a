package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// rawConn is one HTTP/1.1 connection to the server, spoken by hand.
type rawConn struct {
	t    *testing.T
	addr string
	conn net.Conn
	br   *bufio.Reader
}

func dialServer(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := tryDial(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryDial connects, or returns the error of a connection refused (reset) at once.
func tryDial(t *testing.T, addr string) (*rawConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, addr: addr, conn: c, br: bufio.NewReader(c)}, nil
}

// listen opens a listen stream on a new connection, or returns the error of a connection the
// server refused.
func listen(t *testing.T, addr string) (*rawConn, *http.Response, error) {
	c, err := tryDial(t, addr)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.post(listenBody, listenHeaders)
	return c, resp, err
}

// post sends a POST of body with the headers and returns the response (its body unread), or
// the error of a connection that was refused or broke.
func (c *rawConn) post(body string, hdr map[string]string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+c.addr+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	_ = c.conn.SetDeadline(time.Now().Add(5 * time.Second))
	defer func() { _ = c.conn.SetDeadline(time.Time{}) }()
	if err := req.Write(c.conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(c.br, req)
}

const listenBody = `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

var listenHeaders = map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}

// TestOutOfFileDescriptors runs the server with a limit of 64 open files and opens
// subscriptions/listen streams, one connection each, until the server has no descriptor left:
// then a new connection is refused at once, the server says so in its log, and every client
// already connected is still served (a change reaches each of them, over a connection opened
// before); once some clients leave, new connections are served again.
func TestOutOfFileDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	// ulimit sets the soft and the hard limit, so the Go runtime cannot raise it.
	b := startHTTPCommand(t, exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, bin,
		"--transport", "http", "--addr", "127.0.0.1:0", "--touch-tool"))
	addr := strings.TrimPrefix(b.base, "http://")

	// The control connection, opened first and kept: a legacy session on it.
	ctl := dialServer(t, addr)
	resp, err := ctl.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	session := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"}

	var streams []*mcptest.EventReader
	var conns []*rawConn
	for len(streams) < 200 {
		c, resp, err := listen(t, addr)
		if err != nil {
			break // refused: no descriptor for it
		}
		br := mcptest.NewEventReader(resp.Body)
		if ev, err := br.NextData(); err != nil || !strings.Contains(ev, "acknowledged") {
			t.Fatalf("stream %d: %q %v", len(streams), ev, err)
		}
		streams, conns = append(streams, br), append(conns, c)
	}
	if len(streams) < 20 || len(streams) >= 200 {
		t.Fatalf("%d streams opened under a limit of 64 files", len(streams))
	}
	t.Logf("%d streams open when descriptors ran out", len(streams))

	// The log says so.
	deadline := time.After(10 * time.Second)
	for found := false; !found; {
		select {
		case line, ok := <-b.lines:
			if !ok {
				t.Fatal("the server exited")
			}
			found = strings.Contains(line, "out of file descriptors: refusing new connections")
		case <-deadline:
			t.Fatal("no log line about the refused connections within 10 s")
		}
	}
	// A new connection is refused at once, not left waiting.
	start := time.Now()
	if _, _, err := listen(t, addr); err == nil {
		t.Fatal("a new connection was served with no descriptor left")
	} else if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("refused after %v: %v", d, err)
	}

	// Connected clients are served: a call on the control connection changes the tool list,
	// and every stream hears of it.
	resp, err = ctl.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"touch","arguments":{"list":"tools"}}}`, session)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "tools list changed") {
		t.Fatalf("touch: %s", body)
	}
	for i, br := range streams {
		_ = conns[i].conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		ev, err := br.NextData()
		if err != nil || !strings.Contains(ev, "notifications/tools/list_changed") {
			t.Fatalf("stream %d: %q %v", i, ev, err)
		}
	}

	// Some clients leave: new connections are served again.
	for _, c := range conns[:5] {
		_ = c.conn.Close()
	}
	for tries := 1; ; tries++ {
		_, resp, err := listen(t, addr)
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if tries == 100 { // 10 s
			t.Fatalf("no connection served after clients left: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := b.stop(); err != nil {
		t.Errorf("exit: %v", err)
	}
}
