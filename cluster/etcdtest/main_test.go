package etcdtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for goroutines left behind, except those protoactor-go's cluster leaves at the
// pinned version after Cluster.Shutdown, which are not this project's: its gossip throttles
// (they end by themselves a period later), the etcd provider's client, whose lease loops run on
// because the provider never closes it, and gRPC connections (the etcd client's, and remote's to
// a member that left) that go on reconnecting.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.NewGossipActor.NewThrottleWithLogger.func2.1"),
		goleak.IgnoreTopFunction("go.etcd.io/etcd/client/v3.(*lessor).deadlineLoop"),
		goleak.IgnoreTopFunction("go.etcd.io/etcd/client/v3.(*lessor).recvKeepAliveLoop"),
		goleak.IgnoreTopFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
		goleak.IgnoreTopFunction("google.golang.org/grpc.(*pickerWrapper).pick"),
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	)
}
