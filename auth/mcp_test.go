package auth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/tools"
)

// mcpServer is a toolgrain server over Streamable HTTP at /mcp, with bearer auth by the
// verifier under test and two tools: whoami answers "<subject> <scopes>", admin_only (which
// needs the scope admin) answers "ran".
type mcpServer struct {
	t        testing.TB
	srv      *toolgrain.Server
	ts       *httptest.Server
	hc       *http.Client
	resource string

	mu      sync.Mutex
	reports []error
	ran     int // admin_only runs
}

type mcpOptions struct {
	scopes []string // AuthConfig.Scopes
	hide   bool     // Config.HideForbiddenTools
}

func startMCP(t testing.TB, v toolgrain.TokenVerifier, opt mcpOptions) *mcpServer {
	t.Helper()
	m := &mcpServer{t: t}
	whoami := tools.Tool{Name: "whoami", Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		id := tools.IdentityFromContext(ctx)
		return tools.TextResult(id.Subject + " " + strings.Join(id.Scopes, ",")), nil
	})}
	admin := tools.Tool{Name: "admin_only", Scopes: []string{"admin"}, Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		m.mu.Lock()
		m.ran++
		m.mu.Unlock()
		return tools.TextResult("ran"), nil
	})}
	mux := http.NewServeMux()
	m.ts = httptest.NewServer(mux)
	m.resource = m.ts.URL + "/mcp"
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools: []tools.Tool{whoami, admin},
		OnError: func(err error, _ *diagnostics.ToolErrorDetails) {
			m.mu.Lock()
			m.reports = append(m.reports, err)
			m.mu.Unlock()
		},
		HideForbiddenTools: opt.hide,
		HTTP: toolgrain.HTTPConfig{AllowedHosts: []string{"127.0.0.1"}, Auth: &toolgrain.AuthConfig{
			Verifier: v,
			Scopes:   opt.scopes,
			Resource: "/mcp",
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.srv = srv
	mux.Handle("/mcp", srv.Handler())
	mux.Handle("/.well-known/oauth-protected-resource/mcp", srv.ResourceMetadataHandler())
	m.hc = &http.Client{Timeout: 30 * time.Second}
	t.Cleanup(m.close)
	return m
}

func (m *mcpServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	m.ts.Close()
	m.hc.CloseIdleConnections()
}

// flushReports waits until the server's OnError queue is flushed (Shutdown does that) and
// returns what it got. The server is unusable afterwards.
func (m *mcpServer) flushReports() []error {
	m.close()
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]error(nil), m.reports...)
}

func (m *mcpServer) runs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ran
}

// reply is an HTTP answer.
type reply struct {
	status int
	header http.Header
	body   string
}

func (m *mcpServer) post(token, body string, headers ...string) reply {
	m.t.Helper()
	req, err := http.NewRequest(http.MethodPost, m.ts.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		m.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: strings.TrimSpace(string(b))}
}

const envelope = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// call makes a modern (MCP 2026-07-28) tools/call of tool with token.
func (m *mcpServer) call(token, tool string) reply {
	m.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{},%s}}`, tool, envelope)
	return m.post(token, body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool)
}

// list makes a modern tools/list with token and returns the tools' names.
func (m *mcpServer) list(token string) []string {
	m.t.Helper()
	r := m.post(token, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+envelope+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")
	var res struct {
		Result struct {
			Tools []struct{ Name string }
		}
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &res) != nil {
		m.t.Fatalf("tools/list: %d %s", r.status, r.body)
	}
	var names []string
	for _, tl := range res.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// legacy is a 2025-11-25 session opened with token.
type legacy struct {
	m       *mcpServer
	token   string
	session string
}

func (m *mcpServer) openSession(token string) *legacy {
	m.t.Helper()
	r := m.post(token, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != 200 || sid == "" {
		m.t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	l := &legacy{m: m, token: token, session: sid}
	l.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return l
}

func (l *legacy) post(body string) reply {
	l.m.t.Helper()
	return l.m.post(l.token, body, "Mcp-Session-Id", l.session, "MCP-Protocol-Version", "2025-11-25")
}

func (l *legacy) call(id int, tool string) reply {
	l.m.t.Helper()
	return l.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool))
}

// textOf returns the text of the first content block of a tools/call result in body, or "".
func textOf(body string) string {
	var r struct {
		Result struct {
			Content []struct{ Text string }
		}
	}
	if json.Unmarshal([]byte(body), &r) != nil || len(r.Result.Content) == 0 {
		return ""
	}
	return r.Result.Content[0].Text
}
