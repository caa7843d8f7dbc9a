package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// headerLog records the Authorization header of every request an upstream gets.
type headerLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *headerLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Get("Authorization"))
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (l *headerLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// httpUpstream serves in (a toolgrain server) over HTTP, recording what it is sent.
func httpUpstream(t *testing.T, in *toolgrain.Server) (*httptest.Server, *headerLog) {
	t.Helper()
	log := &headerLog{}
	ts := httptest.NewServer(log.wrap(in.Handler()))
	t.Cleanup(ts.Close)
	return ts, log
}

// A toolgrain server over HTTP, in each way the gateway can speak to it: Streamable HTTP in
// either era, and the old HTTP+SSE transport. Listing, calls, the error model and cancellation.
func TestHTTPUpstreams(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, transport, protocol, version string
	}{
		{"streamable modern", "http", "", protocol.LatestModernVersion},
		{"streamable legacy", "http", "legacy", "2025-11-25"},
		{"sse", "sse", "", "2025-11-25"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := metrics.NewMemory()
			in := innerWith(t, rec)
			ts, _ := httpUpstream(t, in)
			f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "web", Protocol: c.protocol,
				Source: gateway.HTTP{URL: ts.URL + "/mcp", Transport: c.transport}})
			if st := f.gw.Status()[0]; st.ProtocolVersion != c.version {
				t.Errorf("version %q, want %q", st.ProtocolVersion, c.version)
			}
			if names := toolNames(t, f.c); !slices.Contains(names, "web_echo") {
				t.Fatalf("tools: %v", names)
			}
			if got := text(f.call(t, "web_echo", `{"text":"over http"}`)); got != "over http" {
				t.Errorf("echo: %q", got)
			}
			if r := f.call(t, "web_fail", `{"mode":"panic"}`); text(r) != toolgrain.FailedText {
				t.Errorf("fail: %+v", r)
			}
			raw, err := f.c.Call(ctxT(t), protocol.MethodResourcesRead, map[string]string{"uri": "data://web/users"})
			if err != nil || !strings.Contains(string(raw), "ada, grace") {
				t.Errorf("read: %s %v", raw, err)
			}

			// Cancellation reaches the upstream: the request's stream closed (modern), or
			// notifications/cancelled (legacy, sse).
			ctx, cancel := context.WithCancel(ctxT(t))
			done := make(chan error, 1)
			go func() {
				_, err := f.c.Call(ctx, protocol.MethodToolsCall, json.RawMessage(`{"name":"web_sleep","arguments":{"ms":60000},"_meta":{"progressToken":1}}`))
				done <- err
			}()
			nextNotification(t, f.c, protocol.MethodProgress)
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			mcptest.Eventually(t, "the upstream's call cancelled", func() bool { return rec.Snapshot().Cancellations() == 1 })
			if got := text(f.call(t, "web_echo", `{"text":"after"}`)); got != "after" {
				t.Errorf("echo after: %q", got)
			}
			drainProgress(t, f.c)
			if f.reps.count() != 0 {
				t.Errorf("reports: %v", f.reps.errs)
			}

			// A list change of the upstream reaches the front's clients.
			in.RemoveTools("spin")
			waitTools(t, f.c, func(names []string) bool { return !slices.Contains(names, "web_spin") })
		})
	}
}

// The client's token never reaches an upstream: each upstream gets its own credentials, from a
// header value read from the environment.
func TestHTTPTokenNeverForwarded(t *testing.T) {
	in := inner(t)
	ts, seen := httpUpstream(t, in)
	t.Setenv("UPSTREAM_TOKEN", "upstream-secret")
	reps := newReports()
	front, err := toolgrain.NewServer(toolgrain.Config{OnError: reps.onError, HTTP: toolgrain.HTTPConfig{Auth: &toolgrain.AuthConfig{
		Verifier: toolgrain.TokenVerifierFunc(func(_ context.Context, token string) (*toolgrain.Identity, error) {
			if token != "client-secret" {
				return nil, toolgrain.ErrInvalidToken
			}
			return &toolgrain.Identity{Subject: "alice"}, nil
		}),
		Resource: "http://127.0.0.1/mcp",
	}, AllowedHosts: []string{"127.0.0.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	gw, err := gateway.New(front, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if err := gw.Mount(gateway.Mount{Name: "web", Source: gateway.HTTP{URL: ts.URL + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${env:UPSTREAM_TOKEN}"}}}); err != nil {
		t.Fatal(err)
	}
	if err := gw.WaitReady(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	fs := httptest.NewServer(front.Handler())
	defer fs.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"web_echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, fs.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer client-secret")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", protocol.LatestModernVersion)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "web_echo")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	_, _ = io.Copy(&out, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(out.String(), `"text":"x"`) {
		t.Fatalf("call: %d %s", resp.StatusCode, out.String())
	}
	got := seen.all()
	if len(got) == 0 {
		t.Fatal("the upstream got nothing")
	}
	for _, h := range got {
		if h != "Bearer upstream-secret" {
			t.Errorf("the upstream got Authorization %q", h)
		}
	}
}

// A 2026-07-28 upstream over HTTP whose tool mirrors an argument into a header
// (x-mcp-header): the gateway sends the Mcp-Param-* header the upstream checks.
func TestHTTPHeaderArguments(t *testing.T) {
	t.Parallel()
	up, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{{
		Name: "weather", Description: "Weather by region.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"days":{"type":"integer","x-mcp-header":"Days"}},"required":["region"]}`),
		Handler: tools.HandlerFunc(func(_ context.Context, req *tools.Request) (*tools.Result, error) {
			return tools.TextResult(string(req.Arguments)), nil
		}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	ts, _ := httpUpstream(t, up)
	f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "w", Source: gateway.HTTP{URL: ts.URL + "/mcp"}})
	if st := f.gw.Status()[0]; st.ProtocolVersion != protocol.LatestModernVersion {
		t.Fatalf("status: %+v", st)
	}
	for _, args := range []string{`{"region":"eu-west"}`, `{"region":"Zürich ","days":3}`} {
		if r := f.call(t, "w_weather", args); r.IsError || text(r) != args {
			t.Errorf("%s: %+v (reports %q)", args, r, f.reps.errs)
		}
	}
}
