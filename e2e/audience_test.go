package e2e_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// audienceVerifier accepts the token "aud:<URI>" when <URI> is the resource the transport says
// the request was sent to, as a real verifier checks a token's aud against it.
var audienceVerifier = toolgrain.TokenVerifierFunc(func(ctx context.Context, token string) (*toolgrain.Identity, error) {
	aud, ok := strings.CutPrefix(token, "aud:")
	if !ok || aud != toolgrain.ResourceFromContext(ctx) {
		return nil, toolgrain.ErrInvalidToken
	}
	return &toolgrain.Identity{Subject: "user"}, nil
})

// TestAudienceConfig: with auth, a Resource that is not an absolute URL takes the endpoint's host
// from each request, so NewServer refuses it unless AllowedHosts lists the names it may take;
// a Resource that is neither a path nor an absolute URL is refused too.
func TestAudienceConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		resource string
		hosts    []string
		err      string
	}{
		{"", nil, `Resource "" is not an absolute URL and HTTPConfig.AllowedHosts is empty`},
		{"/mcp", nil, `Resource "/mcp" is not an absolute URL and HTTPConfig.AllowedHosts is empty`},
		{"mcp.example.com/mcp", nil, `Resource "mcp.example.com/mcp" is neither an absolute http(s) URL nor a path`},
		{"ftp://mcp.example.com/mcp", nil, `is neither an absolute http(s) URL nor a path`},
		{"https:///mcp", nil, `is neither an absolute http(s) URL nor a path`},
		{"https://mcp.example.com/mcp", nil, ""},
		{"/mcp", []string{"mcp.example.com"}, ""},
		{"", []string{"localhost"}, ""},
	} {
		srv, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{AllowedHosts: tc.hosts,
			Auth: &toolgrain.AuthConfig{Verifier: audienceVerifier, Resource: tc.resource}}})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Resource %q, AllowedHosts %q: %v", tc.resource, tc.hosts, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Resource %q, AllowedHosts %q: %v, want an error containing %q", tc.resource, tc.hosts, err, tc.err)
		}
		if err == nil {
			_ = srv.Close()
		}
	}
}

// TestAudienceLoopbackPort: on a loopback connection the endpoint's URI takes the loopback name
// of the Host header with the connection's own port: a token issued for a server on another
// port of the machine, replayed with that port in Host, is refused.
func TestAudienceLoopbackPort(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{AllowedHosts: []string{"localhost"},
		Auth: &toolgrain.AuthConfig{Verifier: audienceVerifier, Resource: "/mcp"}}})
	port := e.ts.Listener.Addr().(*net.TCPAddr).Port
	other := strconv.Itoa(port + 1)
	own := "localhost:" + strconv.Itoa(port)
	for _, tc := range []struct {
		host, aud string
		status    int
	}{
		{own, "http://" + own + "/mcp", 200},
		{"127.0.0.1:" + strconv.Itoa(port), "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp", 200},
		{"localhost:" + other, "http://localhost:" + other + "/mcp", 401},
		{"localhost:" + other, "http://" + own + "/mcp", 200}, // the listener's own URI
	} {
		c := e.Session()
		c.Token = "aud:" + tc.aud
		if r := c.Post(mcptest.InitRequest, "Host", tc.host); r.Status != tc.status {
			t.Errorf("Host %s, token for %s: %d %s %s, want %d", tc.host, tc.aud, r.Status, r.Header.Get("WWW-Authenticate"), r.Body, tc.status)
		}
	}
	// The metadata says the same.
	req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/.well-known/oauth-protected-resource/mcp", nil)
	req.Host = "localhost:" + other
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if want := `"resource":"http://` + own + `/mcp"`; !strings.Contains(string(b), want) {
		t.Errorf("metadata for Host localhost:%s: %s, want %s", other, b, want)
	}
}

// nonLoopbackIP returns an address of this machine that is not a loopback one, or skips.
func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			if l, err := net.Listen("tcp", net.JoinHostPort(n.IP.String(), "0")); err == nil {
				_ = l.Close()
				return n.IP
			}
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address to listen on")
	return nil
}

// TestAudienceBeyondLoopback: on a connection to a non-loopback address, a token issued for
// another server is refused when the Host header names that server: with the Resource a path,
// the Host must be one AllowedHosts lists (403 otherwise, before any verification); with an
// absolute Resource, the Host does not matter.
func TestAudienceBeyondLoopback(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP(t)
	serve := func(cfg toolgrain.HTTPConfig) *httpEnv {
		srv, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools(), HTTP: cfg})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/mcp", srv.Handler())
		ts := httptest.NewUnstartedServer(mux)
		l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		ts.Listener = l
		ts.Start()
		e := &httpEnv{HTTP: &mcptest.HTTP{T: t, URL: ts.URL + "/mcp", Client: &http.Client{Timeout: mcptest.Watchdog}}, srv: srv, ts: ts}
		t.Cleanup(func() { _ = srv.Close(); ts.Close(); e.Client.CloseIdleConnections() })
		return e
	}
	const other = "http://other-server.example/mcp"
	listed := serve(toolgrain.HTTPConfig{AllowedHosts: []string{"mcp.example"},
		Auth: &toolgrain.AuthConfig{Verifier: audienceVerifier, Resource: "/mcp"}})
	absolute := serve(toolgrain.HTTPConfig{Auth: &toolgrain.AuthConfig{Verifier: audienceVerifier, Resource: "https://mcp.example/mcp"}})
	for _, tc := range []struct {
		name        string
		e           *httpEnv
		host, token string
		status      int
	}{
		{"listed: Host of the other server", listed, "other-server.example", "aud:" + other, 403},
		{"listed: own Host, the other server's token", listed, "mcp.example", "aud:" + other, 401},
		{"listed: own Host, own token", listed, "mcp.example", "aud:http://mcp.example/mcp", 200},
		{"absolute: Host of the other server", absolute, "other-server.example", "aud:" + other, 401},
		{"absolute: own token", absolute, "other-server.example", "aud:https://mcp.example/mcp", 200},
	} {
		c := tc.e.Session()
		c.Token = tc.token
		if r := c.Post(mcptest.InitRequest, "Host", tc.host); r.Status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, r.Status, r.Body, tc.status)
		}
	}
}

// TestSSEAudience: every request of an HTTP+SSE session is checked for one audience, the URL the
// client connected to: a stream opened at /sse has the resource of /sse (the scheme and host of
// Resource, or of the request when Resource is a path or empty), on its GET and on every POST to
// /messages, and its challenges name the metadata of /sse, whose document says so, as the
// TypeScript SDK's SSEClientTransport expects (it asks for a token for its URL, and refuses
// metadata whose resource is not that URL or a prefix of it). A stream opened on the MCP
// endpoint, a client falling back, has the endpoint's resource throughout.
func TestSSEAudience(t *testing.T) {
	t.Parallel()
	for _, resource := range []string{"", "/mcp", "https://mcp.example.com/mcp"} {
		t.Run("Resource "+resource, func(t *testing.T) {
			e := startHTTP(t, toolgrain.Config{Tools: demo.Tools(), HTTP: toolgrain.HTTPConfig{AllowedHosts: []string{"127.0.0.1"},
				Auth: &toolgrain.AuthConfig{Verifier: audienceVerifier, Resource: resource}}})
			origin := e.ts.URL
			if strings.HasPrefix(resource, "https:") {
				origin = "https://mcp.example.com"
			}
			endpoint := origin + "/mcp" // Resource's, or with none the request's own path
			for _, tc := range []struct{ path, aud, other string }{
				{"/sse", origin + "/sse", endpoint},
				{"/mcp", endpoint, origin + "/sse"},
			} {
				// The challenges of the GET and of a POST of the session name the same metadata.
				metadata := origin + "/.well-known/oauth-protected-resource" + strings.TrimPrefix(tc.aud, origin)
				_, resp := e.getSSE(tc.path)
				if h := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(h, `resource_metadata="`+metadata+`"`) {
					t.Errorf("GET %s without a token: %d %s, want 401 naming %s", tc.path, resp.StatusCode, h, metadata)
				}
				if _, resp := e.getSSE(tc.path, "Authorization", "Bearer aud:"+tc.other); resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("GET %s with a token for %s: %d, want 401", tc.path, tc.other, resp.StatusCode)
				}
				c := e.openSSE(tc.path, "Authorization", "Bearer aud:"+tc.aud)
				c.initialize()
				c.expect(pingRequest, pingResult)
				r := c.send(pingRequest, "Authorization", "")
				if h := r.Header.Get("WWW-Authenticate"); r.Status != http.StatusUnauthorized || !strings.Contains(h, `resource_metadata="`+metadata+`"`) {
					t.Errorf("POST %s without a token: %d %s, want 401 naming %s", c.post, r.Status, h, metadata)
				}
				if r := c.send(pingRequest, "Authorization", "Bearer aud:"+tc.other); r.Status != http.StatusUnauthorized {
					t.Errorf("POST %s with a token for %s: %d %s, want 401", c.post, tc.other, r.Status, r.Body)
				}
				c.expect(pingRequest, pingResult)

				// The metadata the challenges name says the resource the tokens are checked for.
				req, _ := http.NewRequest(http.MethodGet, e.ts.URL+strings.TrimPrefix(metadata, origin), nil)
				mresp, err := e.Client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(mresp.Body)
				mresp.Body.Close()
				if want := `"resource":"` + tc.aud + `"`; !strings.Contains(string(b), want) {
					t.Errorf("metadata %s: %s, want %s", metadata, b, want)
				}
			}
			// Streamable HTTP is checked for the endpoint's resource, as before.
			s := e.Session()
			s.Token = "aud:" + endpoint
			s.Initialize()
		})
	}
}
