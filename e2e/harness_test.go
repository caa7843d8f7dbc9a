package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/enginehook"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// The servers these tests drive, over the clients of internal/mcptest.

// longTests reports whether the long forms of the soak and load tests run: TOOLGRAIN_LONG=1,
// which .ci/run sets. The default forms check the same properties with smaller loads, so that
// the README's test command stays short.
func longTests() bool { return os.Getenv("TOOLGRAIN_LONG") != "" }

// stdioClient is a client of one in-process stdio connection of srv.
type stdioClient struct {
	*mcptest.Stdio
	srv *toolgrain.Server
}

// newServer builds a server that the test closes at its end, after every connection attached
// with attach has ended.
func newServer(t testing.TB, cfg toolgrain.Config) *toolgrain.Server {
	t.Helper()
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// startStdio builds a server from cfg and serves one stdio connection to the returned client.
// Cleanup closes the input, waits for ServeStdio and then closes the server.
func startStdio(t testing.TB, cfg toolgrain.Config) *stdioClient {
	t.Helper()
	return attach(t, newServer(t, cfg))
}

// attach serves one more in-process stdio connection of srv. Cleanup closes its input and
// waits for ServeStdio; it does not close the server.
func attach(t testing.TB, srv *toolgrain.Server) *stdioClient { return attachAs(t, srv, nil) }

// attachAs is attach for a connection the host authenticated as id (ServeStdioAs).
func attachAs(t testing.TB, srv *toolgrain.Server, id *toolgrain.Identity) *stdioClient {
	t.Helper()
	return &stdioClient{Stdio: mcptest.Pipe(t, serveStdio(srv, id)), srv: srv}
}

// serveStdio serves a connection of srv as id; the server's closing ends a connection well.
func serveStdio(srv *toolgrain.Server, id *toolgrain.Identity) mcptest.Serve {
	return func(ctx context.Context, in io.Reader, out io.Writer) error {
		if err := srv.ServeStdioAs(ctx, in, out, id); err != nil && !errors.Is(err, toolgrain.ErrServerClosed) {
			return fmt.Errorf("ServeStdio: %w", err)
		}
		return nil
	}
}

// httpEnv is a server mounted at /mcp, /sse and /messages (with the metadata handler at its two
// well-known paths) on a real loopback listener; its client's endpoint is /mcp.
type httpEnv struct {
	*mcptest.HTTP
	srv *toolgrain.Server
	ts  *httptest.Server
}

// startHTTP builds a server from cfg and serves it over loopback HTTP. Cleanup closes the
// server first (ending sessions and streams), then the listener, then idle client connections.
func startHTTP(t testing.TB, cfg toolgrain.Config) *httpEnv {
	t.Helper()
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	mux.Handle("/mcp/t/", srv.Handler()) // toolsets: /mcp/t/TAG[,TAG...]
	mux.Handle("/sse", srv.Handler())
	mux.Handle("/messages", srv.Handler())
	mux.Handle("/.well-known/oauth-protected-resource", srv.ResourceMetadataHandler())
	mux.Handle("/.well-known/oauth-protected-resource/mcp", srv.ResourceMetadataHandler())
	mux.Handle("/.well-known/oauth-protected-resource/sse", srv.ResourceMetadataHandler())
	ts := httptest.NewServer(mux)
	e := &httpEnv{HTTP: mcptest.NewHTTP(t, ts.URL+"/mcp"), srv: srv, ts: ts}
	// Registered after the client's cleanup (closing its idle connections), so it runs before.
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		ts.Close()
	})
	return e
}

// engineOccupancy returns what the engine of srv holds now: connection actors, calls in flight
// and open listen streams.
func engineOccupancy(srv *toolgrain.Server) engine.Occupancy {
	s, ok := enginehook.Of(srv)
	if !ok {
		panic("engineOccupancy: not a server")
	}
	return s.Engine.Occupancy()
}

func echoResult(id, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, text)
}

// decode parses one line into a generic map, failing the test on invalid JSON.
func decode(t testing.TB, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("invalid JSON from server: %v: %s", err, line)
	}
	return m
}

var errCanary = errors.New("canary")
