package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/protocol"
)

// The TypeScript peers of bench/peers/ts run under the Node that package pins; `npm ci` there
// installs it. Without it the tests skip, unless TOOLGRAIN_REQUIRE_TS_PEERS is set (CI).
func tsNode(t *testing.T) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs("../bench/peers/ts")
	node = filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		if os.Getenv("TOOLGRAIN_REQUIRE_TS_PEERS") != "" {
			t.Fatalf("the TypeScript peers are not installed (npm ci in bench/peers/ts): %v", err)
		}
		t.Skip("the TypeScript peers are not installed (npm ci in bench/peers/ts)")
	}
	return node, dir
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// The official TypeScript SDK and FastMCP for TypeScript behind the gateway, over stdio and over
// Streamable HTTP (the gateway starts the HTTP ones as stdio processes too, to own their life,
// and reaches them over HTTP): listing, calls, validation, the fail modes, cancellation.
func TestTypeScriptPeers(t *testing.T) {
	t.Parallel()
	node, dir := tsNode(t)
	for _, peer := range []string{"sdk", "fastmcp"} {
		for _, transport := range []string{"stdio", "http"} {
			t.Run(peer+" "+transport, func(t *testing.T) {
				script := filepath.Join(dir, peer+".mjs")
				var mounts []gateway.Mount
				if transport == "stdio" {
					mounts = []gateway.Mount{{Name: "up", Source: gateway.Stdio{Command: node, Args: []string{script, "--transport", "stdio"}, Dir: dir}}}
				} else {
					addr := freeAddr(t)
					cmd := exec.Command(node, script, "--transport", "http", "--addr", addr)
					cmd.Dir = dir
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						_ = cmd.Process.Kill()
						_ = cmd.Wait()
					})
					// The gateway retries until the server listens.
					mounts = []gateway.Mount{{Name: "up", Source: gateway.HTTP{URL: "http://" + addr + "/mcp"}}}
				}
				f := newFront(t, toolgrain.Config{}, mounts...)
				if st := f.gw.Status()[0]; !strings.HasPrefix(st.ProtocolVersion, "20") || st.ProtocolVersion == protocol.LatestModernVersion {
					t.Errorf("status: %+v", st)
				}
				names := toolNames(t, f.c)
				for _, w := range []string{"up_echo", "up_greet", "up_sleep", "up_fail"} {
					if !slices.Contains(names, w) {
						t.Fatalf("tools %v lack %s", names, w)
					}
				}
				if got := text(f.call(t, "up_echo", `{"text":"from node"}`)); got != "from node" {
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
					if !r.IsError {
						t.Errorf("fail %s: %+v", mode, r)
					}
					if mode == "bad-output" && text(r) != toolgrain.FailedText {
						// Caught by the gateway (its output schema) or by the peer: never shown.
						if strings.Contains(text(r), "SECRET") {
							t.Errorf("bad-output: %q", text(r))
						}
					}
				}
				// Cancellation: three sleeps, each cancelled once it runs upstream.
				for i := range 3 {
					ctx, cancel := context.WithCancel(ctxT(t))
					done := make(chan error, 1)
					go func() {
						_, err := f.c.Call(ctx, protocol.MethodToolsCall, json.RawMessage(fmt.Sprintf(`{"name":"up_sleep","arguments":{"ms":60000},"_meta":{"progressToken":"t%d"}}`, i)))
						done <- err
					}()
					nextNotification(t, f.c, protocol.MethodProgress)
					cancel()
					if err := <-done; !errors.Is(err, context.Canceled) {
						t.Fatal(err)
					}
				}
				if got := text(f.call(t, "up_echo", `{"text":"after"}`)); got != "after" {
					t.Errorf("echo after: %q", got)
				}
				drainProgress(t, f.c)
				t.Logf("%s over %s: %s, late answers dropped %d, reports %q", peer, transport, f.gw.Status()[0].ProtocolVersion, f.gw.Status()[0].Late, f.reps.errs)
			})
		}
	}
}
