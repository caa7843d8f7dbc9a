package etcdtest

import (
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServerBinaryOnEtcd runs two members of the server binary that find each other through
// etcd (--cluster-etcd), and sends a session opened on one member to the other, which forwards
// it home. Waits: building the binary (up to a minute on a 2-core machine), and up to 30 s for
// the members to register and see each other (protoactor's StartMember sleeps 1 s; the etcd
// provider's lease is 3 s).
func TestServerBinaryOnEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server binary and starts two members")
	}
	etcdURL := startEtcd(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	build := exec.Command("go", "build", "-o", bin, "./cmd/server")
	build.Dir = "../.." // the engine's module, with its own requirements: the binary as shipped
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(rand.Text()+rand.Text()), 0o600); err != nil {
		t.Fatal(err)
	}
	var bases [2]string
	for i := range bases {
		httpAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		bases[i] = "http://" + httpAddr + "/mcp"
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, bin, "--transport", "http", "--addr", httpAddr,
			"--cluster-addr", "127.0.0.1:"+strconv.Itoa(freePort(t)), "--cluster-etcd", etcdURL,
			"--request-state-key-file", key)
		var log strings.Builder
		cmd.Stderr = &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cancel()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("member %d:\n%s", i, log.String())
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	var sid string
	for sid == "" {
		status, id, _, _ := tryPost(bases[0], "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"etcd-test","version":"1"}}}`)
		if status == http.StatusOK && id != "" {
			sid = id
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("member 0 did not serve within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status, _, body, err := tryPost(bases[0], sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s %v", status, body, err)
	}
	// Member 1 forwards the session's call home once it sees member 0 through etcd; until then
	// it does not know the home (404) or does not serve yet.
	const want = `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"over etcd"}]}}`
	for {
		status, _, body, err := tryPost(bases[1], sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over etcd"}}}`)
		if status == http.StatusOK {
			if body != want {
				t.Fatalf("forwarded call: %s, want %s", body, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("member 1 did not forward the session home within 30 s: %d %s %v", status, body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
