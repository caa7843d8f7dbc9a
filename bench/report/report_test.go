package report_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/bench/report"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		give []float64
		want float64
	}{
		{"one", []float64{7}, 7},
		{"odd", []float64{9, 1, 5}, 5},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"repeated", []float64{2, 2, 9}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := report.Median(tt.give); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.give, got, tt.want)
			}
		})
	}
	if !math.IsNaN(report.Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
	in := []float64{3, 1, 2}
	report.Median(in)
	if in[0] != 3 {
		t.Error("Median reordered its argument")
	}
}

func result(target, transport, scen string, metrics map[string]float64) scenario.Result {
	return scenario.Result{Scenario: scen, Target: target, Transport: transport, Metrics: metrics,
		Host: scenario.Host{CPU: "test cpu", Cores: 2}}
}

// runs makes three runs per target of throughput over stdio.
func runs() []scenario.Result {
	var rs []scenario.Result
	for _, v := range []struct {
		target string
		cps    []float64
		p99    []float64
	}{
		{"mcp-go", []float64{800, 1000, 900}, []float64{4, 2, 3}},
		{"toolgrain", []float64{2000, 1800, 2200}, []float64{1, 1, 2}},
		{"go-sdk", []float64{500, 400, 450}, []float64{9, 8, 10}},
	} {
		for i := range v.cps {
			rs = append(rs, result(v.target, "stdio", "throughput", map[string]float64{
				"calls_per_sec": v.cps[i], "p99_ms": v.p99[i],
			}))
		}
	}
	return rs
}

func TestSummarize(t *testing.T) {
	s := report.Summarize(runs(), "toolgrain")
	if len(s.Groups) != 1 {
		t.Fatalf("%d groups, want 1", len(s.Groups))
	}
	g := s.Groups[0]
	if got := strings.Join(g.Targets, ","); got != "toolgrain,mcp-go,go-sdk" {
		t.Errorf("targets = %s, want the baseline first, then in order of appearance", got)
	}
	want := map[string]map[string]float64{
		"calls_per_sec": {"toolgrain": 2000, "mcp-go": 900, "go-sdk": 450},
		"p99_ms":        {"toolgrain": 1, "mcp-go": 3, "go-sdk": 9},
	}
	for m, byTarget := range want {
		for target, v := range byTarget {
			if got := g.Medians[m][target]; got != v {
				t.Errorf("median %s of %s = %v, want %v", m, target, got, v)
			}
		}
	}
	if g.Runs["mcp-go"] != 3 {
		t.Errorf("runs = %v", g.Runs)
	}
	if got := strings.Join(g.Metrics, ","); got != "calls_per_sec,p99_ms" {
		t.Errorf("metric order = %s", got)
	}
}

func TestSummarizeDefaultBaseline(t *testing.T) {
	if s := report.Summarize(runs(), ""); s.Baseline != "mcp-go" {
		t.Errorf("baseline = %q, want the first target seen", s.Baseline)
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		base, other float64
		ok          bool
		want        string
	}{
		{2000, 450, true, "4.44x"},
		{3, 3, true, "1.00x"},
		{0, 0, true, "1.00x"},
		{5, 0, true, "-"},
		{5, 1, false, "-"},
	}
	for _, tt := range tests {
		if got := report.Ratio(tt.base, tt.other, tt.ok, tt.ok); got != tt.want {
			t.Errorf("Ratio(%v, %v) = %s, want %s", tt.base, tt.other, got, tt.want)
		}
	}
}

func TestWrite(t *testing.T) {
	rs := runs()
	rs = append(rs, scenario.Result{Scenario: "errors", Target: "toolgrain", Transport: "stdio",
		Metrics: map[string]float64{"probes": 1},
		Probes: []scenario.Probe{{Name: "malformed JSON", Expect: "-32700", Reply: "error -32700 \"parse\"",
			ID: "null", Survived: true}},
		Notes: []string{"a note"}})
	var b bytes.Buffer
	if err := report.Write(&b, report.Summarize(rs, "toolgrain")); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"machine: test cpu, 2 cores",
		"== throughput over stdio, legacy era ==",
		"toolgrain (n=3)", "toolgrain÷mcp-go", "toolgrain÷go-sdk",
		"2.22x", // calls/s 2000 ÷ 900
		"4.44x", // 2000 ÷ 450
		"0.33x", // p99 1 ÷ 3
		"== errors over stdio, legacy era ==",
		"malformed JSON — expected: -32700",
		`error -32700 "parse"; id null; session alive`,
		"note (toolgrain): a note",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "throughput") > strings.Index(out, "errors over") {
		t.Error("scenarios out of order")
	}
}

func TestRead(t *testing.T) {
	var b bytes.Buffer
	for _, r := range runs()[:2] {
		json.NewEncoder(&b).Encode(r)
	}
	b.WriteString(`{"scenario":"cancel","target":"x","transport":"http","metrics":{"late_responses":0}}`) // no newline
	got, err := report.Read(&b)
	if err != nil || len(got) != 3 || got[2].Metrics["late_responses"] != 0 || got[2].Scenario != "cancel" {
		t.Errorf("Read = %+v, %v", got, err)
	}
	if _, err := report.Read(strings.NewReader(`{"foo":1}`)); err == nil {
		t.Error("Read accepted an object that is not a result")
	}
	if _, err := report.Read(strings.NewReader(`{"scenario":`)); err == nil {
		t.Error("Read accepted truncated JSON")
	}
}

func TestToJSON(t *testing.T) {
	j := report.ToJSON(report.Summarize(runs(), "toolgrain"))
	found := false
	for _, r := range j.Rows {
		if r.Target == "go-sdk" && r.Metric == "calls_per_sec" {
			found = true
			if r.Median != 450 || r.Ratio == nil || math.Abs(*r.Ratio-2000.0/450) > 1e-9 || r.Runs != 3 {
				t.Errorf("row = %+v", r)
			}
		}
		if r.Target == "toolgrain" && r.Ratio != nil {
			t.Errorf("baseline row has a ratio: %+v", r)
		}
	}
	if !found {
		t.Error("no go-sdk calls_per_sec row")
	}
}
