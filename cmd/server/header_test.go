package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestBinaryHeaderBound: the binary's listeners, the MCP endpoint's and the admin one, bound a
// request's header at maxHeaderBytes: a larger one gets 431 before any handler runs, while the
// largest header a real MCP request carries (a bearer token at the transport's 16 KiB cap with
// 32 KiB of Mcp-Param-* headers beside it) is served.
func TestBinaryHeaderBound(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	token := strings.Repeat("t", 16<<10)
	b := startHTTPBinary(t, "--auth-token", token, "--admin-addr", "127.0.0.1:0", "--log-level", "info")
	admin := ""
	for _, line := range strings.Split(b.stderr.String(), "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "admin" {
			admin = "http://" + rec.Addr
		}
	}
	if admin == "" {
		t.Fatalf("no admin line:\n%s", b.stderr.String())
	}
	do := func(method, url, body string, header http.Header) int {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	mcp := func(extra map[string]string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
			"Authorization": {"Bearer " + token}}
		for k, v := range extra {
			h.Set(k, v)
		}
		return h
	}
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	params := map[string]string{}
	for i := range 32 {
		params["Mcp-Param-P"+strconv.Itoa(i)] = strings.Repeat("v", 1<<10-32)
	}
	if got := do(http.MethodPost, b.base+"/mcp", initialize, mcp(params)); got != http.StatusOK {
		t.Errorf("a 16 KiB token and 32 KiB of Mcp-Param-*: %d, want 200", got)
	}
	// net/http reads up to 4 KiB beyond the bound before it refuses: 8 KiB beyond is refused.
	big := strings.Repeat("x", maxHeaderBytes+8<<10)
	if got := do(http.MethodPost, b.base+"/mcp", initialize, mcp(map[string]string{"X-Big": big})); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("MCP endpoint, a %d-byte header: %d, want 431", len(big), got)
	}
	if got := do(http.MethodGet, admin+"/healthz", "", http.Header{}); got != http.StatusOK {
		t.Errorf("admin /healthz: %d, want 200", got)
	}
	if got := do(http.MethodGet, admin+"/healthz", "", http.Header{"X-Big": {big}}); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("admin /healthz, a %d-byte header: %d, want 431", len(big), got)
	}
}
