package main

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestClusterMemberPartitioned cuts member 2 off the network, a truer partition than SIGSTOP:
// the member runs in a network namespace of the test's own (ip netns), reached over a veth pair,
// and the test takes the veth link down while calls run. The process goes on running, its TCP
// connections are neither closed nor answered; the others see it leave through the automanaged
// health check. The expectations are TestClusterMemberKilled's, with the bound of a hung member.
// It needs root (and ip); elsewhere it is skipped.
func TestClusterMemberPartitioned(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root for ip netns")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2)")
	}
	id := os.Getpid() % 100000
	ns, vh, vn := fmt.Sprintf("tg%d", id), fmt.Sprintf("tgh%d", id), fmt.Sprintf("tgn%d", id)
	octet := 16 + id%200
	hostIP, nsIP := fmt.Sprintf("10.77.%d.1", octet), fmt.Sprintf("10.77.%d.2", octet)
	run := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %v: %v: %s", args, err, out)
		}
		return nil
	}
	if err := run("netns", "add", ns); err != nil {
		t.Skipf("ip netns unavailable: %v", err)
	}
	t.Cleanup(func() { _ = run("netns", "del", ns); _ = run("link", "del", vh) })
	for _, step := range [][]string{
		{"link", "add", vh, "type", "veth", "peer", "name", vn},
		{"link", "set", vn, "netns", ns},
		{"addr", "add", hostIP + "/30", "dev", vh},
		{"link", "set", vh, "up"},
		{"netns", "exec", ns, "ip", "addr", "add", nsIP + "/30", "dev", vn},
		{"netns", "exec", ns, "ip", "link", "set", vn, "up"},
		{"netns", "exec", ns, "ip", "link", "set", "lo", "up"},
	} {
		if err := run(step...); err != nil {
			t.Skipf("cannot build the test's network: %v", err)
		}
	}
	spec := clusterSpec{
		host: func(i int) string {
			if i == 2 {
				return nsIP
			}
			return hostIP
		},
		prefix: func(i int) []string {
			if i == 2 {
				return []string{"ip", "netns", "exec", ns}
			}
			return nil
		},
		// The members talk over the veth, not loopback: plain text must be allowed explicitly.
		flags: func(int, []string) []string { return []string{"--cluster-insecure"} },
	}
	cut := func(t *testing.T, _ *testCluster) {
		if err := run("link", "set", vh, "down"); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	testMemberLost(t, spec, cut, true, 12*time.Second)
	t.Logf("partition test took %v", time.Since(start))
}
