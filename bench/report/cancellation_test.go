package report_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/bench/report"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

// cancelRuns: two targets, two cancel bursts and cancel-cpu over stdio in
// the legacy era; over HTTP in the modern era one of them is not
// applicable.
func cancelRuns() []scenario.Result {
	var rs []scenario.Result
	add := func(target, transport, era, scen string, n int, m map[string]float64) {
		r := result(target, transport, scen, m)
		r.Era = era
		r.Params = map[string]any{"n": float64(n)}
		rs = append(rs, r)
	}
	for i := range 3 {
		add("ours", "stdio", "legacy", "cancel", 1000, map[string]float64{"late_responses": 0, "late_progress": 0})
		add("ours", "stdio", "legacy", "cancel", 10000, map[string]float64{"late_responses": 0, "late_progress": 0,
			"echo_after_last_cancel_ms": float64(2 + i), "rss_before_kb": 10240, "rss_after_kb": 20480, "rss_settled_pct_of_before": 150})
		add("ours", "stdio", "legacy", "cancel-cpu", 8, map[string]float64{"work_stopped": 1, "cpu_work_left_pct": float64(i)})
		add("theirs", "stdio", "legacy", "cancel", 1000, map[string]float64{"late_responses": 1000, "late_progress": float64(5 * i)})
		add("theirs", "stdio", "legacy", "cancel", 10000, map[string]float64{"late_responses": float64(9990 + i), "late_progress": 40,
			"echo_after_last_cancel_ms": 300, "rss_before_kb": 10240, "rss_after_kb": 102400, "rss_settled_pct_of_before": 900})
		add("theirs", "stdio", "legacy", "cancel-cpu", 8, map[string]float64{"work_stopped": 0, "cpu_work_left_pct": 98})
	}
	add("ours", "http", "modern", "cancel", 10000, map[string]float64{"late_responses": 0, "echo_after_last_cancel_ms": 5})
	na := result("theirs", "http", "cancel", nil)
	na.Era, na.NotApplicable = "modern", "the server does not serve MCP 2026-07-28"
	na.Params = map[string]any{"n": float64(10000)}
	rs = append(rs, na)
	return rs
}

func TestCancellation(t *testing.T) {
	s := report.Summarize(cancelRuns(), "ours")
	rows := report.Cancellation(s)
	if len(rows) != 4 {
		t.Fatalf("rows = %+v, want ours and theirs, stdio legacy and http modern", rows)
	}
	ours, theirs := rows[0], rows[1]
	if ours.Target != "ours" || theirs.Target != "theirs" || ours.Transport != "stdio" || rows[2].Transport != "http" {
		t.Fatalf("order = %+v", rows)
	}
	if len(theirs.Sizes) != 2 || theirs.Sizes[0] != 1000 || theirs.Sizes[1] != 10000 ||
		theirs.Late[0] != 1000 || theirs.Late[1] != 9991 || theirs.LateProgress[0] != 5 {
		t.Errorf("theirs = %+v", theirs)
	}
	if ours.EchoMs != 3 || ours.WorkStopped != 1 || ours.WorkLeftPct != 1 || theirs.WorkStopped != 0 || ours.Runs != 3 {
		t.Errorf("ours = %+v, theirs = %+v", ours, theirs)
	}
	if rows[2].Target != "ours" || rows[3].NotApplicable == "" || !rows[2].ClosedByClient {
		t.Errorf("http modern rows = %+v", rows[2:])
	}
	var md bytes.Buffer
	if err := report.WriteCancellationMarkdown(&md, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| transport, era | target | late responses (1,000 / 10,000) | late progress (1,000 / 10,000) | follow-up echo, ms (10,000) |",
		"| stdio, legacy | ours | 0 / 0 | 0 / 0 | 3 | 10.0 → 20.0 | 150 | yes (1 %) |",
		"| stdio, legacy | theirs | 1,000 / 9,991 | 5 / 40 | 300 | 10.0 → 100.0 | 900 | **no** (98 %) |",
		"| http, modern | ours | closed by client | closed by client | 5 |",
		"| http, modern | theirs | n/a |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	// The largest burst is the cancel group the targets and the memory
	// chart use.
	if g := s.Group("cancel", "stdio", "legacy", 0); g == nil || g.Calls != 10000 {
		t.Errorf("Group(cancel) = %+v, want the 10,000-call burst", g)
	}
	names := map[string]bool{}
	for _, c := range report.Charts(s, report.Names{}) {
		names[c.Name] = true
		if !bytes.Contains(c.SVG, []byte("</svg>")) {
			t.Errorf("%s is not a whole SVG", c.Name)
		}
	}
	if !names["late.svg"] || !names["work_stopped.svg"] {
		t.Errorf("charts = %v, want late.svg and work_stopped.svg", names)
	}
	if math.IsNaN(rows[2].EchoMs) {
		t.Errorf("modern http row has no echo: %+v", rows[2])
	}
}
