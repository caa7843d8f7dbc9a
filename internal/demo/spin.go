package demo

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/toolgrain/toolgrain/tools"
)

type spinIn struct {
	MS int64 `json:"ms" jsonschema:"minimum=0,maximum=600000"`
}

// Spin returns the spin tool: it keeps a CPU busy for ms milliseconds (0 to 600,000), then
// returns the text "spun". It honours cancellation the way a CPU-bound Go handler can: it looks
// at its context between slices of about 50 µs of work and returns as soon as the context is
// done, so a cancelled call stops using the CPU at once. Benchmarks use it to see from outside
// whether a server stops cancelled work (mcpbench cancel-cpu).
func Spin() tools.Tool {
	return tools.Tool{
		Name:        "spin",
		Description: "Keeps a CPU busy for ms milliseconds, honouring cancellation, then returns \"spun\".",
		Handler:     tools.Func(spin),
	}
}

func spin(ctx context.Context, in spinIn) (*tools.Result, error) {
	end := time.Now().Add(time.Duration(in.MS) * time.Millisecond)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 10000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
	}
	spun.Add(x & 1)
	return tools.TextResult("spun"), nil
}

// spun keeps the spin loop's result alive, so that the compiler keeps the loop.
var spun atomic.Uint64
