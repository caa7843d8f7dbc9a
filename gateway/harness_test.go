package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/protocol"
)

// reports collects what a server's OnError receives.
type reports struct {
	mu   sync.Mutex
	errs []string
	tool []string
	more chan struct{}
}

func newReports() *reports { return &reports{more: make(chan struct{}, 100)} }

func (r *reports) onError(err error, d *diagnostics.ToolErrorDetails) {
	r.mu.Lock()
	r.errs = append(r.errs, err.Error())
	name := ""
	if d != nil {
		name = d.ToolName()
	}
	r.tool = append(r.tool, name)
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

// wait waits for the n-th report and returns it (text, tool).
func (r *reports) wait(t *testing.T, n int) (string, string) {
	t.Helper()
	deadline := time.After(20 * time.Second) // a generous bound for a loaded machine; reports come in milliseconds
	for {
		r.mu.Lock()
		if len(r.errs) >= n {
			e, tl := r.errs[n-1], r.tool[n-1]
			r.mu.Unlock()
			return e, tl
		}
		r.mu.Unlock()
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("no report %d", n)
		}
	}
}

func (r *reports) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

// front is a gateway server with an in-memory client.
type front struct {
	srv  *toolgrain.Server
	gw   *gateway.Gateway
	c    *toolgrain.InMemoryClient
	reps *reports
}

func newFront(t *testing.T, cfg toolgrain.Config, mounts ...gateway.Mount) *front {
	t.Helper()
	reps := newReports()
	cfg.OnError = reps.onError
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(srv, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if err := gw.Mount(m); err != nil {
			t.Fatal(err)
		}
	}
	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	f := &front{srv: srv, gw: gw, c: c, reps: reps}
	t.Cleanup(func() {
		_ = c.Close()
		_ = gw.Close()
		_ = srv.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // upstreams start in well under a second; the bound is for a loaded machine
	defer cancel()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(mounts) > 0 {
		if err := gw.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // every exchange takes milliseconds; the bound only ends a stuck test
	t.Cleanup(cancel)
	return ctx
}

func (f *front) call(t *testing.T, name string, args string) *protocol.CallToolResult {
	t.Helper()
	res, err := f.c.CallTool(ctxT(t), name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(r *protocol.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func toolNames(t *testing.T, c *toolgrain.InMemoryClient) []string {
	t.Helper()
	list, err := c.ListTools(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(list))
	for i, tl := range list {
		names[i] = tl.Name
	}
	return names
}

// nextNotification reads messages until one of method arrives.
func nextNotification(t *testing.T, c *toolgrain.InMemoryClient, method string) json.RawMessage {
	t.Helper()
	ctx := ctxT(t)
	for {
		frame, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", method, err)
		}
		m, werr := protocol.Decode(frame)
		if werr != nil {
			t.Fatal(werr)
		}
		if m.Method == method {
			return m.Params
		}
	}
}

// waitTools lists the tools until ok holds of their names, waiting for a list_changed between
// two lists.
func waitTools(t *testing.T, c *toolgrain.InMemoryClient, ok func([]string) bool) []string {
	t.Helper()
	for {
		names := toolNames(t, c)
		if ok(names) {
			return names
		}
		nextNotification(t, c, protocol.MethodToolsListChanged)
	}
}
