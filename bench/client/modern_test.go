package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/internal/fakemcp"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// envelope is the _meta every modern request must carry.
const envelope = `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`

func discover(tb testing.TB, c *client.Client) {
	tb.Helper()
	if err := c.Discover(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// metaOf returns the request's params._meta, re-encoded with sorted keys.
func metaOf(tb testing.TB, r fakemcp.Request) string {
	tb.Helper()
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(r.Params, &p); err != nil {
		tb.Fatalf("%s params %s: %v", r.Method, r.Params, err)
	}
	if p.Meta == nil {
		return ""
	}
	b, _ := json.Marshal(p.Meta)
	return string(b)
}

// checkModernHeaders asserts the headers of a modern HTTP request: the
// revision, the method, the name when the method has one, and no session.
func checkModernHeaders(t *testing.T, r fakemcp.Request, name string) {
	t.Helper()
	h := r.Header
	if h == nil {
		return // stdio
	}
	if h.Get("MCP-Protocol-Version") != "2026-07-28" || h.Get("Mcp-Method") != r.Method || h.Get("Mcp-Name") != name {
		t.Errorf("%s headers = %v, want MCP-Protocol-Version 2026-07-28, Mcp-Method %s, Mcp-Name %q", r.Method, h, r.Method, name)
	}
	if v := h.Get("Mcp-Session-Id"); v != "" {
		t.Errorf("%s carried the session id %q", r.Method, v)
	}
}

func TestDiscover(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, srv := tr.dial(t, fakemcp.Options{})
			discover(t, c)
			if c.Era() != client.Modern || c.Negotiated() != "2026-07-28" || c.PingMethod() != "server/discover" {
				t.Errorf("Era %q, Negotiated %q, PingMethod %q; want modern, 2026-07-28, server/discover", c.Era(), c.Negotiated(), c.PingMethod())
			}
			var info struct{ Name string }
			if err := json.Unmarshal(c.ServerInfo(), &info); err != nil || info.Name != "fakemcp" {
				t.Errorf("ServerInfo() = %s, want the identity in the discover result's _meta", c.ServerInfo())
			}
			got := srv.Received()
			if len(got) != 1 || got[0].Method != "server/discover" || string(got[0].ID) != "0" {
				t.Fatalf("server received %+v, want server/discover with id 0 alone (no initialize)", got)
			}
			if m := metaOf(t, got[0]); m != envelope {
				t.Errorf("server/discover _meta = %s, want %s", m, envelope)
			}
			checkModernHeaders(t, got[0], "")
		})
	}
}

func TestModernRequests(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, srv := tr.dial(t, fakemcp.Options{})
			discover(t, c)
			res, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "hi"})
			if err != nil || res.Text() != "hi" {
				t.Fatalf("echo = %+v, %v", res, err)
			}
			raw := json.RawMessage(`{"name":"echo","arguments":{"text":"raw"}}`)
			if msg, err := c.Call(context.Background(), "tools/call", raw); err != nil || msg.Error != nil {
				t.Fatalf("echo with pre-encoded params = %+v, %v", msg, err)
			}
			// A name that is not printable ASCII goes in Base64; the fake
			// checks the header before it finds no such tool.
			msg, err := c.Call(context.Background(), "tools/call", map[string]any{"name": "é", "arguments": map[string]any{}})
			if err != nil || msg.Error == nil || msg.Error.Code != -32602 {
				t.Errorf("call of tool é = %+v, %v; want -32602 unknown tool (not -32020)", msg, err)
			}
			if _, err := c.Call(context.Background(), c.PingMethod(), nil); err != nil {
				t.Errorf("ping by %s: %v", c.PingMethod(), err)
			}
			got := srv.Received()
			if len(got) != 5 {
				t.Fatalf("server received %d messages, want 5", len(got))
			}
			for i, name := range []string{"", "echo", "echo", "é", ""} {
				if m := metaOf(t, got[i]); m != envelope {
					t.Errorf("message %d (%s) _meta = %s, want %s", i, got[i].Method, m, envelope)
				}
				if got[i].Header != nil && name == "é" {
					if h := got[i].Header.Get("Mcp-Name"); h != "=?base64?w6k=?=" {
						t.Errorf("Mcp-Name = %q, want =?base64?w6k=?=", h)
					}
					continue
				}
				checkModernHeaders(t, got[i], name)
			}
		})
	}
}

// TestModernIgnoresSessionID: a session id a server hands out anyway is
// never sent back, and the client deletes no session at the end.
func TestModernIgnoresSessionID(t *testing.T) {
	srv := fakemcp.New(fakemcp.Options{})
	var deletes int
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			deletes++
		}
		w.Header().Set("Mcp-Session-Id", "unwanted")
		srv.Handler().ServeHTTP(w, r)
	}))
	defer func() { srv.Close(); hs.Close() }()
	c, err := client.DialHTTP(hs.URL, client.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	discover(t, c)
	if _, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, r := range srv.Received() {
		if v := r.Header.Get("Mcp-Session-Id"); v != "" {
			t.Errorf("%s carried the session id %q", r.Method, v)
		}
	}
	if deletes != 0 {
		t.Errorf("%d DELETE requests; the modern era has no session to end", deletes)
	}
}

func TestModernCancel(t *testing.T) {
	for _, tr := range transports {
		for _, answer := range []bool{false, true} {
			name := tr.name + "/silent"
			if answer {
				name = tr.name + "/answers_cancelled"
			}
			t.Run(name, func(t *testing.T) {
				c, srv := tr.dial(t, fakemcp.Options{AnswerCancelled: answer})
				discover(t, c)
				call := startSleep(t, c, srv)
				var calls []*client.Call
				for range 20 {
					cl, err := c.Start("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 600000}})
					if err != nil {
						t.Fatal(err)
					}
					calls = append(calls, cl)
				}
				if err := c.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				mcptest.Eventually(t, "the server has every call", func() bool { return len(srv.Received()) >= 2+len(calls) })
				if sent, err := c.Cancel(context.Background(), call, "test"); err != nil || !sent {
					t.Fatalf("Cancel = %v, %v", sent, err)
				}
				if n, err := c.CancelMany(context.Background(), calls, "test", 4); err != nil || n != len(calls) {
					t.Fatalf("CancelMany = %d, %v; want %d", n, err, len(calls))
				}
				total := int64(len(calls) + 1)
				cancels := func() int {
					n := 0
					for _, r := range srv.Received() {
						if r.Method == "notifications/cancelled" {
							n++
							if metaOf(t, r) != "" {
								t.Errorf("a cancellation carries an envelope: %s", r.Params)
							}
						}
					}
					return n
				}
				if strings.HasPrefix(tr.name, "http") {
					// Cancelled by closing the streams, which CancelMany
					// waited for; no notification at all.
					if n := cancels(); n != 0 {
						t.Errorf("%d notifications/cancelled over modern HTTP, want none", n)
					}
					mcptest.Eventually(t, "the server saw every stream close", func() bool { return srv.Disconnects() == int(total) })
					st := c.Stats()
					if st.ClosedByClient != total || st.Late != 0 || st.Open != 0 || st.QuietCloses != 0 {
						t.Errorf("stats = %+v, want %d streams closed by the client and nothing else", st, total)
					}
					return
				}
				// Over a pipe, the fake may handle a line after the write
				// returned.
				mcptest.Eventually(t, "the server has every cancellation", func() bool { return cancels() == int(total) })
				if answer {
					mcptest.Eventually(t, "every late response is counted", func() bool { return c.Stats().Late == total })
				} else if _, err := c.Call(context.Background(), c.PingMethod(), nil); err != nil || c.Stats().Open != total {
					t.Errorf("Open = %d, %v; want %d cancelled calls never answered", c.Stats().Open, err, total)
				}
			})
		}
	}
}

func TestNotModern(t *testing.T) {
	tests := []struct {
		name string
		opts fakemcp.Options
	}{
		{"legacy only", fakemcp.Options{LegacyOnly: true}},
		{"discover without 2026-07-28", fakemcp.Options{DiscoverVersions: []string{"2025-11-25"}}},
	}
	for _, tr := range transports {
		for _, tt := range tests {
			t.Run(tr.name+"/"+tt.name, func(t *testing.T) {
				c, _ := tr.dial(t, tt.opts)
				err := c.Discover(context.Background())
				if !errors.Is(err, client.ErrNotModern) {
					t.Errorf("Discover = %v, want ErrNotModern", err)
				}
			})
		}
	}
	// A server that is not there is not a legacy server.
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL
	hs.Close()
	c, err := client.DialHTTP(url, client.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Discover(context.Background()); err == nil || errors.Is(err, client.ErrNotModern) {
		t.Errorf("Discover of a closed port = %v, want a transport error", err)
	}
}
