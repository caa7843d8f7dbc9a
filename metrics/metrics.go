// Package metrics is how a host exports what the engine does: calls by tool and outcome, calls
// in flight, cancellations, late responses suppressed, diagnostics reports dropped and call
// latency.
//
// The engine reports to a [Recorder] given in the server's configuration. [Nop] records
// nothing and is the default; [Memory] keeps everything in memory for tests and simple status
// pages; package metrics/prom adapts a Recorder to Prometheus collectors that the host
// registers on its own registry. Nothing here touches global state.
package metrics

import "time"

// Outcome says how one tools/call ended. Every call that reached its tool ends with exactly one.
type Outcome string

// The outcomes of a call. They are stable: use them as metric label values.
const (
	// OK: the tool returned a result and the client got it.
	OK Outcome = "ok"
	// ToolError: the tool returned an explicit public error result (isError) and the client got
	// it unchanged.
	ToolError Outcome = "tool_error"
	// Invalid: the arguments or the _meta failed the tool's schema; the client got validation
	// feedback.
	Invalid Outcome = "invalid"
	// Failed: an unexpected failure (a handler error or panic, a failing provider, a bad output,
	// a failing or dead actor); the client got "Tool execution failed".
	Failed Outcome = "failed"
	// Timeout: the tool's timeout passed first; an unexpected failure like Failed.
	Timeout Outcome = "timeout"
	// Cancelled: the call was silenced (the client cancelled it, its connection closed or the
	// server shut down) before it was answered; the client got nothing.
	Cancelled Outcome = "cancelled"
	// InputRequired: the call, made in the modern era (MCP 2026-07-28), needs input from the
	// client; it was answered input_required and the client may retry it with the answers (a
	// new call).
	InputRequired Outcome = "input_required"
	// Task: the call was answered with a task (the io.modelcontextprotocol/tasks extension),
	// which goes on running after the call.
	Task Outcome = "task"
)

// Outcomes lists every [Outcome], in a stable order.
var Outcomes = []Outcome{OK, ToolError, Invalid, Failed, Timeout, Cancelled, InputRequired, Task}

// Recorder receives the engine's measurements.
//
// Its methods are called from the engine's actors, concurrently and on hot paths: they must be
// safe for concurrent use, must not block and must not panic. Counting in memory is fine;
// anything slower belongs on a goroutine of the implementation's own.
type Recorder interface {
	// CallStarted is called when a tools/call for the tool is accepted (its request actor
	// started). It is followed by exactly one CallEnded for the same call.
	CallStarted(tool string)
	// CallEnded is called once per started call, when the call is answered or silenced, with
	// the outcome and the time since CallStarted. A handler may still be running after a
	// Cancelled or Timeout outcome: its work is no longer wanted and its result is dropped.
	CallEnded(tool string, outcome Outcome, latency time.Duration)
	// LateResponseSuppressed is called when an outcome (a result or a failure) became ready
	// after its call had been cancelled or already answered by its timeout, and was dropped
	// instead of being sent or reported.
	LateResponseSuppressed(tool string)
	// ReportDropped is called when an unexpected-failure report could not be queued for
	// OnError because the diagnostics queue was full.
	ReportDropped()
}

// Nop is a [Recorder] that records nothing. Its zero value is ready to use.
type Nop struct{}

var _ Recorder = Nop{}

// CallStarted does nothing.
func (Nop) CallStarted(string) {}

// CallEnded does nothing.
func (Nop) CallEnded(string, Outcome, time.Duration) {}

// LateResponseSuppressed does nothing.
func (Nop) LateResponseSuppressed(string) {}

// ReportDropped does nothing.
func (Nop) ReportDropped() {}

// DefaultBuckets are the upper bounds, in seconds, of the latency histogram buckets [Memory]
// and package metrics/prom use unless told otherwise: from 100 µs to 60 s.
var DefaultBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
