package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// CancelRow is one target's cancellation behaviour in one transport and era:
// per cancel burst size, late responses and late progress; after the
// largest burst, the follow-up echo's latency and the memory; and whether
// the server stopped cancelled CPU-bound work (the cancel-cpu scenario).
// Each figure is the median of the runs; a missing one is NaN.
type CancelRow struct {
	Transport string `json:"transport"`
	Era       string `json:"era"`
	Target    string `json:"target"`
	// NotApplicable says why the target does not serve the era; the row then
	// has no figures.
	NotApplicable string `json:"not_applicable,omitempty"`
	// Sizes are the burst sizes, ascending; Late and LateProgress have one
	// figure per size.
	Sizes        []int     `json:"sizes"`
	Late         []float64 `json:"late_responses"`
	LateProgress []float64 `json:"late_progress"`
	// ClosedByClient is set over modern HTTP, where the client cancels by
	// closing the stream a late message would come on: nothing late can be
	// counted.
	ClosedByClient bool `json:"closed_by_client,omitempty"`
	// EchoMs is echo_after_last_cancel_ms of the largest burst.
	EchoMs float64 `json:"echo_after_last_cancel_ms"`
	// RSSBeforeKB, RSSAfterKB and SettledPct are the largest burst's
	// rss_before_kb, rss_after_kb and rss_settled_pct_of_before.
	RSSBeforeKB float64 `json:"rss_before_kb"`
	RSSAfterKB  float64 `json:"rss_after_kb"`
	SettledPct  float64 `json:"rss_settled_pct_of_before"`
	// WorkStopped is cancel-cpu's work_stopped (1 or 0), WorkLeftPct its
	// cpu_work_left_pct.
	WorkStopped float64 `json:"work_stopped"`
	WorkLeftPct float64 `json:"cpu_work_left_pct"`
	// Runs counts the runs behind the largest burst's figures.
	Runs int `json:"runs"`
}

// Cancellation gathers, per transport, era and target, what the cancel and
// cancel-cpu scenarios measured: the table of every target's cancellation
// behaviour.
func Cancellation(s *Summary) []CancelRow {
	type tk struct{ transport, era string }
	var order []tk
	sizes := map[tk][]*Group{}
	cpu := map[tk]*Group{}
	other := map[tk][]*Group{}
	for _, g := range s.Groups {
		k := tk{g.Transport, g.Era}
		switch g.Scenario {
		case "cancel":
			if g.Calls == 0 {
				// Results without a size (not applicable, from an older
				// mcpbench) say only why a target did not run.
				other[k] = append(other[k], g)
				break
			}
			sizes[k] = append(sizes[k], g)
		case "cancel-cpu":
			cpu[k] = g
		default:
			continue
		}
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	slices.SortStableFunc(order, func(a, b tk) int {
		if a.transport != b.transport {
			return strings.Compare(transportRank(a.transport), transportRank(b.transport))
		}
		if a.era != b.era {
			if a.era == "legacy" {
				return -1
			}
			return 1
		}
		return 0
	})
	var rows []CancelRow
	for _, k := range order {
		gs := sizes[k]
		slices.SortFunc(gs, func(a, b *Group) int { return a.Calls - b.Calls })
		all := append(slices.Clone(gs), other[k]...)
		if cpu[k] != nil {
			all = append(all, cpu[k])
		}
		for _, t := range (&Summary{Baseline: s.Baseline}).targetsOf(all) {
			row := CancelRow{Transport: k.transport, Era: k.era, Target: t,
				EchoMs: math.NaN(), RSSBeforeKB: math.NaN(), RSSAfterKB: math.NaN(), SettledPct: math.NaN(),
				WorkStopped: math.NaN(), WorkLeftPct: math.NaN()}
			row.ClosedByClient = k.transport == "http" && k.era == "modern"
			measured := false
			for _, g := range all {
				if why, na := g.NotApplicable[t]; na && g.Runs[t] == 0 {
					row.NotApplicable = why
				}
				if g.Runs[t] > 0 {
					measured = true
				}
			}
			if measured {
				row.NotApplicable = ""
			}
			med := func(g *Group, m string) float64 {
				if g == nil {
					return math.NaN()
				}
				if v, ok := g.Median(m, t); ok {
					return v
				}
				return math.NaN()
			}
			for _, g := range gs {
				row.Sizes = append(row.Sizes, g.Calls)
				row.Late = append(row.Late, med(g, "late_responses"))
				row.LateProgress = append(row.LateProgress, med(g, "late_progress"))
			}
			if len(gs) > 0 {
				big := gs[len(gs)-1]
				row.EchoMs = med(big, "echo_after_last_cancel_ms")
				row.RSSBeforeKB = med(big, "rss_before_kb")
				row.RSSAfterKB = med(big, "rss_after_kb")
				row.SettledPct = med(big, "rss_settled_pct_of_before")
				row.Runs = big.Runs[t]
			}
			row.WorkStopped = med(cpu[k], "work_stopped")
			row.WorkLeftPct = med(cpu[k], "cpu_work_left_pct")
			rows = append(rows, row)
		}
	}
	return rows
}

// cancelHead is the table's header for burst sizes.
func cancelHead(rows []CancelRow) []string {
	var sizes []string
	if len(rows) > 0 {
		for _, n := range rows[0].Sizes {
			sizes = append(sizes, num(float64(n)))
		}
	}
	per := strings.Join(sizes, " / ")
	biggest := "largest burst"
	if len(sizes) > 0 {
		biggest = sizes[len(sizes)-1]
	}
	return []string{"transport, era", "target",
		"late responses (" + per + ")", "late progress (" + per + ")",
		"follow-up echo, ms (" + biggest + ")", "RSS before → after, MiB (" + biggest + ")", "settled, % of before",
		"work stopped (CPU left)"}
}

func (r CancelRow) cells() []string {
	c := []string{r.Transport + ", " + r.Era, r.Target}
	if r.NotApplicable != "" {
		return append(c, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a")
	}
	counts := func(xs []float64) string {
		if r.ClosedByClient {
			return "closed by client"
		}
		var parts []string
		for _, x := range xs {
			parts = append(parts, num(x))
		}
		return strings.Join(parts, " / ")
	}
	mib := func(kb float64) string {
		if math.IsNaN(kb) {
			return "-"
		}
		return fmt.Sprintf("%.1f", kb/1024)
	}
	stopped := "-"
	switch {
	case r.WorkStopped == 1:
		stopped = fmt.Sprintf("yes (%s %%)", num(math.Round(r.WorkLeftPct)))
	case r.WorkStopped == 0:
		stopped = fmt.Sprintf("**no** (%s %%)", num(math.Round(r.WorkLeftPct)))
	case !math.IsNaN(r.WorkStopped):
		stopped = fmt.Sprintf("in %s of runs (%s %%)", num(r.WorkStopped*100)+" %", num(math.Round(r.WorkLeftPct)))
	}
	settled := "-"
	if !math.IsNaN(r.SettledPct) {
		settled = fmt.Sprintf("%.0f", r.SettledPct)
	}
	return append(c, counts(r.Late), counts(r.LateProgress), num(r.EchoMs),
		mib(r.RSSBeforeKB)+" → "+mib(r.RSSAfterKB), settled, stopped)
}

// WriteCancellation prints the cancellation table as text.
func WriteCancellation(w io.Writer, rows []CancelRow) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "\n== cancellation: every target ==")
	fmt.Fprintln(ew, "late responses and late progress after cancelling each burst of sleep calls (the spec says none);")
	fmt.Fprintln(ew, "work stopped: the server's CPU after cancelling CPU-bound calls, as a share of their load above idle")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cancelHead(rows), "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.ReplaceAll(strings.Join(r.cells(), "\t"), "**", ""))
	}
	tw.Flush()
	return ew.err
}

// WriteCancellationMarkdown prints the cancellation table as Markdown.
func WriteCancellationMarkdown(w io.Writer, rows []CancelRow) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "| "+strings.Join(cancelHead(rows), " | ")+" |")
	fmt.Fprintln(ew, "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range rows {
		fmt.Fprintln(ew, "| "+strings.Join(r.cells(), " | ")+" |")
	}
	return ew.err
}

// cancellationCharts draws the cancellation table: late responses after
// the largest burst, and the CPU left after cancelling CPU-bound calls.
func cancellationCharts(s *Summary) []Chart {
	rows := Cancellation(s)
	if len(rows) == 0 {
		return nil
	}
	var cats []string
	var series []string
	type ck struct{ cat, target string }
	byKey := map[ck]CancelRow{}
	for _, r := range rows {
		cat := r.Transport + ", " + r.Era
		if !slices.Contains(cats, cat) {
			cats = append(cats, cat)
		}
		if !slices.Contains(series, r.Target) {
			series = append(series, r.Target)
		}
		byKey[ck{cat, r.Target}] = r
	}
	grid := func(value func(CancelRow) (float64, string)) ([][]float64, [][]string) {
		vals := make([][]float64, len(cats))
		notes := make([][]string, len(cats))
		for i, c := range cats {
			vals[i] = make([]float64, len(series))
			notes[i] = make([]string, len(series))
			for j, t := range series {
				vals[i][j] = math.NaN()
				r, ok := byKey[ck{c, t}]
				switch {
				case !ok:
					notes[i][j] = "not run"
				case r.NotApplicable != "":
					notes[i][j] = "n/a"
				default:
					vals[i][j], notes[i][j] = value(r)
				}
			}
		}
		return vals, notes
	}
	// A zero draws no bar: it is written instead.
	zeroAsNote := func(v float64) (float64, string) {
		switch {
		case math.IsNaN(v):
			return v, "-"
		case v == 0:
			return math.NaN(), "0"
		}
		return v, ""
	}
	var out []Chart
	biggest := 0
	if len(rows[0].Sizes) > 0 {
		biggest = rows[0].Sizes[len(rows[0].Sizes)-1]
	}
	lateVals, lateNotes := grid(func(r CancelRow) (float64, string) {
		if r.ClosedByClient {
			return math.NaN(), "closed"
		}
		if len(r.Late) == 0 {
			return math.NaN(), "-"
		}
		return zeroAsNote(r.Late[len(r.Late)-1])
	})
	late := &BarChart{
		Title:    fmt.Sprintf("Late responses after cancelling %s sleep calls", num(float64(biggest))),
		Subtitle: fmt.Sprintf("the spec says none; closed: modern HTTP closes the stream; -: not counted; median; %s", hostLine(s)),
		YLabel:   "responses", Categories: cats, Series: series, Values: lateVals, Notes: lateNotes,
	}
	if biggest > 0 {
		out = append(out, Chart{Name: "late.svg", SVG: late.SVG()})
	}
	leftVals, leftNotes := grid(func(r CancelRow) (float64, string) {
		return zeroAsNote(math.Round(r.WorkLeftPct))
	})
	left := &BarChart{
		Title:    "CPU left after cancelling CPU-bound calls",
		Subtitle: fmt.Sprintf("CPU above idle after the cancellation, %% of the calls' load; median; %s", hostLine(s)),
		YLabel:   "% of the loaded CPU", Categories: cats, Series: series, Values: leftVals, Notes: leftNotes,
		Limits: fill(len(cats), maxWorkLeftPct), LimitLabel: "25 %",
	}
	if hasValues(leftVals) || hasNote(leftNotes, "0") {
		out = append(out, Chart{Name: "work_stopped.svg", SVG: left.SVG()})
	}
	return out
}

// maxWorkLeftPct is cancel-cpu's threshold for work_stopped.
const maxWorkLeftPct = 25

func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func hasNote(notes [][]string, s string) bool {
	for _, row := range notes {
		if slices.Contains(row, s) {
			return true
		}
	}
	return false
}
