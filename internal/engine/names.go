package engine

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/actors"
)

// maxNameAttempts bounds the search for a free top-level name.
const maxNameAttempts = 64

// spawnRoot spawns the engine's supervisor at the top of system under a name no actor has: on
// an actor system shared with a host, a host actor that happens to hold the name is left
// alone and the next name is tried, instead of protoactor's panic (SpawnPrefix) or a clash.
func spawnRoot(system *actor.ActorSystem, props *actor.Props) (*actor.PID, error) {
	for range maxNameAttempts {
		pid, err := system.Root.SpawnNamed(props, actors.RootPrefix+system.ProcessRegistry.NextId())
		if errors.Is(err, actor.ErrNameExists) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("actors: spawn supervisor: %w", err)
		}
		return pid, nil
	}
	return nil, fmt.Errorf("actors: spawn supervisor: no free name after %d attempts", maxNameAttempts)
}

// Root returns the engine's top-level actor. Every actor of the engine is it or below it.
func (e *Engine) Root() *actor.PID { return e.supervisor }
