package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/bench/report"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

// run makes one result of a scenario; c is the concurrency (0: none).
func run(target, transport, era, scen string, c int, metrics map[string]float64) scenario.Result {
	r := scenario.Result{Scenario: scen, Target: target, Transport: transport, Era: era, Metrics: metrics,
		Params: map[string]any{}}
	if c > 0 {
		r.Params["concurrency"] = float64(c) // as decoded from JSON
	}
	return r
}

func na(target, transport, era, scen string, c int) scenario.Result {
	r := run(target, transport, era, scen, c, nil)
	r.NotApplicable = "the server does not serve MCP 2026-07-28"
	return r
}

// fixture is a small run of ours, mcp-go and the floor over stdio, in both
// eras, at 16 calls, with mcp-go not applicable in the modern era.
func fixture() []scenario.Result {
	tp := func(cps, p99, cpu, alloc, idle, load float64) map[string]float64 {
		return map[string]float64{"calls_per_sec": cps, "p50_ms": p99 / 4, "p99_ms": p99, "server_cpu_us_per_call": cpu,
			"server_alloc_bytes_per_call": alloc, "rss_idle_kb": idle, "rss_load_kb": load}
	}
	return []scenario.Result{
		run("toolgrain", "stdio", "legacy", "throughput", 16, tp(16000, 4, 19, 1900, 20000, 30000)),
		run("mcp-go", "stdio", "legacy", "throughput", 16, tp(10000, 5, 80, 9000, 12000, 16000)),
		run("stdlib", "stdio", "legacy", "throughput", 16, tp(25000, 3, 15, 1800, 8000, 14000)),
		run("toolgrain", "stdio", "modern", "throughput", 16, tp(9000, 8, 40, 4000, 21000, 36000)),
		na("mcp-go", "stdio", "modern", "throughput", 16),
		run("stdlib", "stdio", "modern", "throughput", 16, tp(20000, 3, 30, 2200, 8000, 14000)),
		run("toolgrain", "stdio", "legacy", "cancel", 0, map[string]float64{"late_responses": 0, "sent": 10000,
			"echo_after_last_cancel_ms": 25, "rss_settled_pct_of_before": 140, "rss_before_kb": 20000, "rss_settled_kb": 28000}),
		run("toolgrain", "http", "modern", "cancel", 0, map[string]float64{"late_responses": 0, "sent": 10000,
			"rss_settled_pct_of_before": 300, "rss_before_kb": 20000, "rss_settled_kb": 60000}),
	}
}

func verdict(t *testing.T, vs []report.Verdict, transport, era, goalPrefix string) report.Verdict {
	t.Helper()
	for _, v := range vs {
		if v.Transport == transport && v.Era == era && strings.HasPrefix(v.Goal, goalPrefix) {
			return v
		}
	}
	t.Fatalf("no verdict %q for %s %s in %+v", goalPrefix, transport, era, vs)
	return report.Verdict{}
}

func TestEvaluate(t *testing.T) {
	vs := report.Evaluate(report.Summarize(fixture(), "toolgrain"), report.Names{})
	tests := []struct {
		transport, era, goal string
		status               report.Status
		result               string
	}{
		{"stdio", "legacy", "echo throughput ≥ 1.50× mcp-go", report.Met, "1.60× (toolgrain 16,000, mcp-go 10,000 calls/s)"},
		{"stdio", "legacy", "p99 no worse", report.Met, "4 ms against 5 ms"},
		// The floor's 15 µs × 1.5 is 22.5, above the 20 µs limit.
		{"stdio", "legacy", "server CPU", report.Met, "19 µs against 1.5× stdlib's 15 µs (stdlib: 15 µs)"},
		{"stdio", "legacy", "RSS idle", report.Missed, "1.67× (20,000 against 12,000 KiB)"},
		{"stdio", "legacy", "RSS under load", report.Missed, "1.88× (30,000 against 16,000 KiB)"},
		{"stdio", "legacy", "allocation", report.Met, "1,900 B per call"},
		// mcp-go did not run in the modern era: its legacy figures stand in.
		{"stdio", "modern", "echo throughput", report.Missed, "0.90× (toolgrain 9,000, mcp-go 10,000 calls/s; mcp-go in the legacy era)"},
		{"stdio", "modern", "server CPU", report.Met, "40 µs against 1.5× stdlib's 30 µs (stdlib: 30 µs)"},
		{"stdio", "modern", "allocation", report.Missed, "4,000 B per call"},
		{"stdio", "legacy", "after 10,000 cancelled sleeps", report.Met, "0 late"},
		{"stdio", "legacy", "follow-up echo", report.Missed, "25 ms"},
		{"stdio", "legacy", "RSS after the burst", report.Met, "140% (20,000 → 28,000 KiB)"},
		{"http", "modern", "after 10,000 cancelled sleeps", report.NA, "the client cancels by closing the stream a response would come on"},
		{"http", "modern", "RSS after the burst", report.Missed, "300% (20,000 → 60,000 KiB)"},
	}
	for _, tt := range tests {
		v := verdict(t, vs, tt.transport, tt.era, tt.goal)
		if v.Status != tt.status || v.Result != tt.result {
			t.Errorf("%s %s %q = %s %q; want %s %q", tt.transport, tt.era, v.Goal, v.Status, v.Result, tt.status, tt.result)
		}
	}
	for _, v := range vs {
		if v.Transport == "http" && strings.HasPrefix(v.Goal, "follow-up") {
			t.Errorf("a follow-up echo goal over HTTP: %+v", v)
		}
	}
	// With the anonymous part of both RSS figures, the result gives their ratio as well; the
	// verdict stays on the whole RSS.
	rs := fixture()
	rs[0].Metrics["rss_idle_anon_kb"] = 6000
	rs[1].Metrics["rss_idle_anon_kb"] = 4800
	v := verdict(t, report.Evaluate(report.Summarize(rs, "toolgrain"), report.Names{}), "stdio", "legacy", "RSS idle")
	if want := "1.67× (20,000 against 12,000 KiB); anonymous 1.25× (6,000 against 4,800 KiB)"; v.Status != report.Missed || v.Result != want {
		t.Errorf("RSS idle with its anonymous part = %s %q; want missed %q", v.Status, v.Result, want)
	}
	// Without an allocation figure, the goal has no data rather than a pass.
	rs = fixture()
	delete(rs[0].Metrics, "server_alloc_bytes_per_call")
	v = verdict(t, report.Evaluate(report.Summarize(rs, "toolgrain"), report.Names{}), "stdio", "legacy", "allocation")
	if v.Status != report.NoData {
		t.Errorf("allocation without data = %+v", v)
	}
}

// TestEvaluateGateway: the gateway's goal is judged over stdio at each load where the run
// measured it, against ours directly; the least proxy, when measured, is the floor it shows.
func TestEvaluateGateway(t *testing.T) {
	cpu := func(v float64) map[string]float64 { return map[string]float64{"server_cpu_us_per_call": v} }
	rs := []scenario.Result{
		run("toolgrain", "stdio", "legacy", "throughput", 1, cpu(100)),
		run("gw-toolgrain", "stdio", "legacy", "throughput", 1, cpu(190)),
		run("px-toolgrain", "stdio", "legacy", "throughput", 1, cpu(60)),
		run("toolgrain", "stdio", "legacy", "throughput", 16, cpu(20)),
		run("gw-toolgrain", "stdio", "legacy", "throughput", 16, cpu(29)),
		run("gw-toolgrain", "stdio", "legacy", "throughput", 16, cpu(28)),
		run("gw-toolgrain", "stdio", "legacy", "throughput", 16, cpu(40)),
		run("toolgrain", "stdio", "modern", "throughput", 16, cpu(20)),
		run("toolgrain", "http", "legacy", "throughput", 16, cpu(20)),
		run("gw-toolgrain", "http", "legacy", "throughput", 16, cpu(25)),
	}
	var got []string
	for _, v := range report.Evaluate(report.Summarize(rs, "toolgrain"), report.Names{}) {
		if strings.HasPrefix(v.Goal, "gw-toolgrain's CPU") {
			got = append(got, fmt.Sprintf("%s %s %d: %s %s", v.Transport, v.Era, v.Concurrency, v.Status, v.Result))
		}
	}
	want := []string{
		"stdio legacy 1: missed 1.90× (190 µs against 100 µs); the hop alone (px-toolgrain): 60 µs, 0.60×; the gateway above it: 1.30×",
		// The median of three runs: 29.
		"stdio legacy 16: met 1.45× (29 µs against 20 µs)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("gateway verdicts:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSummarizeErasAndNotApplicable(t *testing.T) {
	s := report.Summarize(fixture(), "toolgrain")
	g := s.Group("throughput", "stdio", "modern", 16)
	if g == nil || g.Title() != "throughput over stdio, modern era, 16 concurrent" {
		t.Fatalf("group = %+v", g)
	}
	if g.NotApplicable["mcp-go"] == "" || g.Runs["mcp-go"] != 0 || strings.Join(g.Targets, ",") != "toolgrain,mcp-go,stdlib" {
		t.Errorf("modern group: targets %v, n/a %v, runs %v", g.Targets, g.NotApplicable, g.Runs)
	}
	var titles []string
	for _, g := range s.Groups {
		titles = append(titles, g.Title())
	}
	want := "throughput over stdio, legacy era, 16 concurrent|throughput over stdio, modern era, 16 concurrent|" +
		"cancel over stdio, legacy era|cancel over http, modern era"
	if got := strings.Join(titles, "|"); got != want {
		t.Errorf("groups = %s\nwant %s", got, want)
	}
	var b bytes.Buffer
	if err := report.Write(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mcp-go (n/a)", "not applicable (mcp-go): the server does not serve MCP 2026-07-28"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if !strings.Contains(b.String(), "n/a") {
		t.Error("no n/a cell")
	}
	j := report.ToJSON(s)
	if len(j.NotApplicable) != 1 || j.NotApplicable[0].Target != "mcp-go" || j.NotApplicable[0].Era != "modern" {
		t.Errorf("JSON n/a = %+v", j.NotApplicable)
	}
}

func TestEras(t *testing.T) {
	rows := report.Eras(report.Summarize(fixture(), "toolgrain"))
	if len(rows) != 3 {
		t.Fatalf("rows = %+v, want toolgrain, mcp-go and stdlib", rows)
	}
	var b bytes.Buffer
	if err := report.WriteErasMarkdown(&b, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| stdio | 16 | toolgrain | 16,000 / 9,000 | 0.56× | 1 / 2 | 4 / 8 | 19 / 40 | 1,900 / 4,000 |",
		"| stdio | 16 | mcp-go | 10,000 / n/a | - |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := report.WriteTargetsMarkdown(&b, report.Evaluate(report.Summarize(fixture(), "toolgrain"), report.Names{})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| stdio | legacy | 16 | echo throughput ≥ 1.50× mcp-go | 1.60× (toolgrain 16,000, mcp-go 10,000 calls/s) | **met** |") {
		t.Errorf("targets markdown:\n%s", b.String())
	}
}
