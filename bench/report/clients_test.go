package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/bench/report"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

func clientsResult(target, kind string, n int, metrics map[string]float64) scenario.Result {
	return scenario.Result{Scenario: "clients", Target: target, Transport: "http",
		Params: map[string]any{"kind": kind, "n": float64(n)}, Metrics: metrics}
}

// TestClientsReport: the clients results are kept apart from the others, their medians are
// taken per kind, count and target (ours first), and the goals are judged on ours only.
func TestClientsReport(t *testing.T) {
	rs := []scenario.Result{
		{Scenario: "throughput", Target: "toolgrain", Transport: "http", Metrics: map[string]float64{"calls_per_sec": 1}},
		clientsResult("mcp-go", "listen", 9000, map[string]float64{"kb_per_client": 29}),
		clientsResult("toolgrain", "listen", 9000, map[string]float64{"kb_per_client": 5, "fanout_p50_ms": 50, "fanout_p99_ms": 200, "fanout_missed": 0}),
		clientsResult("toolgrain", "listen", 9000, map[string]float64{"kb_per_client": 7, "fanout_p99_ms": 900, "fanout_missed": 0}),
		clientsResult("toolgrain", "listen", 9000, map[string]float64{"kb_per_client": 6, "fanout_p99_ms": 300, "fanout_missed": 0}),
		clientsResult("toolgrain", "session", 9000, map[string]float64{"kb_per_client": 3}),
	}
	clients, others := report.SplitClients(rs)
	if len(clients) != 5 || len(others) != 1 {
		t.Fatalf("split: %d clients, %d others", len(clients), len(others))
	}
	rows := report.SummarizeClients(clients, "toolgrain")
	var order []string
	for _, r := range rows {
		order = append(order, r.Kind+"/"+r.Target)
	}
	if got := strings.Join(order, " "); got != "session/toolgrain listen/toolgrain listen/mcp-go" {
		t.Errorf("order = %s", got)
	}
	if v, _ := rows[1].Median("kb_per_client"); v != 6 || rows[1].Runs != 3 {
		t.Errorf("listen medians: kb %v, runs %d", v, rows[1].Runs)
	}
	vs := report.EvaluateClients(rows, "toolgrain")
	status := map[string]report.Status{}
	for _, v := range vs {
		status[v.Era+": "+v.Goal] = v.Status
	}
	want := map[string]report.Status{
		"session: idle legacy session, no stream: at most 2 KiB each":                     report.Missed,
		"listen: open subscriptions/listen stream: at most 8 KiB each":                    report.Met,
		"listen: 100,000 such clients under 1 GiB (the slope extrapolated, not measured)": report.Met,
		"listen: a list change reaches every stream: p99 within 500 ms":                   report.Met,
		"listen: a resource update reaches every stream: p99 within 500 ms":               report.NoData,
	}
	for goal, st := range want {
		if status[goal] != st {
			t.Errorf("%s: %q, want %q (all: %v)", goal, status[goal], st, status)
		}
	}
	if len(vs) != len(want) {
		t.Errorf("%d verdicts, want %d: %v", len(vs), len(want), status)
	}
	var md bytes.Buffer
	if err := report.WriteClientsMarkdown(&md, rows, vs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| listen | 9000 | mcp-go | — | 29 |") {
		t.Errorf("markdown lacks the mcp-go row:\n%s", md.String())
	}
	charts := report.ClientsCharts(rows, nil)
	if len(charts) != 2 || charts[0].Name != "clients_memory.svg" {
		t.Errorf("charts: %d", len(charts))
	}
}
