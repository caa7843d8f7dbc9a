package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClusterRemoteWorkerTool runs tool calls on another member: members 0 and 1 serve
// remote_sleep, whose calls go (tools.ActorCall over remote) to the worker actor of member 2.
// A call answers through the session's home; a cancelled call's cancellation reaches the worker
// with a call id that names the calling member; when the worker is killed, a call in flight ends
// with "Tool execution failed" within a second, and the report in the diagnostics file names the
// lost member.
func TestClusterRemoteWorkerTool(t *testing.T) {
	t.Parallel()
	diag := t.TempDir() + "/diag.jsonl"
	c := startWorkerCluster(t, diag)
	sid, _ := c.initialize(c.members[0].base)

	// Entering on member 1, forwarded to the home (0), run on the worker (2).
	c.expect(c.members[1].base, request{session: sid, body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remote_sleep","arguments":{"ms":50}}}`},
		200, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"slept remotely"}]}}`)

	// Cancellation crosses to the worker.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	// Owned by the test, which waits for it; cancel ends its request.
	go func() {
		defer close(done)
		resp, err := c.do(ctx, c.members[0].base, request{session: sid, body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"remote_sleep","arguments":{"ms":60000}}}`})
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	// The worker runs call 3 (the 60 s sleep) before it is cancelled: a cancellation that came
	// first would name no call in flight, and be ignored, as the protocol says.
	waitLogCount(t, c.members[2], `"ms":60000`, 1, 10*time.Second)
	c.expect(c.members[1].base, request{session: sid, body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"changed my mind"}}`}, 202, "")
	waitLog(t, c.members[2], `"msg":"worker call cancelled","id":"`+c.members[0].remote+`/`, 5*time.Second)
	cancel()
	<-done

	// The worker dies while a call runs on it.
	type answer struct {
		status int
		body   string
		at     time.Time
	}
	got := make(chan answer, 1)
	// Owned by the test, which receives its answer; the call's timeout bounds it.
	go func() {
		status, _, body := c.call(c.members[1].base, request{session: sid, body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"remote_sleep","arguments":{"ms":60000}}}`})
		got <- answer{status, body, time.Now()}
	}()
	waitLogCount(t, c.members[2], `"ms":60000`, 2, 10*time.Second) // call 4 runs on the worker
	time.Sleep(100 * time.Millisecond)
	killed := time.Now()
	if err := c.members[2].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the call on the killed worker did not end within 10 s")
	}
	if want := `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}}`; a.status != 200 || a.body != want {
		t.Fatalf("got %d %s, want 200 %s", a.status, a.body, want)
	}
	took := a.at.Sub(killed)
	t.Logf("the call on the killed worker failed %v after the kill", took)
	if took > time.Second {
		t.Errorf("the call on the killed worker took %v to fail, want at most 1 s", took)
	}
	waitWorkerReport(t, diag, c.members[2].remote)
}

// waitLog waits until a member's log contains s.
func waitLog(t *testing.T, m *member, s string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(m.log.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("member %d: no %q in its log within %v:\n%s", m.i, s, d, tail(m.log.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitWorkerReport waits up to 5 s for the report, in the diagnostics file diag, of a call whose
// worker at remote was lost.
func waitWorkerReport(t *testing.T, diag, remote string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, _ := os.ReadFile(diag)
		if strings.Contains(string(data), `actor `+remote+`/toolgrain-worker is not running (address terminated)`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no report naming the lost worker %s in the diagnostics:\n%s", remote, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLogCount waits until a member's log contains s at least n times.
func waitLogCount(t *testing.T, m *member, s string, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for strings.Count(m.log.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("member %d: %q fewer than %d times in its log within %v:\n%s", m.i, s, n, d, tail(m.log.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterRemoteWorkersChosen runs remote_sleep on two worker members (1 and 2) for member 0:
// calls alternate between them; when worker 2 is killed, the calls that follow all run on
// worker 1 and succeed.
func TestClusterRemoteWorkersChosen(t *testing.T) {
	t.Parallel()
	c := startClusterWith(t, 3, func(i int, remotes []string) []string {
		if i == 0 {
			return []string{"--cluster-remote-tools", remotes[1] + "," + remotes[2]}
		}
		return []string{"--cluster-worker"}
	})
	sid, _ := c.initialize(c.members[0].base)
	call := func(id int) {
		t.Helper()
		n := strconv.Itoa(id)
		c.expect(c.members[0].base, request{session: sid, body: `{"jsonrpc":"2.0","id":` + n + `,"method":"tools/call","params":{"name":"remote_sleep","arguments":{"ms":` + n + `}}}`},
			200, `{"jsonrpc":"2.0","id":`+n+`,"result":{"content":[{"type":"text","text":"slept remotely"}]}}`)
	}
	// workerCalls waits until worker w's log shows want calls (a worker logs a call as it
	// answers, so the line may reach the test just after the answer) and fails on more.
	workerCalls := func(w, want int, why string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			got := strings.Count(c.members[w].log.String(), `"msg":"worker call"`)
			if got == want {
				return
			}
			if got > want || time.Now().After(deadline) {
				t.Fatalf("worker %d ran %d calls, want %d: %s", w, got, want, why)
			}
		}
	}
	for id := 1; id <= 4; id++ {
		call(id)
	}
	workerCalls(1, 2, "2 of 4")
	workerCalls(2, 2, "2 of 4")
	if err := c.members[2].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.members[2].exited
	// Member 0 sees the connection to it break (measured 10–20 ms on an idle machine).
	c.waitLog(c.members[0], 0, time.Now().Add(10*time.Second), `"msg":"member unreachable","address":"`+c.members[2].remote+`"`)
	for id := 5; id <= 8; id++ {
		call(id)
	}
	workerCalls(1, 6, "the 4 after worker 2 died, and 2 before")
}

// TestClusterRemoteWorkerHung stops the worker (SIGSTOP) while a call runs on it: its TCP
// connections stay open, so the loss is seen when the membership provider drops the member
// (a 2 s health-check timeout after a 1 s poll); the call then ends with "Tool execution failed",
// never a hang, within 6 s.
func TestClusterRemoteWorkerHung(t *testing.T) {
	t.Parallel()
	diag := t.TempDir() + "/diag.jsonl"
	c := startWorkerCluster(t, diag)
	sid, _ := c.initialize(c.members[0].base)
	type answer struct {
		status int
		body   string
		at     time.Time
	}
	got := make(chan answer, 1)
	// Owned by the test, which receives its answer; the call's timeout bounds it.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		a := answer{}
		resp, err := c.do(ctx, c.members[0].base, request{session: sid, body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remote_sleep","arguments":{"ms":60000}}}`})
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			a.status, a.body = resp.StatusCode, string(data)
		}
		a.at = time.Now()
		got <- a
	}()
	waitLog(t, c.members[2], `"ms":60000`, 10*time.Second)
	stopped := time.Now()
	if err := c.members[2].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.members[2].cmd.Process.Signal(syscall.SIGCONT) })
	select {
	case a := <-got:
		if want := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}}`; a.status != 200 || a.body != want {
			t.Fatalf("got %d %s, want 200 %s", a.status, a.body, want)
		}
		t.Logf("the call on the hung worker failed %v after SIGSTOP", a.at.Sub(stopped))
		if d := a.at.Sub(stopped); d > 6*time.Second {
			t.Errorf("the call took %v to fail, bound 6 s", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call on the hung worker did not end within 15 s")
	}
	// The report is written by the diagnostics actor after the answer: wait for it.
	waitWorkerReport(t, diag, c.members[2].remote)
}

// startWorkerCluster starts three members appending their reports to diag: member 2 hosts the
// demonstration worker, and members 0 and 1 serve remote_sleep on it.
func startWorkerCluster(t *testing.T, diag string) *testCluster {
	return startClusterWith(t, 3, func(i int, remotes []string) []string {
		f := []string{"--diagnostics-file", diag}
		if i == 2 {
			return append(f, "--cluster-worker")
		}
		return append(f, "--cluster-remote-tools", remotes[2])
	})
}
