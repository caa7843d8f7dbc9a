package cluster

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Picker returns a function for tools.NewActorPickHandler that chooses, for each call, the actor
// named name on one of the members at addrs, round robin over those that are alive (in the member
// list, their remote connection not broken); nil when none is. The actors are the tool's workers,
// which the members at addrs run (spawned with that name on their actor systems).
func (n *Node) Picker(name string, addrs ...string) func() *actor.PID {
	addrs = append([]string(nil), addrs...)
	var next atomic.Uint64
	return func() *actor.PID {
		for range addrs {
			a := addrs[next.Add(1)%uint64(len(addrs))]
			if a == n.addr || n.alive(a) {
				return actor.NewPID(a, name)
			}
		}
		return nil
	}
}
