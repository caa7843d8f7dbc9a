// Package prom exports the engine's measurements as Prometheus metrics.
//
// A [Collector] is both a metrics.Recorder, to set as the server's Config.Telemetry.Metrics,
// and a prometheus.Collector, to register on the host's own registry:
//
//	col := prom.New(prom.Options{})
//	reg.MustRegister(col)
//	srv, err := toolgrain.NewServer(toolgrain.Config{Metrics: col, ...})
//
// Nothing is registered anywhere by this package: no default registry, no HTTP handler. The
// metrics, with the default namespace "toolgrain":
//
//	toolgrain_tool_calls_total{tool,outcome}             counter    calls ended, by outcome (see metrics.Outcome)
//	toolgrain_tool_calls_in_flight{tool}                 gauge      calls started and not yet ended
//	toolgrain_tool_call_duration_seconds{tool}           histogram  from the start of a call to its answer or cancellation
//	toolgrain_tool_cancellations_total{tool}             counter    calls silenced by a cancellation (outcome "cancelled")
//	toolgrain_late_responses_suppressed_total{tool}      counter    outcomes dropped because the call was already cancelled or answered
//	toolgrain_diagnostics_reports_dropped_total          counter    OnError reports dropped because the queue was full
package prom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgrain/toolgrain/metrics"
)

// Options configure a [Collector]. The zero value is ready to use.
type Options struct {
	// Namespace prefixes every metric name. Empty means "toolgrain".
	Namespace string
	// ConstLabels are added to every metric, for example to tell two servers of one process
	// apart. Nil means none.
	ConstLabels prometheus.Labels
	// Buckets are the upper bounds, in seconds, of the duration histogram. Nil means
	// metrics.DefaultBuckets.
	Buckets []float64
}

// Collector records the engine's measurements in Prometheus metrics. It implements
// metrics.Recorder and prometheus.Collector; its methods are safe for concurrent use and never
// block. Make it with [New].
type Collector struct {
	calls     *prometheus.CounterVec
	inFlight  *prometheus.GaugeVec
	duration  *prometheus.HistogramVec
	cancelled *prometheus.CounterVec
	late      *prometheus.CounterVec
	dropped   prometheus.Counter
}

var (
	_ metrics.Recorder     = (*Collector)(nil)
	_ prometheus.Collector = (*Collector)(nil)
)

// New returns a Collector with the metrics listed in the package documentation. Register it
// on a registry of your own to export them.
func New(o Options) *Collector {
	if o.Namespace == "" {
		o.Namespace = "toolgrain"
	}
	if o.Buckets == nil {
		o.Buckets = metrics.DefaultBuckets
	}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: o.Namespace, Name: name, Help: help, ConstLabels: o.ConstLabels}
	}
	return &Collector{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts(opts("tool_calls_total",
			"Tool calls ended, by tool and outcome.")), []string{"tool", "outcome"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("tool_calls_in_flight",
			"Tool calls started and not yet answered or cancelled.")), []string{"tool"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: o.Namespace, Name: "tool_call_duration_seconds", ConstLabels: o.ConstLabels, Buckets: o.Buckets,
			Help: "Time from the start of a tool call to its answer or cancellation.",
		}, []string{"tool"}),
		cancelled: prometheus.NewCounterVec(prometheus.CounterOpts(opts("tool_cancellations_total",
			"Tool calls silenced by a cancellation: by the client, a closed connection or shutdown.")), []string{"tool"}),
		late: prometheus.NewCounterVec(prometheus.CounterOpts(opts("late_responses_suppressed_total",
			"Tool outcomes dropped because their call was already cancelled or answered.")), []string{"tool"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts(opts("diagnostics_reports_dropped_total",
			"Unexpected-failure reports dropped because the diagnostics queue was full."))),
	}
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.calls.Describe(ch)
	c.inFlight.Describe(ch)
	c.duration.Describe(ch)
	c.cancelled.Describe(ch)
	c.late.Describe(ch)
	c.dropped.Describe(ch)
}

// Collect sends the current value of every metric.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.calls.Collect(ch)
	c.inFlight.Collect(ch)
	c.duration.Collect(ch)
	c.cancelled.Collect(ch)
	c.late.Collect(ch)
	c.dropped.Collect(ch)
}

// CallStarted counts a call in flight.
func (c *Collector) CallStarted(tool string) { c.inFlight.WithLabelValues(tool).Inc() }

// CallEnded counts the call by outcome, observes its duration and takes it out of flight.
func (c *Collector) CallEnded(tool string, outcome metrics.Outcome, latency time.Duration) {
	c.inFlight.WithLabelValues(tool).Dec()
	c.calls.WithLabelValues(tool, string(outcome)).Inc()
	c.duration.WithLabelValues(tool).Observe(latency.Seconds())
	if outcome == metrics.Cancelled {
		c.cancelled.WithLabelValues(tool).Inc()
	}
}

// LateResponseSuppressed counts a dropped late outcome.
func (c *Collector) LateResponseSuppressed(tool string) { c.late.WithLabelValues(tool).Inc() }

// ReportDropped counts a dropped diagnostics report.
func (c *Collector) ReportDropped() { c.dropped.Inc() }
