package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
)

// peer is an upstream of bench/peers (or the server binary) and how it answers.
type peer struct {
	name  string
	mount func(t *testing.T) gateway.Mount
	// hidden are the fail modes whose outcome the gateway hides and reports (the peer
	// answers them with a JSON-RPC error, or breaks its output schema); the others are the
	// peer's own isError results, which pass unchanged.
	hidden []string
	// late says that the peer answers a call after its cancellation.
	late bool
}

func goPeers() []peer {
	return []peer{
		{"toolgrain", func(t *testing.T) gateway.Mount {
			return gateway.Mount{Name: "up", Source: gateway.Stdio{Command: serverBinary(t), Args: []string{"--log-level", "error"}}}
		}, nil, false},
		{"gosdk", func(t *testing.T) gateway.Mount {
			return gateway.Mount{Name: "up", Source: gateway.Stdio{Command: peerBinary(t, "gosdk")}}
		}, []string{"panic", "bad-output"}, true},
		{"mcpgo", func(t *testing.T) gateway.Mount {
			return gateway.Mount{Name: "up", Source: gateway.Stdio{Command: peerBinary(t, "mcpgo")}}
		}, []string{"error", "panic", "provider"}, true},
	}
}

// The project's own server and the Go peers of bench, over stdio behind the gateway: listing,
// calls, validation at the gateway, each fail mode (an upstream's isError passes unchanged;
// what the gateway catches is hidden and reported) and cancellation with no late answer.
func TestStdioGoPeers(t *testing.T) {
	t.Parallel()
	for _, p := range goPeers() {
		t.Run(p.name, func(t *testing.T) {
			f := newFront(t, toolgrain.Config{}, p.mount(t))
			names := toolNames(t, f.c)
			for _, w := range []string{"up_echo", "up_greet", "up_sleep", "up_fail"} {
				if !slices.Contains(names, w) {
					t.Fatalf("tools %v lack %s", names, w)
				}
			}
			if got := text(f.call(t, "up_echo", `{"text":"hi"}`)); got != "hi" {
				t.Errorf("echo: %q", got)
			}
			if r := f.call(t, "up_greet", `{"name":"Ada"}`); string(r.StructuredContent) != `{"greeting":"Hello, Ada!"}` {
				t.Errorf("greet: %+v", r)
			}
			if r := f.call(t, "up_sleep", `{"ms":600001}`); !r.IsError || !strings.HasPrefix(text(r), "invalid arguments: ms: ") {
				t.Errorf("invalid: %+v", r)
			}
			for _, mode := range []string{"result", "error", "panic", "bad-output", "provider"} {
				r := f.call(t, "up_fail", `{"mode":"`+mode+`"}`)
				switch {
				case !r.IsError:
					t.Errorf("fail %s: not an error: %+v", mode, r)
				case slices.Contains(p.hidden, mode):
					if text(r) != toolgrain.FailedText {
						t.Errorf("fail %s: %q", mode, text(r))
					}
				case mode == "result":
					if text(r) != "public failure message" {
						t.Errorf("fail result: %q", text(r))
					}
				case p.name == "toolgrain":
					if text(r) != toolgrain.FailedText {
						t.Errorf("fail %s: %q", mode, text(r))
					}
				}
			}
			for i := range p.hidden {
				e, tool := f.reps.wait(t, i+1)
				if tool != "up_fail" || !strings.HasPrefix(e, `upstream "up": tools/call "fail": `) {
					t.Errorf("report %q for %q", e, tool)
				}
			}
			if f.reps.count() != len(p.hidden) {
				t.Errorf("reports: %q", f.reps.errs)
			}

			// Cancellation: 10 sleeps at once, each cancelled once it runs upstream (its first
			// progress notification came: a peer may run fewer at a time); the peers that
			// answer anyway are dropped.
			done := make(chan error, 10)
			cancels := map[string]context.CancelFunc{}
			for i := range 10 {
				ctx, cancel := context.WithCancel(ctxT(t))
				tok := fmt.Sprintf(`"c%d"`, i)
				cancels[tok] = cancel
				go func() {
					_, err := f.c.Call(ctx, protocol.MethodToolsCall, json.RawMessage(`{"name":"up_sleep","arguments":{"ms":60000},"_meta":{"progressToken":`+tok+`}}`))
					done <- err
				}()
			}
			for len(cancels) > 0 {
				var p protocol.ProgressParams
				_ = json.Unmarshal(nextNotification(t, f.c, protocol.MethodProgress), &p)
				if cancel, ok := cancels[string(p.ProgressToken)]; ok {
					cancel()
					delete(cancels, string(p.ProgressToken))
				}
			}
			for range 10 {
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatal(err)
				}
			}
			if p.late {
				mcptest.Eventually(t, "the late answers dropped", func() bool { return f.gw.Status()[0].Late == 10 })
			}
			if got := text(f.call(t, "up_echo", `{"text":"after"}`)); got != "after" {
				t.Errorf("echo after: %q", got)
			}
			if !p.late && f.gw.Status()[0].Late != 0 {
				t.Errorf("late: %d", f.gw.Status()[0].Late)
			}
			// Progress the cancelled calls had sent before the cancellation may still be read;
			// nothing after it: no answer.
			drainProgress(t, f.c)
		})
	}
}

// drainProgress fails if the client has a message no call claimed other than progress and
// list changes.
func drainProgress(t *testing.T, c *toolgrain.InMemoryClient) {
	t.Helper()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		frame, err := c.Receive(done)
		if err != nil {
			return
		}
		m, _ := protocol.Decode(frame)
		if m != nil && (m.Method == protocol.MethodProgress || strings.HasSuffix(m.Method, "list_changed")) {
			continue
		}
		t.Errorf("unexpected message: %s", frame)
	}
}
