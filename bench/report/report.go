// Package report turns many mcpbench results into one side-by-side table:
// medians per (scenario, transport, target, metric), with ratios against a
// baseline target.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/toolgrain/toolgrain/bench/scenario"
)

// Read decodes a stream of JSON results (as written by mcpbench --json, one
// object after another, whitespace between them ignored).
func Read(r io.Reader) ([]scenario.Result, error) {
	dec := json.NewDecoder(r)
	var out []scenario.Result
	for {
		var res scenario.Result
		err := dec.Decode(&res)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("result %d: %w", len(out)+1, err)
		}
		if res.Scenario == "" {
			return out, fmt.Errorf("result %d: no scenario: not an mcpbench result", len(out)+1)
		}
		out = append(out, res)
	}
}

// Median returns the median of xs (the mean of the middle two for an even
// count); NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Group is the results of one (scenario, transport, era, concurrency).
type Group struct {
	Scenario  string
	Transport string
	// Era is "legacy" or "modern".
	Era string
	// Concurrency is the throughput scenario's concurrency; 0 for the other
	// scenarios, whose groups do not split by it.
	Concurrency int
	// Calls is the cancel scenario's burst size (its n); 0 for the other
	// scenarios, whose groups do not split by it.
	Calls int
	// Targets in display order: the baseline first, then by first
	// appearance.
	Targets []string
	// Runs counts results per target.
	Runs map[string]int
	// Metrics in display order.
	Metrics []string
	// Medians[metric][target]; a missing entry means no run reported it.
	Medians map[string]map[string]float64
	// Probes[probe][target] is the most frequent outcome (errors scenario).
	Probes     map[string]map[string]string
	ProbeOrder []string
	Expect     map[string]string
	// Notes per target, deduplicated.
	Notes map[string][]string
	// NotApplicable[target] says why the target could not run in this
	// era; such a target has no medians.
	NotApplicable map[string]string
}

// Title names the group: scenario, transport, era and, for throughput, the
// concurrency.
func (g *Group) Title() string {
	t := fmt.Sprintf("%s over %s, %s era", g.Scenario, g.Transport, g.Era)
	if g.Concurrency > 0 {
		t += fmt.Sprintf(", %d concurrent", g.Concurrency)
	}
	if g.Calls > 0 {
		t += fmt.Sprintf(", %s calls", num(float64(g.Calls)))
	}
	return t
}

// Median returns a target's median of a metric, and whether there is one.
func (g *Group) Median(metric, target string) (float64, bool) {
	v, ok := g.Medians[metric][target]
	return v, ok && !math.IsNaN(v)
}

// concurrency reads a throughput result's concurrency; 0 for other
// scenarios.
func concurrency(r *scenario.Result) int {
	if r.Scenario != "throughput" {
		return 0
	}
	switch v := r.Params["concurrency"].(type) {
	case float64:
		return int(v)
	case int:
		return v
	}
	return 0
}

// calls reads a cancel result's burst size; 0 for other scenarios.
func calls(r *scenario.Result) int {
	if r.Scenario != "cancel" {
		return 0
	}
	switch v := r.Params["n"].(type) {
	case float64:
		return int(v)
	case int:
		return v
	}
	return 0
}

// Summary is a whole report.
type Summary struct {
	Baseline string
	Groups   []*Group
	Hosts    []scenario.Host
}

var scenarioOrder = []string{"throughput", "cancel", "cancel-cpu", "mixed", "errors"}

// Summarize groups results and takes medians. baseline names the target
// ratios are computed against; empty means the first target seen.
func Summarize(results []scenario.Result, baseline string) *Summary {
	s := &Summary{Baseline: baseline}
	type key struct {
		scenario, transport, era string
		concurrency, calls       int
	}
	groups := map[key]*Group{}
	values := map[key]map[string]map[string][]float64{}
	probeVotes := map[key]map[string]map[string]map[string]int{}
	var targets []string
	for _, r := range results {
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
		if !slices.Contains(s.Hosts, r.Host) {
			s.Hosts = append(s.Hosts, r.Host)
		}
		k := key{r.Scenario, r.Transport, r.EraName(), concurrency(&r), calls(&r)}
		g := groups[k]
		if g == nil {
			g = &Group{Scenario: r.Scenario, Transport: r.Transport, Era: k.era, Concurrency: k.concurrency, Calls: k.calls,
				Runs: map[string]int{}, Medians: map[string]map[string]float64{}, Probes: map[string]map[string]string{},
				Expect: map[string]string{}, Notes: map[string][]string{}, NotApplicable: map[string]string{}}
			groups[k] = g
			values[k] = map[string]map[string][]float64{}
			probeVotes[k] = map[string]map[string]map[string]int{}
		}
		if r.NotApplicable != "" {
			g.NotApplicable[r.Target] = r.NotApplicable
			continue
		}
		g.Runs[r.Target]++
		for m, v := range r.Metrics {
			if values[k][m] == nil {
				values[k][m] = map[string][]float64{}
				g.Metrics = append(g.Metrics, m)
			}
			values[k][m][r.Target] = append(values[k][m][r.Target], v)
		}
		for _, p := range r.Probes {
			if probeVotes[k][p.Name] == nil {
				probeVotes[k][p.Name] = map[string]map[string]int{}
				g.ProbeOrder = append(g.ProbeOrder, p.Name)
				g.Expect[p.Name] = p.Expect
			}
			if probeVotes[k][p.Name][r.Target] == nil {
				probeVotes[k][p.Name][r.Target] = map[string]int{}
			}
			probeVotes[k][p.Name][r.Target][p.Summary()]++
		}
		for _, n := range r.Notes {
			if !slices.Contains(g.Notes[r.Target], n) {
				g.Notes[r.Target] = append(g.Notes[r.Target], n)
			}
		}
	}
	if s.Baseline == "" && len(targets) > 0 {
		s.Baseline = targets[0]
	}
	for k, g := range groups {
		for _, t := range targets {
			if _, na := g.NotApplicable[t]; g.Runs[t] > 0 || na {
				g.Targets = append(g.Targets, t)
			}
		}
		sort.SliceStable(g.Targets, func(i, j int) bool {
			return g.Targets[i] == s.Baseline && g.Targets[j] != s.Baseline
		})
		sort.SliceStable(g.Metrics, func(i, j int) bool { return scenario.Less(g.Metrics[i], g.Metrics[j]) })
		for m, byTarget := range values[k] {
			g.Medians[m] = map[string]float64{}
			for t, xs := range byTarget {
				g.Medians[m][t] = Median(xs)
			}
		}
		for p, byTarget := range probeVotes[k] {
			g.Probes[p] = map[string]string{}
			for t, votes := range byTarget {
				g.Probes[p][t] = mostFrequent(votes)
			}
		}
		s.Groups = append(s.Groups, g)
	}
	rank := func(sc string) int {
		if i := slices.Index(scenarioOrder, sc); i >= 0 {
			return i
		}
		return len(scenarioOrder)
	}
	sort.Slice(s.Groups, func(i, j int) bool {
		a, b := s.Groups[i], s.Groups[j]
		if rank(a.Scenario) != rank(b.Scenario) {
			return rank(a.Scenario) < rank(b.Scenario)
		}
		if a.Scenario != b.Scenario {
			return a.Scenario < b.Scenario
		}
		if a.Transport != b.Transport {
			return transportRank(a.Transport) < transportRank(b.Transport)
		}
		if a.Era != b.Era {
			return a.Era == "legacy" // legacy first, then modern
		}
		if a.Concurrency != b.Concurrency {
			return a.Concurrency < b.Concurrency
		}
		return a.Calls < b.Calls
	})
	return s
}

// Group returns the group of a scenario, transport, era and concurrency (0
// for scenarios other than throughput), or nil. Of the cancel scenario's
// groups, one per burst size, it returns the largest burst's.
func (s *Summary) Group(scenario, transport, era string, concurrency int) *Group {
	var found *Group
	for _, g := range s.Groups {
		if g.Scenario == scenario && g.Transport == transport && g.Era == era && g.Concurrency == concurrency &&
			(found == nil || g.Calls > found.Calls) {
			found = g
		}
	}
	return found
}

func transportRank(t string) string {
	if t == "stdio" {
		return "0"
	}
	return "1" + t
}

func mostFrequent(votes map[string]int) string {
	best, n := "", -1
	for s, c := range votes {
		if c > n || (c == n && s < best) {
			best, n = s, c
		}
	}
	return best
}

// Ratio is baseline ÷ target, formatted; "-" when it cannot be computed.
func Ratio(base, other float64, okBase, okOther bool) string {
	switch {
	case !okBase || !okOther:
		return "-"
	case base == other:
		return "1.00x"
	case other == 0:
		return "-"
	}
	return fmt.Sprintf("%.2fx", base/other)
}

// Write prints the summary as text tables.
func Write(w io.Writer, s *Summary) error {
	ew := &errWriter{w: w}
	for _, h := range s.Hosts {
		fmt.Fprintf(ew, "machine: %s, %d cores, %s/%s, kernel %s, %s\n", h.CPU, h.Cores, h.OS, h.Arch, h.Kernel, h.Go)
	}
	fmt.Fprintf(ew, "medians of the runs; ratio = %s ÷ target (read it with the 'better' column)\n", s.Baseline)
	for _, g := range s.Groups {
		fmt.Fprintf(ew, "\n== %s ==\n", g.Title())
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := []string{"metric", "better"}
		for _, t := range g.Targets {
			if _, na := g.NotApplicable[t]; na && g.Runs[t] == 0 {
				head = append(head, t+" (n/a)")
				continue
			}
			head = append(head, fmt.Sprintf("%s (n=%d)", t, g.Runs[t]))
		}
		// Ratio columns only where the baseline was measured.
		var others []string
		if g.Runs[s.Baseline] > 0 {
			for _, t := range g.Targets {
				if t != s.Baseline {
					others = append(others, t)
					head = append(head, s.Baseline+"÷"+t)
				}
			}
		}
		fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
		for _, m := range g.Metrics {
			info := scenario.Info(m)
			row := []string{m, info.Better.String()}
			base, okBase := g.Medians[m][s.Baseline]
			for _, t := range g.Targets {
				v, ok := g.Medians[m][t]
				if _, na := g.NotApplicable[t]; na && !ok {
					row = append(row, "n/a")
					continue
				}
				row = append(row, format(v, ok))
			}
			for _, t := range others {
				v, ok := g.Medians[m][t]
				if info.Better == scenario.Neutral {
					row = append(row, "")
					continue
				}
				row = append(row, Ratio(base, v, okBase, ok))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
		tw.Flush()
		if len(g.ProbeOrder) > 0 {
			fmt.Fprintln(ew, "\nprobes (most frequent outcome):")
			for _, p := range g.ProbeOrder {
				fmt.Fprintf(ew, "  %s — expected: %s\n", p, g.Expect[p])
				pw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
				for _, t := range g.Targets {
					if out, ok := g.Probes[p][t]; ok {
						fmt.Fprintf(pw, "    %s\t%s\n", t, out)
					}
				}
				pw.Flush()
			}
		}
		for _, t := range g.Targets {
			if why, na := g.NotApplicable[t]; na {
				fmt.Fprintf(ew, "  not applicable (%s): %s\n", t, why)
			}
			for _, n := range g.Notes[t] {
				fmt.Fprintf(ew, "  note (%s): %s\n", t, n)
			}
		}
	}
	return ew.err
}

func format(v float64, ok bool) string {
	switch {
	case !ok || math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e12:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// JSON is the machine-readable form of a summary.
type JSON struct {
	Baseline      string          `json:"baseline"`
	Hosts         []scenario.Host `json:"hosts"`
	Rows          []Row           `json:"rows"`
	NotApplicable []NotApplicable `json:"not_applicable,omitempty"`
	// Targets are the verdicts on the performance goals (see [Evaluate]).
	Targets []Verdict `json:"targets,omitempty"`
	// Eras compares legacy and modern echo (see [Eras]).
	Eras []EraRow `json:"eras,omitempty"`
	// Cancellation is every target's cancellation behaviour (see
	// [Cancellation]).
	Cancellation []CancelRow `json:"cancellation,omitempty"`
}

// NotApplicable is a target that could not run a scenario in an era.
type NotApplicable struct {
	Scenario  string `json:"scenario"`
	Transport string `json:"transport"`
	Era       string `json:"era"`
	Target    string `json:"target"`
	Reason    string `json:"reason"`
}

// Row is one median.
type Row struct {
	Scenario    string   `json:"scenario"`
	Transport   string   `json:"transport"`
	Era         string   `json:"era"`
	Concurrency int      `json:"concurrency,omitempty"`
	Calls       int      `json:"calls,omitempty"`
	Target      string   `json:"target"`
	Metric      string   `json:"metric"`
	Median      float64  `json:"median"`
	Runs        int      `json:"runs"`
	Ratio       *float64 `json:"baseline_ratio,omitempty"` // baseline ÷ this target
}

// ToJSON flattens a summary into rows.
func ToJSON(s *Summary) JSON {
	out := JSON{Baseline: s.Baseline, Hosts: s.Hosts, Rows: []Row{}}
	for _, g := range s.Groups {
		for _, m := range g.Metrics {
			base, okBase := g.Medians[m][s.Baseline]
			for _, t := range g.Targets {
				v, ok := g.Medians[m][t]
				if !ok || math.IsNaN(v) {
					continue
				}
				row := Row{Scenario: g.Scenario, Transport: g.Transport, Era: g.Era, Concurrency: g.Concurrency, Calls: g.Calls,
					Target: t, Metric: m, Median: v, Runs: g.Runs[t]}
				if okBase && v != 0 && t != s.Baseline {
					ratio := base / v
					row.Ratio = &ratio
				}
				out.Rows = append(out.Rows, row)
			}
		}
		for _, t := range g.Targets {
			if why, na := g.NotApplicable[t]; na {
				out.NotApplicable = append(out.NotApplicable, NotApplicable{g.Scenario, g.Transport, g.Era, t, why})
			}
		}
	}
	return out
}
