package prom_test

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/metrics/prom"
)

// gather returns every sample of reg as "name{label=value,...} value" lines, sorted; histograms
// give their sample count.
func gather(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				v = float64(m.GetHistogram().GetSampleCount())
			}
			lines = append(lines, mf.GetName()+"{"+strings.Join(labels, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	sort.Strings(lines)
	return lines
}

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	col := prom.New(prom.Options{ConstLabels: prometheus.Labels{"server": "a"}})
	reg.MustRegister(col)

	var r metrics.Recorder = col
	r.CallStarted("echo")
	r.CallStarted("echo")
	r.CallStarted("sleep")
	r.CallEnded("echo", metrics.OK, time.Millisecond)
	r.CallEnded("sleep", metrics.Cancelled, time.Second)
	r.LateResponseSuppressed("sleep")
	r.ReportDropped()

	want := []string{
		"toolgrain_diagnostics_reports_dropped_total{server=a} 1",
		"toolgrain_late_responses_suppressed_total{server=a,tool=sleep} 1",
		"toolgrain_tool_call_duration_seconds{server=a,tool=echo} 1",
		"toolgrain_tool_call_duration_seconds{server=a,tool=sleep} 1",
		"toolgrain_tool_calls_in_flight{server=a,tool=echo} 1",
		"toolgrain_tool_calls_in_flight{server=a,tool=sleep} 0",
		"toolgrain_tool_calls_total{outcome=cancelled,server=a,tool=sleep} 1",
		"toolgrain_tool_calls_total{outcome=ok,server=a,tool=echo} 1",
		"toolgrain_tool_cancellations_total{server=a,tool=sleep} 1",
	}
	got := gather(t, reg)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTwoCollectors: two servers in one process export side by side, told apart by their
// namespace; nothing is registered globally.
func TestTwoCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.New(prom.Options{}), prom.New(prom.Options{Namespace: "other", Buckets: []float64{1}}))
	if err := reg.Register(prom.New(prom.Options{})); err == nil {
		t.Error("a duplicate collector registered")
	}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "toolgrain_") {
			t.Errorf("%s is on the default registry", mf.GetName())
		}
	}
}
