package actors

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	cmap "github.com/orcaman/concurrent-map"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
)

// NewSystem returns an actor system whose own slog output goes to log, with protoactor's chatty
// Info lines (dead letters, recoveries) shown only when log is at debug level.
func NewSystem(log *zap.Logger) *actor.ActorSystem {
	core := log.Core()
	if !core.Enabled(zapcore.DebugLevel) {
		if c, err := zapcore.NewIncreaseLevelCore(core, zapcore.WarnLevel); err == nil {
			core = c
		}
	}
	system := actor.NewActorSystem(
		actor.WithLoggerFactory(func(s *actor.ActorSystem) *slog.Logger {
			return slog.New(zapslog.NewHandler(core, zapslog.WithName("protoactor"))).With("system", s.ID)
		}),
		actor.WithDeadLetterRequestLogging(false),
	)
	shrinkRegistry(system.ProcessRegistry.LocalPIDs)
	return system
}

// registryBuckets is how many buckets of 32 locked maps the process registry spreads actors
// over: protoactor makes 1,024 of them (32,768 maps, 2 MiB of heap held for the life of the
// process and scanned by every garbage collection); 512 maps are still far more locks than
// there are cores to contend for them.
const registryBuckets = 16

// shrinkRegistry replaces the buckets of a new actor system's registry with registryBuckets
// of them, keeping what is registered already. It runs before anything is spawned: nothing
// else reads the registry yet.
func shrinkRegistry(m *actor.SliceMap) {
	buckets := make([]cmap.ConcurrentMap, registryBuckets)
	for i := range buckets {
		buckets[i] = cmap.New()
	}
	old := m.LocalPIDs
	m.LocalPIDs = buckets
	for _, b := range old {
		// IterCb, not Items: Items starts a goroutine per shard (32 per bucket, 1,024 buckets),
		// which made every NewServer start 32,768 goroutines.
		b.IterCb(func(id string, p any) { m.GetBucket(id).Set(id, p) })
	}
}
