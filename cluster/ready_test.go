package cluster_test

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/cluster"
)

// A member's readiness does not wait for the cluster to form: a member whose only peer never
// starts is ready (and live) as soon as its server is made, with itself alone in its view.
func TestMemberReadyBeforeTheClusterForms(t *testing.T) {
	ports := make([]int, 3)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	hp := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	// ports[2] is the health endpoint of a peer that never starts.
	node, err := cluster.Start(cluster.Config{Addr: hp(ports[0]), Members: []string{hp(ports[1]), hp(ports[2])},
		HealthPort: ports[1], Refresh: 200 * time.Millisecond, Secret: bytes.Repeat([]byte{3}, cluster.MinSecretSize)})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	srv, err := toolgrain.NewServer(toolgrain.Config{Name: "ready", Cluster: node})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	if err := srv.Ready(); err != nil {
		t.Fatalf("Ready on a member whose cluster has not formed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Live(ctx); err != nil {
		t.Fatalf("Live: %v", err)
	}
	if m := node.Members(); len(m) > 1 {
		t.Fatalf("members %v: the peer that never started is in the view", m)
	}
}
