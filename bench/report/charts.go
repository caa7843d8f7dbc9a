package report

import (
	"fmt"
	"math"
	"slices"
)

// Chart is one rendered chart.
type Chart struct {
	// Name is its file name, such as "throughput.svg".
	Name string
	SVG  []byte
}

// Charts draws a summary: echo throughput, latency (p50 with a whisker to
// p99), server CPU and allocation per echo call, per target, transport, era
// and concurrency (with the performance goals for the baseline as dashed
// lines), and memory over the cancel burst. A chart without data is left
// out.
func Charts(s *Summary, names Names) []Chart {
	nm := names.withDefaults(s)
	var out []Chart
	groups := s.groupsOf("throughput")
	if len(groups) > 0 {
		series := s.targetsOf(groups)
		cats := categories(groups)
		sub := fmt.Sprintf("median of the runs, per transport, era and concurrent calls; %s", hostLine(s))
		add := func(name string, c *BarChart) {
			if hasValues(c.Values) {
				out = append(out, Chart{Name: name, SVG: c.SVG()})
			}
		}
		add("throughput.svg", &BarChart{
			Title: "Echo throughput", Subtitle: sub, YLabel: "calls/s",
			Categories: cats, Series: series,
			Values: values(groups, series, "calls_per_sec"), Notes: notes(groups, series),
		})
		add("latency.svg", &BarChart{
			Title: "Echo latency: p50 (bar) and p99 (whisker)", Subtitle: sub, YLabel: "ms (log scale)", LogY: true,
			Categories: cats, Series: series,
			Values: values(groups, series, "p50_ms"), Whiskers: values(groups, series, "p99_ms"), Notes: notes(groups, series),
		})
		cpuLimits := make([]float64, len(groups))
		allocLimits := make([]float64, len(groups))
		for i, g := range groups {
			cpuLimits[i] = maxCPUMicros[g.Transport]
			if fg, _ := s.reference("throughput", g.Transport, g.Era, g.Concurrency, nm.Floor); fg != nil {
				if floor, ok := fg.Median("server_cpu_us_per_call", nm.Floor); ok {
					cpuLimits[i] = math.Max(cpuLimits[i], floorFactor*floor)
				}
			}
			allocLimits[i] = maxAllocBytes[g.Transport]
		}
		add("cpu.svg", &BarChart{
			Title: "Server CPU per echo call", Subtitle: sub, YLabel: "µs (log scale)", LogY: true,
			Categories: cats, Series: series,
			Values: values(groups, series, "server_cpu_us_per_call"), Notes: notes(groups, series),
			Limits: cpuLimits, LimitLabel: fmt.Sprintf("goal for %s (%.1f× %s where that is higher)", nm.Ours, floorFactor, nm.Floor),
		})
		add("alloc.svg", &BarChart{
			Title: "Server allocation per echo call (runtime.MemStats.TotalAlloc)", Subtitle: sub, YLabel: "bytes (log scale)", LogY: true,
			Categories: cats, Series: series,
			Values: values(groups, series, "server_alloc_bytes_per_call"), Notes: notes(groups, series),
			Limits: allocLimits, LimitLabel: "goal for " + nm.Ours,
		})
	}
	if cancels := s.groupsOf("cancel"); len(cancels) > 0 {
		series := s.targetsOf(cancels)
		phases := []string{"rss_before_kb", "rss_loaded_kb", "rss_after_kb", "rss_settled_kb"}
		var panels []Panel
		for _, g := range cancels {
			p := Panel{Title: g.Transport + ", " + g.Era, Notes: make([]string, len(series))}
			for si, t := range series {
				row := make([]float64, len(phases))
				for pi, m := range phases {
					row[pi] = math.NaN()
					if v, ok := g.Median(m, t); ok {
						row[pi] = v / 1024
					}
				}
				p.Values = append(p.Values, row)
				if _, na := g.NotApplicable[t]; na {
					p.Notes[si] = "n/a"
				} else if g.Runs[t] == 0 {
					p.Notes[si] = "not run"
				}
			}
			panels = append(panels, p)
		}
		c := &LineChart{
			Title:    "Server memory over a cancel burst",
			Subtitle: fmt.Sprintf("RSS with %s sleep calls in flight, then all cancelled; median of the runs; %s", sleepsOf(cancels), hostLine(s)),
			YLabel:   "RSS, MiB (log scale)", X: []string{"before", "loaded", "after\nwindow", "settled"},
			Series: series, Panels: panels, LogY: true,
		}
		if hasPanelValues(panels) {
			out = append(out, Chart{Name: "rss_cancel.svg", SVG: c.SVG()})
		}
	}
	return append(out, cancellationCharts(s)...)
}

// groupsOf returns the scenario's groups, in the summary's order; of the
// cancel scenario's, the largest burst's.
func (s *Summary) groupsOf(scenario string) []*Group {
	var out []*Group
	for _, g := range s.Groups {
		if g.Scenario == scenario && (scenario != "cancel" || g == s.Group(scenario, g.Transport, g.Era, 0)) {
			out = append(out, g)
		}
	}
	return out
}

// targetsOf lists the targets of groups, the baseline first, then in order
// of appearance.
func (s *Summary) targetsOf(groups []*Group) []string {
	var out []string
	for _, g := range groups {
		for _, t := range g.Targets {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func categories(groups []*Group) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.Transport + ", " + g.Era
		if g.Concurrency > 0 {
			out[i] += fmt.Sprintf("\n%d concurrent", g.Concurrency)
		}
	}
	return out
}

func values(groups []*Group, series []string, metric string) [][]float64 {
	out := make([][]float64, len(groups))
	for i, g := range groups {
		out[i] = make([]float64, len(series))
		for j, t := range series {
			out[i][j] = math.NaN()
			if v, ok := g.Median(metric, t); ok {
				out[i][j] = v
			}
		}
	}
	return out
}

func notes(groups []*Group, series []string) [][]string {
	out := make([][]string, len(groups))
	for i, g := range groups {
		out[i] = make([]string, len(series))
		for j, t := range series {
			if _, na := g.NotApplicable[t]; na {
				out[i][j] = "n/a"
			}
		}
	}
	return out
}

func hasValues(m [][]float64) bool {
	for _, row := range m {
		for _, v := range row {
			if valid(v) {
				return true
			}
		}
	}
	return false
}

func hasPanelValues(ps []Panel) bool {
	for _, p := range ps {
		if hasValues(p.Values) {
			return true
		}
	}
	return false
}

func sleepsOf(groups []*Group) string {
	for _, g := range groups {
		for _, t := range g.Targets {
			if v, ok := g.Median("sent", t); ok {
				return num(v)
			}
		}
	}
	return "N"
}

func hostLine(s *Summary) string {
	if len(s.Hosts) == 0 {
		return "one machine"
	}
	h := s.Hosts[0]
	line := fmt.Sprintf("%d cores, %s", h.Cores, h.Go)
	if len(s.Hosts) > 1 {
		line += fmt.Sprintf(" (and %d other hosts)", len(s.Hosts)-1)
	}
	return line
}
