package engine

import (
	"context"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/tools"
)

// BenchmarkRequestActorSpawnStop measures the life cycle every tools/call pays for its request
// actor, without the call itself: props, spawn (PID registration, mailbox), Started, Stop and
// Stopped, on the engine's dispatcher.
func BenchmarkRequestActorSpawnStop(b *testing.B) {
	set, err := tools.Compile(nil)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := Start(Config{Tools: set})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	stopped := make(chan struct{}, 1)
	root := eng.system.Root
	b.ReportAllocs()
	for b.Loop() {
		props := actor.PropsFromProducer(func() actor.Actor {
			return actor.ReceiveFunc(func(ctx actor.Context) {
				switch ctx.Message().(type) {
				case *actor.Started:
					ctx.Stop(ctx.Self())
				case *actor.Stopped:
					stopped <- struct{}{}
				}
			})
		}, actor.WithDispatcher(eng.dispatcher))
		root.Spawn(props)
		<-stopped
	}
}
