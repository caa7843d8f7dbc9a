package gateway_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// protoactor starts this goroutine on a dead letter to throttle its logging; it ends by itself
// after one second.
const deadLetterThrottle = "github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"

// binDir holds the binaries the tests build: the server binary and the Go peers of bench.
var binDir string

func TestMain(m *testing.M) {
	if os.Getenv("GATEWAY_FAKE_UPSTREAM") != "" {
		runFake()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "gateway-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(deadLetterThrottle), goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

var (
	buildMu   sync.Mutex
	built     = map[string]string{}
	buildErrs = map[string]error{}
)

// build compiles the package pkg of the module in dir (relative to this package) once per test
// binary, without -race (the upstreams are not under test), and returns the binary's path.
func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds an upstream binary")
	}
	key := dir + "|" + pkg
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := built[key]; ok {
		return bin
	}
	if err, ok := buildErrs[key]; ok {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		buildErrs[key] = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		t.Fatal(buildErrs[key])
	}
	built[key] = bin
	return bin
}

// serverBinary is cmd/server; peerBinary is one of bench/peers (gosdk, mcpgo).
func serverBinary(t *testing.T) string         { return build(t, "..", "./cmd/server") }
func peerBinary(t *testing.T, p string) string { return build(t, "../bench/peers", "./"+p) }
