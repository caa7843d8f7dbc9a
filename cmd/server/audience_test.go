package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/oidctest"
)

// nonLoopbackIP returns an IPv4 address of this machine that is not a loopback one, or skips.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			if l, err := net.Listen("tcp", net.JoinHostPort(n.IP.String(), "0")); err == nil {
				_ = l.Close()
				return n.IP.String()
			}
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address to listen on")
	return ""
}

// TestBinaryAudienceNeedsResource: with auth on and no --resource (nor --allowed-host), the
// binary refuses to start on an address that is not a loopback one, naming --resource, since
// the tokens' audience would otherwise come from the Host header a client sends.
func TestBinaryAudienceNeedsResource(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	addrs := []string{"0.0.0.0:0", ":0"}
	if addrs2, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs2 {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				addrs = append(addrs, net.JoinHostPort(n.IP.String(), "0"))
				break
			}
		}
	}
	for _, addr := range addrs {
		for _, auth := range [][]string{{"--auth-issuer", "https://as.example"}, {"--auth-token", "t"}, {"--auth-token", "t", "--resource", "/mcp"}} {
			args := append([]string{"--transport", "http", "--addr", addr}, auth...)
			// A binary that starts serves until killed: 20 s is a start's worth of margin on a
			// loaded machine, and a refusal comes at once.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
			cancel()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "set --resource to the endpoint's public URL") {
				t.Errorf("%q: %v\n%s", args, err, out)
			}
		}
	}
}

// hostPost sends an initialize to url with the Host header host and the bearer token, and
// returns the status and the WWW-Authenticate header.
func hostPost(t *testing.T, url, host, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestBinaryAudienceFromTheListener runs the binary with a real issuer (oidc-provider) and no
// --resource or --auth-audience, so that the audience is each request's endpoint URI: on
// loopback, a token issued for a server on another port of the machine is refused when the
// Host header names that port; beyond loopback, with --allowed-host, a Host the list lacks is
// refused before the token is looked at, and a token for another server is refused whatever
// the Host.
func TestBinaryAudienceFromTheListener(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	as := oidctest.Start(t)
	token := func(aud string) string { return as.Token("mcp-client", "mcp-secret", "tools:call", aud) }

	local := startHTTPBinary(t, "--auth-issuer", as.Issuer)
	own := strings.TrimPrefix(local.base, "http://")
	_, port, _ := net.SplitHostPort(own)
	n, _ := strconv.Atoi(port)
	other := "localhost:" + strconv.Itoa(n+1)
	for _, tc := range []struct {
		host, aud string
		status    int
	}{
		{own, "http://" + own + "/mcp", 200},
		{"localhost:" + port, "http://localhost:" + port + "/mcp", 200},
		{other, "http://" + other + "/mcp", 401},
	} {
		if status, challenge := hostPost(t, local.base+"/mcp", tc.host, token(tc.aud)); status != tc.status {
			t.Errorf("loopback, Host %s, token for %s: %d %s, want %d", tc.host, tc.aud, status, challenge, tc.status)
		}
	}
	if err := local.stop(); err != nil {
		t.Errorf("exit: %v\n%s", err, local.stderr.String())
	}

	ip := nonLoopbackIP(t)
	wide := startHTTPBinary(t, "--addr", ip+":0", "--auth-issuer", as.Issuer, "--allowed-host", "mcp.example.test")
	for _, tc := range []struct {
		host, aud string
		status    int
	}{
		{"other-server.example", "http://other-server.example/mcp", 403},
		{"mcp.example.test", "http://other-server.example/mcp", 401},
		{"mcp.example.test", "http://mcp.example.test/mcp", 200},
	} {
		if status, challenge := hostPost(t, wide.base+"/mcp", tc.host, token(tc.aud)); status != tc.status {
			t.Errorf("beyond loopback, Host %s, token for %s: %d %s, want %d", tc.host, tc.aud, status, challenge, tc.status)
		}
	}
	if err := wide.stop(); err != nil {
		t.Errorf("exit: %v\n%s", err, wide.stderr.String())
	}
}
