package engine

import (
	"time"

	"github.com/toolgrain/toolgrain/metrics"
)

// callMetrics is what a request actor reports to the engine's [metrics.Recorder]: one
// CallStarted when it starts and exactly one CallEnded, at the moment the call is answered or
// the actor learns that it was silenced.
type callMetrics struct {
	started time.Time
	settled bool
}

// begin reports the call as started.
func (r *requestActor) begin() {
	r.started = time.Now()
	r.eng.metrics.CallStarted(r.tool.Name())
}

// settle reports the call's outcome, once.
func (r *requestActor) settle(o metrics.Outcome) {
	if r.settled || r.started.IsZero() {
		return
	}
	r.settled = true
	r.eng.metrics.CallEnded(r.tool.Name(), o, time.Since(r.started))
}

// settleAtStop settles a call that ends without having been settled: one silenced while the
// actor was not told (the connection stopped it), or one the connection answered after the
// request actor failed.
func (r *requestActor) settleAtStop() {
	if r.call.Silenced() {
		r.settle(metrics.Cancelled)
		return
	}
	r.settle(metrics.Failed)
}
