// Package scenario runs the benchmark scenarios of mcpbench against one MCP
// server and returns their results: throughput, cancel, mixed and errors.
// Each scenario opens its own connection through [Target.Dial], so it can be
// run against any server, over stdio or Streamable HTTP.
package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
)

// Result is one run of one scenario against one target. It is what
// mcpbench --json prints, one object per run.
type Result struct {
	Scenario  string `json:"scenario"`
	Target    string `json:"target"`
	Transport string `json:"transport"`
	// Era is "legacy" or "modern"; results written before eras existed
	// have none, and are legacy.
	Era      string          `json:"era,omitempty"`
	Endpoint string          `json:"endpoint"`
	Server   json.RawMessage `json:"server_info,omitempty"`
	Protocol string          `json:"protocol_version,omitempty"`
	Started  time.Time       `json:"started"`
	Elapsed  float64         `json:"elapsed_sec"`
	Host     Host            `json:"host"`
	Params   map[string]any  `json:"params"`
	// Metrics are the numbers; [Metrics] describes each.
	Metrics map[string]float64 `json:"metrics"`
	// Probes are the errors scenario's single bad inputs.
	Probes []Probe `json:"probes,omitempty"`
	// Notes say what went wrong or what a reader should know.
	Notes []string `json:"notes,omitempty"`
	// NotApplicable, if set, says why the scenario could not run: the target
	// does not serve the era asked for. Such a result has no metrics.
	NotApplicable string `json:"not_applicable,omitempty"`
}

// EraName is the result's era, "legacy" when it has none.
func (r *Result) EraName() string {
	if r.Era == "" {
		return string(client.Legacy)
	}
	return r.Era
}

// Host describes the machine a result was measured on.
type Host struct {
	CPU    string `json:"cpu"`
	Cores  int    `json:"cores"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel,omitempty"`
	Go     string `json:"go"`
}

// ThisHost describes the machine this process runs on.
func ThisHost() Host {
	h := Host{Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return h
}

func (r *Result) set(name string, v float64) { r.Metrics[name] = v }

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, sprintf(format, args...))
}

// Direction says which way a metric is better.
type Direction int

// Directions of metrics.
const (
	Neutral Direction = iota // informative only
	Higher                   // more is better
	Lower                    // less is better
)

func (d Direction) String() string {
	switch d {
	case Higher:
		return "higher"
	case Lower:
		return "lower"
	}
	return ""
}

// MetricInfo describes a metric.
type MetricInfo struct {
	Name   string
	Unit   string
	Better Direction
	Doc    string
}

// Metrics lists every metric the scenarios report, in display order.
var Metrics = []MetricInfo{
	// throughput, mixed, errors (load part)
	{"calls_per_sec", "calls/s", Higher, "successful echo calls per second in the measured window"},
	{"completed_per_sec", "calls/s", Higher, "mixed: calls finished per second (echo answered or sleep cancelled)"},
	{"echo_per_sec", "calls/s", Higher, "mixed: echo calls answered correctly per second"},
	{"cancelled_per_sec", "calls/s", Higher, "mixed: sleep calls cancelled per second"},
	{"fail_calls_per_sec", "calls/s", Higher, "errors: fail(mode=error) calls answered per second"},
	{"calls_total", "calls", Neutral, "calls that succeeded over the whole run, warm-up included (mixed: with the cancelled sleeps)"},
	{"p50_ms", "ms", Lower, "median latency of the measured calls (client side, send to response)"},
	{"p90_ms", "ms", Lower, "90th percentile latency"},
	{"p99_ms", "ms", Lower, "99th percentile latency"},
	{"max_ms", "ms", Lower, "slowest measured call"},
	{"errors", "calls", Lower, "calls that failed: wrong answer, JSON-RPC error, transport error or timeout"},
	{"errors_tool", "calls", Lower, "of the errors: isError results (tool errors; never taken for answers)"},
	{"errors_rpc", "calls", Lower, "of the errors: JSON-RPC errors (refusals, unknown tool, invalid params)"},
	{"errors_other", "calls", Lower, "of the errors: transport errors, timeouts, wrong answers"},
	{"server_cpu_us_per_call", "µs", Lower, "server CPU time (user+system) per measured call, from /proc (needs a pid)"},
	{"server_alloc_bytes_per_call", "B", Lower, "bytes the server's Go runtime allocated per measured call (runtime.MemStats.TotalAlloc from its net/http/pprof; needs --pprof)"},
	{"server_allocs_per_call", "allocs", Lower, "heap objects the server's Go runtime allocated per measured call (runtime.MemStats.Mallocs; needs --pprof)"},
	{"rss_idle_kb", "KiB", Lower, "throughput: server resident memory after the handshake and one echo, before the load"},
	{"rss_load_kb", "KiB", Lower, "server resident memory at the end of the measured window, with the load still running"},
	{"rss_idle_anon_kb", "KiB", Lower, "throughput: the anonymous part of rss_idle_kb (RssAnon: heap, stacks), without the executable's pages"},
	{"rss_load_anon_kb", "KiB", Lower, "the anonymous part of rss_load_kb (RssAnon)"},
	{"rss_kb", "KiB", Lower, "server resident memory at the end of the run"},
	{"threads", "", Lower, "server OS threads at the end of the run"},
	// cancellation
	{"late_responses", "responses", Lower, "responses received for calls after their cancellation was sent (the spec says none)"},
	{"late_ok", "responses", Lower, "of those, successful results (the call finished as the cancel crossed it, or the cancel was ignored)"},
	{"progress_received", "notifications", Neutral, "cancel: progress notifications received (the slow calls that asked for progress, -progress-every)"},
	{"progress_after_cancel", "notifications", Lower, "cancel: progress notifications for cancelled calls received after their cancellation was sent, including those already on their way"},
	{"late_progress", "notifications", Lower, "cancel: progress notifications for cancelled calls received after the follow-up call was answered, when the server had taken every cancellation (the spec says none)"},
	{"streams_open_after_window", "streams", Lower, "HTTP: POST streams of cancelled calls still open when the window ended"},
	{"quiet_closes", "streams", Higher, "legacy HTTP: POST streams of cancelled calls the server ended without a response (the good outcome)"},
	{"streams_closed_by_client", "streams", Neutral, "modern HTTP: POST streams of cancelled calls the client closed, which is how it cancels them"},
	{"sent", "calls", Neutral, "cancel: sleep calls sent"},
	{"written", "calls", Higher, "cancel: sleep calls the server read from its input before the timeout (stdio) or whose POST was written (HTTP)"},
	{"answered_before_cancel", "calls", Lower, "cancel: sleep calls answered before they were cancelled (rejections)"},
	{"cancels_sent", "cancellations", Neutral, "cancellations sent: notifications/cancelled, or over modern HTTP streams closed (mixed: over the whole run, warm-up included)"},
	{"cancel_send_ms", "ms", Lower, "cancel: time to send all cancellations"},
	{"loaded_ping_ms", "ms", Lower, "cancel: ping round trip while all sleep calls are in flight"},
	{"echo_after_first_cancel_ms", "ms", Lower, "cancel: from the first cancellation sent to the follow-up echo answered"},
	{"echo_after_last_cancel_ms", "ms", Lower, "cancel: from the last cancellation sent to the follow-up echo answered"},
	{"rss_before_kb", "KiB", Lower, "cancel: server resident memory before the load"},
	{"rss_loaded_kb", "KiB", Lower, "cancel: with all sleep calls in flight"},
	{"rss_after_kb", "KiB", Lower, "cancel: at the end of the late-response window"},
	{"rss_settled_kb", "KiB", Lower, "cancel: after the settle period"},
	{"rss_settled_pct_of_before", "%", Lower, "cancel: settled memory as a percentage of memory before the load"},
	{"threads_before", "", Lower, "cancel: server OS threads before the load"},
	{"threads_loaded", "", Lower, "cancel: with all sleep calls in flight"},
	{"threads_after", "", Lower, "cancel: at the end of the late-response window"},
	{"threads_settled", "", Lower, "cancel: after the settle period"},
	// cancel-cpu
	{"cpu_idle_pct", "%", Lower, "cancel-cpu: server CPU (percent of one core) while idle, before the CPU-bound calls"},
	{"cpu_loaded_pct", "%", Neutral, "cancel-cpu: server CPU with the CPU-bound calls in flight"},
	{"cpu_after_cancel_pct", "%", Lower, "cancel-cpu: server CPU over the window after the last cancellation"},
	{"cpu_work_left_pct", "%", Lower, "cancel-cpu: (after - idle) / (loaded - idle): the share of the cancelled work that kept running"},
	{"work_stopped", "yes=1", Higher, "cancel-cpu: 1 when the server's CPU fell back within 25 % of the way to idle after the cancellation, 0 when the cancelled work kept running"},
	// errors
	{"probes", "probes", Neutral, "errors: bad inputs sent"},
	{"probes_survived", "probes", Higher, "errors: probes after which the session still answered a ping"},
	{"ids_ok", "probes", Higher, "errors: replies whose id was what the spec asks: the request's id byte for byte, or null if it could not be read"},
	{"ids_checked", "probes", Neutral, "errors: probes with an id to echo"},
	{"battery_leaks", "probes", Lower, "errors: probes whose reply contained the private marker SECRET-internal-detail"},
	{"fail_leaks", "responses", Lower, "errors: fail(mode=error) responses under load, warm-up included, that contained the private marker"},
	{"fail_rpc_errors", "responses", Neutral, "errors: fail(mode=error) answers, warm-up included, that were JSON-RPC errors rather than isError results"},
}

var metricIndex = func() map[string]int {
	m := make(map[string]int, len(Metrics))
	for i, mi := range Metrics {
		m[mi.Name] = i
	}
	return m
}()

// Info returns the description of a metric; unknown names get a zero
// MetricInfo with only the name set.
func Info(name string) MetricInfo {
	if i, ok := metricIndex[name]; ok {
		return Metrics[i]
	}
	return MetricInfo{Name: name}
}

// Less orders metric names for display: known metrics in [Metrics] order,
// then the rest alphabetically.
func Less(a, b string) bool {
	ia, oka := metricIndex[a]
	ib, okb := metricIndex[b]
	switch {
	case oka && okb:
		return ia < ib
	case oka != okb:
		return oka
	}
	return a < b
}
