package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// upstreamGoroutines are the goroutines protoactor-go's cluster leaves at the pinned version
// after Cluster.Shutdown, which are not this project's: its gossip throttles, which end by
// themselves a period (longer than a test) later, and the throttle of its dead-letter logging
// (it ends one second after a dead letter).
var upstreamGoroutines = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.NewGossipActor.NewThrottleWithLogger.func2.1"),
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, upstreamGoroutines...) }
