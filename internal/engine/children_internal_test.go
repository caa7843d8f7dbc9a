package engine

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// burstParent spawns n children, stops them all, and once every Terminated has come reports
// how many slots of its set of children still hold a PID, before and after
// clearVacatedChildren.
type burstParent struct {
	n, ended      int
	before, after chan int
}

func (p *burstParent) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		props := actor.PropsFromFunc(func(actor.Context) {})
		for range p.n {
			ctx.Stop(ctx.Spawn(props))
		}
	case *actor.Terminated:
		p.ended++
		if p.ended < p.n {
			return
		}
		p.before <- heldSlots(ctx.Children())
		clearVacatedChildren(ctx)
		p.after <- heldSlots(ctx.Children())
	}
}

func heldSlots(kids []*actor.PID) int {
	n := 0
	for _, pid := range kids[:cap(kids)] {
		if pid != nil {
			n++
		}
	}
	return n
}

// Once all its children have stopped, an actor's set of children keeps their PIDs (and through
// each PID's cached process, the stopped actor) in the slots past its end; clearVacatedChildren
// lets them go.
func TestClearVacatedChildren(t *testing.T) {
	sys := actor.NewActorSystem()
	p := &burstParent{n: 2000, before: make(chan int, 1), after: make(chan int, 1)}
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	select {
	case before := <-p.before:
		if before == 0 {
			t.Fatalf("no vacated slot held a PID: protoactor's PIDSet no longer keeps them, and clearVacatedChildren can go")
		}
		if after := <-p.after; after != 0 {
			t.Fatalf("%d slots still hold a PID after clearVacatedChildren (%d before)", after, before)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the children did not all stop")
	}
}
