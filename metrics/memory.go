package metrics

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// Memory is a [Recorder] that keeps every measurement in memory; read it with
// [Memory.Snapshot]. It suits tests, status pages and hosts that export metrics their own way.
// Its methods are safe for concurrent use. Make it with [NewMemory].
type Memory struct {
	buckets []float64

	mu       sync.Mutex
	tools    map[string]*toolCounts
	inFlight int64
	dropped  uint64
}

type toolCounts struct {
	calls    map[Outcome]uint64
	inFlight int64
	late     uint64
	latency  Histogram
}

var _ Recorder = (*Memory)(nil)

// NewMemory returns an empty Memory whose latency histograms use buckets (upper bounds in
// seconds, sorted here); none means [DefaultBuckets].
func NewMemory(buckets ...float64) *Memory {
	if len(buckets) == 0 {
		buckets = DefaultBuckets
	}
	b := slices.Clone(buckets)
	sort.Float64s(b)
	return &Memory{buckets: slices.Compact(b), tools: make(map[string]*toolCounts)}
}

func (m *Memory) tool(name string) *toolCounts {
	t := m.tools[name]
	if t == nil {
		t = &toolCounts{
			calls:   make(map[Outcome]uint64),
			latency: Histogram{Bounds: m.buckets, Counts: make([]uint64, len(m.buckets)+1)},
		}
		m.tools[name] = t
	}
	return t
}

// CallStarted counts a call in flight.
func (m *Memory) CallStarted(tool string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight++
	m.tool(tool).inFlight++
}

// CallEnded counts the call's outcome, observes its latency and takes it out of flight.
func (m *Memory) CallEnded(tool string, outcome Outcome, latency time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight--
	t := m.tool(tool)
	t.inFlight--
	t.calls[outcome]++
	t.latency.observe(latency.Seconds())
}

// LateResponseSuppressed counts a dropped late outcome.
func (m *Memory) LateResponseSuppressed(tool string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tool(tool).late++
}

// ReportDropped counts a dropped diagnostics report.
func (m *Memory) ReportDropped() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropped++
}

// Snapshot is a copy of a [Memory]'s measurements at one moment.
type Snapshot struct {
	// Tools holds the measurements of each tool that was called, by name.
	Tools map[string]ToolSnapshot
	// InFlight is the number of calls started and not yet ended, over all tools.
	InFlight int64
	// ReportsDropped counts diagnostics reports dropped because the queue was full.
	ReportsDropped uint64
}

// ToolSnapshot holds the measurements of one tool.
type ToolSnapshot struct {
	// Calls counts ended calls by outcome; outcomes that never happened are absent.
	Calls map[Outcome]uint64
	// InFlight is the number of calls of the tool started and not yet ended.
	InFlight int64
	// LateResponsesSuppressed counts outcomes dropped because they came after the call was
	// cancelled or answered.
	LateResponsesSuppressed uint64
	// Latency is the distribution of the ended calls' latencies.
	Latency Histogram
}

// Histogram is a latency distribution in seconds.
type Histogram struct {
	// Bounds are the buckets' upper bounds, ascending.
	Bounds []float64
	// Counts[i] counts observations v with Bounds[i-1] < v <= Bounds[i] (not cumulative);
	// the last element counts those above every bound.
	Counts []uint64
	// Count is the number of observations.
	Count uint64
	// Sum is the total of the observations, in seconds.
	Sum float64
}

func (h *Histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.Bounds, v) // first bound >= v
	h.Counts[i]++
	h.Count++
	h.Sum += v
}

// Snapshot returns a copy of the measurements; later calls do not change it.
func (m *Memory) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Snapshot{Tools: make(map[string]ToolSnapshot, len(m.tools)), InFlight: m.inFlight, ReportsDropped: m.dropped}
	for name, t := range m.tools {
		calls := make(map[Outcome]uint64, len(t.calls))
		for o, n := range t.calls {
			calls[o] = n
		}
		h := t.latency
		h.Counts = slices.Clone(h.Counts)
		s.Tools[name] = ToolSnapshot{Calls: calls, InFlight: t.inFlight, LateResponsesSuppressed: t.late, Latency: h}
	}
	return s
}

// Calls returns the number of ended calls of tool with outcome o.
func (s Snapshot) Calls(tool string, o Outcome) uint64 { return s.Tools[tool].Calls[o] }

// Cancellations returns the number of calls, over all tools, that ended [Cancelled].
func (s Snapshot) Cancellations() uint64 {
	var n uint64
	for _, t := range s.Tools {
		n += t.Calls[Cancelled]
	}
	return n
}

// LateResponsesSuppressed returns the number of late outcomes dropped, over all tools.
func (s Snapshot) LateResponsesSuppressed() uint64 {
	var n uint64
	for _, t := range s.Tools {
		n += t.LateResponsesSuppressed
	}
	return n
}
