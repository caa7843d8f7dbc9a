package scenario_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/scenario"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// engineTarget serves this engine's demonstration tools and touch over httptest.
func engineTarget(t *testing.T) (scenario.Target, *toolgrain.Server) {
	t.Helper()
	var touched demo.Touched
	srv, err := toolgrain.NewServer(toolgrain.Config{Name: "engine", Tools: append(demo.Tools(), demo.TouchTools(&touched)...)})
	if err != nil {
		t.Fatal(err)
	}
	touched.Set(srv)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		hs.Close()
	})
	return scenario.Target{
		Name: "engine", Transport: "http", Endpoint: hs.URL, PID: os.Getpid(),
		Dial: func(ctx context.Context) (*client.Client, error) {
			c, err := client.DialHTTP(hs.URL, client.HTTPOptions{})
			if err != nil {
				return nil, err
			}
			if err := c.Initialize(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
	}, srv
}

// TestClients opens a few clients of every kind against the engine and checks what the
// scenario reports: every client open, every change delivered to every stream, none dropped,
// memory and CPU figures present; and that it leaves no session behind.
func TestClients(t *testing.T) {
	for _, kind := range scenario.ClientKinds {
		t.Run(kind, func(t *testing.T) {
			target, srv := engineTarget(t)
			cfg := scenario.DefaultConfig()
			cfg.N = 12
			cfg.Clients = scenario.ClientsConfig{Kind: kind, Settle: time.Millisecond, Idle: 50 * time.Millisecond,
				Trigger: "touch", Subscribe: "demo://watched", Rounds: 2}
			res, err := scenario.Clients(context.Background(), target, cfg)
			if err != nil {
				t.Fatal(err)
			}
			m := res.Metrics
			if m["clients"] != 12 || m["open_failed"] != 0 {
				t.Errorf("clients = %v, open_failed = %v; want 12 and 0 (notes %v)", m["clients"], m["open_failed"], res.Notes)
			}
			for _, name := range []string{"kb_per_client", "anon_kb_per_client", "open_sec", "idle_cpu_pct"} {
				if _, ok := m[name]; !ok {
					t.Errorf("no %s", name)
				}
			}
			if kind == scenario.KindSession {
				if _, ok := m["fanout_p99_ms"]; ok {
					t.Errorf("fan-out measured without a stream: %v", m)
				}
			} else {
				for _, name := range []string{"fanout", "update"} {
					if _, ok := m[name+"_p99_ms"]; !ok || m[name+"_missed"] != 0 {
						t.Errorf("%s: p99 present %v, missed %v; want present and 0 (notes %v)", name, ok, m[name+"_missed"], res.Notes)
					}
				}
				if m["streams_dropped"] != 0 {
					t.Errorf("streams_dropped = %v", m["streams_dropped"])
				}
			}
			// An HTTP+SSE session ends when the server sees its stream's connection close,
			// which it learns on its own time: polled.
			if kind == scenario.KindSSE {
				mcptest.Eventually(t, "the HTTP+SSE sessions' end", func() bool { return srv.Sessions() == 0 })
			}
			if n := srv.Sessions(); n != 0 {
				t.Errorf("%d sessions left after the run", n)
			}
		})
	}
}

// TestClientsListenNotHeld: a server that answers subscriptions/listen at once, without a
// stream, does not serve the kind: the scenario says not applicable.
func TestClientsListenNotHeld(t *testing.T) {
	target, _ := engineTarget(t)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`))
			return
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer hs.Close()
	target.Endpoint = hs.URL
	cfg := scenario.DefaultConfig()
	cfg.N = 2
	cfg.Clients = scenario.ClientsConfig{Kind: scenario.KindListen, Idle: -1}
	_, err := scenario.Clients(context.Background(), target, cfg)
	if !errors.Is(err, scenario.ErrNotApplicable) {
		t.Fatalf("err = %v, want not applicable", err)
	}
}

// TestClientsNoGetStream: a server that answers the standalone GET with 405, as the transport
// allows, does not serve the get and mixed kinds: the scenario says not applicable.
func TestClientsNoGetStream(t *testing.T) {
	for _, kind := range []string{scenario.KindGet, scenario.KindMixed} {
		t.Run(kind, func(t *testing.T) {
			target, _ := engineTarget(t)
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.Method {
				case http.MethodGet:
					http.Error(w, "no stream here", http.StatusMethodNotAllowed)
				case http.MethodDelete:
					w.WriteHeader(http.StatusOK)
				default:
					body, _ := io.ReadAll(r.Body)
					if !bytes.Contains(body, []byte(`"method":"initialize"`)) {
						w.WriteHeader(http.StatusAccepted)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Mcp-Session-Id", "s1")
					_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"no-get","version":"1"}}}`))
				}
			}))
			defer hs.Close()
			target.Endpoint = hs.URL
			cfg := scenario.DefaultConfig()
			cfg.N = 2
			cfg.Clients = scenario.ClientsConfig{Kind: kind, Idle: -1}
			_, err := scenario.Clients(context.Background(), target, cfg)
			if !errors.Is(err, scenario.ErrNotApplicable) {
				t.Fatalf("err = %v, want not applicable", err)
			}
		})
	}
}
