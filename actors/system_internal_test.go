package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"
)

// TestShrunkRegistry: a new system's registry has registryBuckets buckets, and what the
// system registered before it was shrunk still resolves.
func TestShrunkRegistry(t *testing.T) {
	system := NewSystem(zap.NewNop())
	defer system.Shutdown()
	if n := len(system.ProcessRegistry.LocalPIDs.LocalPIDs); n != registryBuckets {
		t.Fatalf("%d buckets, want %d", n, registryBuckets)
	}
	for _, id := range []string{"eventstream", "deadletter"} {
		if _, ok := system.ProcessRegistry.GetLocal(id); !ok {
			t.Errorf("%s is not registered", id)
		}
	}
	done := make(chan struct{})
	pid := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(string); ok {
			close(done)
		}
	}))
	system.Root.Send(pid, "hi")
	<-done
	if err := system.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
}
