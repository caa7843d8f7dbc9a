package cluster

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/httpserve"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// TestForwardKeepsTheScheme: a request of a session homed on another member, received over
// TLS, is https on its home too: the home's transport, whose auth takes the endpoint's URI from
// the request, names https in its challenge (resource_metadata), as the edge itself would.
func TestForwardKeepsTheScheme(t *testing.T) {
	a, b := startPair(t)
	set, err := tools.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Start(engine.Config{Tools: set})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	}()
	refuse := streamable.TokenVerifierFunc(func(context.Context, string) (*tools.Identity, error) {
		return nil, streamable.ErrInvalidToken
	})
	h, err := httpserve.New(eng, streamable.Config{AllowedHosts: []string{"127.0.0.1"},
		Auth: &streamable.AuthConfig{Verifier: refuse, Resource: "/mcp"}}, httpserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown()
	var sawTLS bool
	b.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawTLS = r.TLS != nil // read after the response: the handler has returned
		h.ServeHTTP(w, r)
	}), 0)
	edge := httptest.NewTLSServer(a.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the edge served a request of a session homed on the other member")
	}), 0))
	defer edge.Close()
	hc := edge.Client()
	defer hc.CloseIdleConnections()

	req, _ := http.NewRequest(http.MethodPost, edge.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set(protocol.HeaderSessionID, b.newSessionID())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	want := `Bearer resource_metadata="` + edge.URL + `/.well-known/oauth-protected-resource/mcp"`
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || got != want || !sawTLS {
		t.Errorf("forwarded https request: %d, TLS on the home %v, WWW-Authenticate %s\nwant 401, true, %s", resp.StatusCode, sawTLS, got, want)
	}
}
