package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClusterFlags(t *testing.T) {
	tests := []struct {
		give    []string
		wantErr string
	}{
		{[]string{"--cluster-local", "3"}, "a cluster needs --transport http"},
		{[]string{"--transport", "http", "--cluster-local", "-1"}, "--cluster-local -1: want 1..64"},
		{[]string{"--transport", "http", "--cluster-local", "3", "--cluster-addr", "127.0.0.1:7001"}, "leave out --cluster-addr"},
		{[]string{"--transport", "http", "--cluster-addr", "127.0.0.1:7001"}, "needs a shared secret"},
		{[]string{"--transport", "http", "--cluster-addr", "127.0.0.1:7001", "--request-state-key-file", "k"}, "needs --cluster-member (every member's health endpoint) and --cluster-health-port, or --cluster-etcd"},
		{[]string{"--transport", "http", "--cluster-member", "127.0.0.1:6330"}, "need --cluster-addr"},
		{[]string{"--transport", "http", "--cluster-etcd", "http://127.0.0.1:2379"}, "need --cluster-addr"},
		{[]string{"--transport", "http", "--cluster-addr", "127.0.0.1:7001", "--request-state-key-file", "k",
			"--cluster-etcd", "http://127.0.0.1:2379", "--cluster-member", "127.0.0.1:6330"}, "leave out --cluster-member"},
		{[]string{"--transport", "http", "--cluster-addr", "127.0.0.1:7001", "--request-state-key-file", "k",
			"--cluster-member", "127.0.0.1:6330", "--cluster-health-port", "6330", "--cluster-tls-cert", "c"}, "go together"},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.give, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tt.give, err, tt.wantErr)
		}
	}
}

func TestWithoutFlags(t *testing.T) {
	give := []string{"--transport", "http", "--cluster-local", "3", "-addr=127.0.0.1:1", "--fixtures", "conformance",
		"--request-state-key-file", "k", "-cluster-local=2", "--auth-token", "t"}
	got := strings.Join(withoutFlags(give, "cluster-local", "addr", "request-state-key-file"), " ")
	if want := "--transport http --fixtures conformance --auth-token t"; got != want {
		t.Fatalf("withoutFlags = %q, want %q", got, want)
	}
}

// TestClusterMemberRefusesPlainTextBeyondLoopback runs the binary as a member whose remote
// listens on every interface without TLS: it must refuse to start, and start with
// --cluster-insecure.
func TestClusterMemberRefusesPlainTextBeyondLoopback(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	key := t.TempDir() + "/key"
	if err := os.WriteFile(key, make([]byte, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--transport", "http", "--addr", "127.0.0.1:0", "--cluster-addr", "0.0.0.0:7001",
		"--cluster-member", "127.0.0.1:6330", "--cluster-health-port", "6330", "--request-state-key-file", key).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `cluster: addr "0.0.0.0:7001" is beyond loopback: remote traffic would be plain text`) {
		t.Fatalf("want a refusal, got %v:\n%s", err, out)
	}
}

// consecutivePorts returns the first of n consecutive loopback ports free now, below the
// kernel's ephemeral range (see testPorts).
func consecutivePorts(t *testing.T, n int) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	low, high := 10000, ephemeralStart()-n
	for try := 0; try < 50; try++ {
		base := low + rand.IntN(high-low)
		var lns []net.Listener
		ok := true
		for i := 0; i < n; i++ {
			ok = ok && !portsTaken[base+i]
		}
		for i := 0; i < n && ok; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			for i := 0; i < n; i++ {
				portsTaken[base+i] = true
			}
			return base
		}
	}
	t.Fatal("no consecutive free ports")
	return 0
}

// TestClusterLocalCommand runs the one command of a local cluster: --cluster-local 3 starts three
// member processes on consecutive ports, which form one server (a session opened on one member
// answers on another), share the --auth-token and append their reports to the one
// --diagnostics-file; SIGTERM to the command ends every member.
func TestClusterLocalCommand(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	port := consecutivePorts(t, 3)
	diag := t.TempDir() + "/diag.jsonl"
	out := &syncBuffer{}
	cmd := exec.Command(bin, "--transport", "http", "--cluster-local", "3", "--addr", "127.0.0.1:"+strconv.Itoa(port),
		"--diagnostics-file", diag, "--auth-token", "tok", "--log-level", "info")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	// Owned by the test: it ends when the command exits, which the cleanup forces.
	go func() { exited <- cmd.Wait() }()
	var pids []int
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("output:\n%s", tail(out.String(), 60))
		}
	})
	deadline := time.Now().Add(clusterStartWait)
	memberLine := regexp.MustCompile(`member (\d) pid (\d+) url (\S+)`)
	// The members share the output: each names itself in its topology lines, and the test waits
	// until each of the three has seen all three (one member may log several topologies of 3
	// before another has its first).
	formed := regexp.MustCompile(`"msg":"topology","members":3,[^\n]*"address":"([^"]+)"`)
	formedMembers := func() int {
		seen := map[string]bool{}
		for _, m := range formed.FindAllStringSubmatch(out.String(), -1) {
			seen[m[1]] = true
		}
		return len(seen)
	}
	for strings.Count(out.String(), `"msg":"serving"`) < 3 || formedMembers() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the members did not serve in a formed cluster within %v", clusterStartWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var bases []string
	for i, m := range memberLine.FindAllStringSubmatch(out.String(), -1) {
		if want := fmt.Sprintf("http://127.0.0.1:%d/mcp", port+i); m[1] != strconv.Itoa(i) || m[3] != want {
			t.Fatalf("member line %q, want member %d at %s", m[0], i, want)
		}
		pid, _ := strconv.Atoi(m[2])
		pids = append(pids, pid)
		bases = append(bases, strings.TrimSuffix(m[3], "/mcp"))
	}
	if len(bases) != 3 {
		t.Fatalf("%d member lines, want 3", len(bases))
	}

	c := &testCluster{t: t}
	for i, b := range bases {
		// Without the token: 401 on every member.
		status, _, _ := c.call(b, request{body: initializeBody})
		if status != 401 {
			t.Fatalf("member %d: initialize without a token: %d, want 401", i, status)
		}
	}
	// The token is shared: a session per member, each failing a call unexpectedly, through the
	// next member (forwarded to its home), so that each member writes one report.
	c.token = "tok"
	for i := range bases {
		sid, _ := c.initialize(bases[i])
		next := bases[(i+1)%3]
		c.expect(next, request{session: sid, body: `{"jsonrpc":"2.0","id":` + strconv.Itoa(10+i) + `,"method":"tools/call","params":{"name":"fail","arguments":{"mode":"error"}}}`},
			200, `{"jsonrpc":"2.0","id":`+strconv.Itoa(10+i)+`,"result":{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}}`)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the command exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not exit within 30 s of SIGTERM")
	}
	for i, p := range pids {
		if err := syscall.Kill(p, 0); err == nil {
			t.Errorf("member %d (pid %d) still runs after the command exited", i, p)
		}
	}
	data, err := os.ReadFile(diag)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("diagnostics line %q: %v", line, err)
		}
		if !strings.Contains(fmt.Sprint(rec["error"]), "SECRET-internal-detail") || rec["tool"] != "fail" {
			t.Fatalf("diagnostics line %s: want the fail tool's internal error", line)
		}
		ids[fmt.Sprint(rec["request_id"])] = true
	}
	if len(ids) != 3 {
		t.Fatalf("diagnostics from %d calls, want 3:\n%s", len(ids), data)
	}
}

// TestOurRaces: a member's race report counts when one of the racing accesses is in Toolgrain's
// code, not when both are in protoactor-go's, even if the call that led there began in ours.
func TestOurRaces(t *testing.T) {
	report := func(first, second string) string {
		return "==================\nWARNING: DATA RACE\nWrite at 0x00c0001 by goroutine 45:\n  " + first +
			"\n      /src/a.go:30 +0x1\n  github.com/toolgrain/toolgrain/cluster.(*Node).Start()\n      /src/b.go:9 +0x1\n\n" +
			"Previous read at 0x00c0001 by goroutine 12:\n  " + second + "\n      /src/c.go:12 +0x1\n\n" +
			"Goroutine 45 (running) created at:\n  github.com/toolgrain/toolgrain/cluster.(*Node).Start()\n==================\n"
	}
	theirs := report("github.com/asynkron/protoactor-go/remote.(*BlockList).Block()", "github.com/asynkron/protoactor-go/remote.(*BlockList).IsBlocked()")
	ours := report("github.com/toolgrain/toolgrain/cluster.(*Node).forward()", "github.com/asynkron/protoactor-go/actor.(*PID).Tell()")
	if got := ourRaces("log\n" + theirs); got != "" {
		t.Errorf("a race between two protoactor-go accesses was counted:\n%s", got)
	}
	if got := ourRaces("log\n" + ours + theirs); !strings.Contains(got, "(*Node).forward") || strings.Contains(got, "IsBlocked") {
		t.Errorf("want only the race with an access in Toolgrain's code, got:\n%s", got)
	}
}

// TestClusterLocalMembersEndWithTheirParent: the members of --cluster-local end when the
// process that started them is killed outright (SIGKILL gives it no chance to stop them), on
// Linux, instead of serving on, orphaned. Before, both members were still running a minute on.
func TestClusterLocalMembersEndWithTheirParent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and runs two members")
	}
	if runtime.GOOS != "linux" {
		t.Skip("members are tied to their parent on Linux only")
	}
	bin := buildServer(t)
	port := consecutivePorts(t, 2)
	out := &syncBuffer{}
	cmd := exec.Command(bin, "--transport", "http", "--cluster-local", "2", "--addr", "127.0.0.1:"+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second // members that outlive their parent keep its output open
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	memberLine := regexp.MustCompile(`member \d pid (\d+) url`)
	var pids []int
	t.Cleanup(func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("output:\n%s", tail(out.String(), 40))
		}
	})
	for deadline := time.Now().Add(clusterStartWait); len(pids) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the members did not start within %v", clusterStartWait)
		}
		pids = pids[:0]
		for _, m := range memberLine.FindAllStringSubmatch(out.String(), -1) {
			pid, _ := strconv.Atoi(m[1])
			pids = append(pids, pid)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// A member told of its parent's end (SIGTERM) stops within its graces (--handler-grace,
	// --output-grace); 60 s covers a loaded machine. An orphan whose new parent has not reaped
	// it yet is a zombie: it has ended.
	for _, pid := range pids {
		for deadline := time.Now().Add(60 * time.Second); running(pid); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("member pid %d still runs 60 s after its parent was killed", pid)
			}
		}
	}
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis: "pid (comm) S ...".
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}
