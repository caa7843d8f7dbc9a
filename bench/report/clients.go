package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/toolgrain/toolgrain/bench/scenario"
)

// The clients scenario's report: what a connected client costs each server, per kind of
// client, and this engine's goals for it. Its results are grouped by kind and count of clients,
// not by concurrency, so they are kept apart from the other scenarios' summary.

// Goals of the clients scenario for this engine.
const (
	maxSessionKB = 2   // an idle legacy session, VmRSS growth per client
	maxStreamKB  = 8   // an open stream of either kind, with its session for a GET stream
	maxFanoutP99 = 500 // ms, one change to every open stream
	maxAt100kMiB = 1024
)

// SplitClients separates the clients scenario's results from the others.
func SplitClients(rs []scenario.Result) (clients, others []scenario.Result) {
	for _, r := range rs {
		if r.Scenario == "clients" {
			clients = append(clients, r)
		} else {
			others = append(others, r)
		}
	}
	return clients, others
}

// ClientsRow is the medians of the runs of one kind of client, count and target.
type ClientsRow struct {
	Kind   string `json:"kind"`
	N      int    `json:"n"`
	Target string `json:"target"`
	Runs   int    `json:"runs"`
	// Medians of the metrics, by name.
	Medians map[string]float64 `json:"medians"`
	// NotApplicable says why the target could not serve the kind.
	NotApplicable string   `json:"not_applicable,omitempty"`
	Notes         []string `json:"notes,omitempty"`
}

// Median returns the median of metric, and whether any run measured it.
func (r *ClientsRow) Median(metric string) (float64, bool) {
	v, ok := r.Medians[metric]
	return v, ok && !math.IsNaN(v)
}

func paramInt(r *scenario.Result, name string) int {
	switch v := r.Params[name].(type) {
	case float64:
		return int(v)
	case int:
		return v
	}
	return 0
}

// SummarizeClients takes the medians of the clients results per kind, count and target: kinds
// in the scenario's order, counts ascending, baseline first, then targets as they first appear.
func SummarizeClients(rs []scenario.Result, baseline string) []*ClientsRow {
	type key struct {
		kind   string
		n      int
		target string
	}
	rows := map[key]*ClientsRow{}
	values := map[key]map[string][]float64{}
	var targets []string
	for i := range rs {
		r := &rs[i]
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
		kind, _ := r.Params["kind"].(string)
		k := key{kind, paramInt(r, "n"), r.Target}
		row := rows[k]
		if row == nil {
			row = &ClientsRow{Kind: kind, N: k.n, Target: r.Target, Medians: map[string]float64{}}
			rows[k] = row
			values[k] = map[string][]float64{}
		}
		if r.NotApplicable != "" {
			row.NotApplicable = r.NotApplicable
			continue
		}
		row.Runs++
		for m, v := range r.Metrics {
			values[k][m] = append(values[k][m], v)
		}
		for _, n := range r.Notes {
			if !slices.Contains(row.Notes, n) {
				row.Notes = append(row.Notes, n)
			}
		}
	}
	if baseline == "" && len(targets) > 0 {
		baseline = targets[0]
	}
	out := make([]*ClientsRow, 0, len(rows))
	for k, row := range rows {
		for m, xs := range values[k] {
			row.Medians[m] = Median(xs)
		}
		out = append(out, row)
	}
	rank := func(t string) int {
		if t == baseline {
			return -1
		}
		return slices.Index(targets, t)
	}
	slices.SortFunc(out, func(a, b *ClientsRow) int {
		if ka, kb := slices.Index(scenario.ClientKinds, a.Kind), slices.Index(scenario.ClientKinds, b.Kind); ka != kb {
			return ka - kb
		}
		if a.N != b.N {
			return a.N - b.N
		}
		return rank(a.Target) - rank(b.Target)
	})
	return out
}

// kindTitle describes a kind of client.
func kindTitle(kind string) string {
	switch kind {
	case scenario.KindSession:
		return "idle legacy session, no stream"
	case scenario.KindGet:
		return "legacy session with its GET stream open"
	case scenario.KindListen:
		return "open subscriptions/listen stream"
	case scenario.KindMixed:
		return "GET and listen streams, half each"
	}
	return kind
}

// EvaluateClients judges this engine's (ours) goals for connected clients: memory per client of
// each kind, the 100,000-client extrapolation, and the fan-out of one change to every open
// stream. Each verdict's Era names the kind of client, and Concurrency the count.
func EvaluateClients(rows []*ClientsRow, ours string) []Verdict {
	var out []Verdict
	for _, r := range rows {
		if r.Target != ours || r.NotApplicable != "" || r.Runs == 0 {
			continue
		}
		add := func(goal string, status Status, result string) {
			out = append(out, Verdict{Goal: goal, Transport: "http", Era: r.Kind, Concurrency: r.N, Result: result, Status: status})
		}
		limit := float64(maxStreamKB)
		if r.Kind == scenario.KindSession {
			limit = maxSessionKB
		}
		goal := fmt.Sprintf("%s: at most %.0f KiB each", kindTitle(r.Kind), limit)
		if kb, ok := r.Median("kb_per_client"); ok {
			anon, _ := r.Median("anon_kb_per_client")
			add(goal, judge(kb <= limit), fmt.Sprintf("%.2f KiB VmRSS, %.2f KiB RssAnon per client", kb, anon))
		} else {
			add(goal, NoData, "no memory figures (needs the server's pid)")
		}
		if r.Kind != scenario.KindSession {
			if kb, ok := r.Median("kb_per_client"); ok {
				mib := kb * 100000 / 1024
				add("100,000 such clients under 1 GiB (the slope extrapolated, not measured)", judge(mib < maxAt100kMiB),
					fmt.Sprintf("%.0f MiB", mib))
			}
			for _, f := range []struct{ prefix, what string }{{"fanout", "a list change"}, {"update", "a resource update"}} {
				goal := fmt.Sprintf("%s reaches every stream: p99 within %d ms", f.what, maxFanoutP99)
				p99, ok := r.Median(f.prefix + "_p99_ms")
				if !ok {
					add(goal, NoData, "not measured (no trigger tool)")
					continue
				}
				missed, _ := r.Median(f.prefix + "_missed")
				add(goal, judge(p99 <= maxFanoutP99 && missed == 0), fmt.Sprintf("p99 %s ms, %.0f missed", num(p99), missed))
			}
		}
	}
	return out
}

// clientsColumns are the metrics of the clients table, with their headings.
var clientsColumns = []struct{ metric, head string }{
	{"clients", "clients"},
	{"kb_per_client", "VmRSS KiB/client"},
	{"anon_kb_per_client", "RssAnon KiB/client"},
	{"heap_kb_per_client", "heap KiB/client"},
	{"goroutines_per_client", "goroutines/client"},
	{"mb_at_100k", "100,000 (extrapolated) MiB"},
	{"open_sec", "open s"},
	{"idle_cpu_pct", "idle CPU %"},
	{"idle_cpu_ns_per_client_sec", "idle CPU ns/client/s"},
	{"fanout_p50_ms", "list change p50 ms"},
	{"fanout_p99_ms", "list change p99 ms"},
	{"update_p99_ms", "update p99 ms"},
	{"streams_dropped", "dropped"},
}

func (r *ClientsRow) cells() []string {
	out := []string{r.Kind, fmt.Sprint(r.N), r.Target}
	for _, c := range clientsColumns {
		v, ok := r.Median(c.metric)
		switch {
		case r.NotApplicable != "":
			out = append(out, "n/a")
		case !ok:
			out = append(out, "—")
		default:
			out = append(out, format(v, true))
		}
	}
	return out
}

// WriteClients prints the clients table and the goals' verdicts.
func WriteClients(w io.Writer, rows []*ClientsRow, verdicts []Verdict) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "\n== connected clients (clients scenario, medians) ==")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"kind", "n", "target"}
	for _, c := range clientsColumns {
		head = append(head, c.head)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t")+"\t")
	}
	tw.Flush()
	for _, r := range rows {
		if r.NotApplicable != "" {
			fmt.Fprintf(ew, "  %s, %s: not applicable: %s\n", r.Kind, r.Target, r.NotApplicable)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(ew, "  %s, %s: %s\n", r.Kind, r.Target, n)
		}
	}
	if len(verdicts) > 0 {
		fmt.Fprintln(ew, "\n== connected clients: goals ==")
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "kind\tn\tgoal\tstatus\tresult")
		for _, v := range verdicts {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", v.Era, v.Concurrency, v.Goal, strings.ToUpper(string(v.Status)), v.Result)
		}
		tw.Flush()
	}
	return ew.err
}

// WriteClientsMarkdown prints the clients table and the verdicts as Markdown.
func WriteClientsMarkdown(w io.Writer, rows []*ClientsRow, verdicts []Verdict) error {
	ew := &errWriter{w: w}
	head := []string{"kind", "n", "target"}
	align := []string{"---", "---:", "---"}
	for _, c := range clientsColumns {
		head = append(head, c.head)
		align = append(align, "---:")
	}
	fmt.Fprintf(ew, "| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(align, " | "))
	for _, r := range rows {
		fmt.Fprintf(ew, "| %s |\n", strings.Join(r.cells(), " | "))
	}
	if len(verdicts) > 0 {
		fmt.Fprintln(ew, "\n| kind | n | goal | result | |\n| --- | ---: | --- | --- | --- |")
		for _, v := range verdicts {
			status := string(v.Status)
			if v.Status == Met || v.Status == Missed {
				status = "**" + status + "**"
			}
			fmt.Fprintf(ew, "| %s | %d | %s | %s | %s |\n", v.Era, v.Concurrency, v.Goal, v.Result, status)
		}
	}
	return ew.err
}

// ClientsCharts draws the memory per connected client, per kind and target, with this engine's
// goals as dashed lines, and the fan-out latency (p50 bars, p99 whiskers) of the kinds with
// streams.
func ClientsCharts(rows []*ClientsRow, hosts []scenario.Host) []Chart {
	var cats []string
	var series []string
	type ck struct {
		kind string
		n    int
	}
	var keys []ck
	for _, r := range rows {
		k := ck{r.Kind, r.N}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
			cats = append(cats, fmt.Sprintf("%s\n%d clients", r.Kind, r.N))
		}
		if !slices.Contains(series, r.Target) {
			series = append(series, r.Target)
		}
	}
	grid := func(metric string) ([][]float64, [][]string) {
		vals := make([][]float64, len(keys))
		notes := make([][]string, len(keys))
		for i := range keys {
			vals[i] = make([]float64, len(series))
			notes[i] = make([]string, len(series))
			for j := range series {
				vals[i][j] = math.NaN()
				notes[i][j] = "not run"
			}
		}
		for _, r := range rows {
			i, j := slices.Index(keys, ck{r.Kind, r.N}), slices.Index(series, r.Target)
			switch v, ok := r.Median(metric); {
			case r.NotApplicable != "":
				notes[i][j] = "n/a"
			case ok:
				vals[i][j], notes[i][j] = v, ""
			default:
				notes[i][j] = "—"
			}
		}
		return vals, notes
	}
	sub := "median of the runs; server VmRSS growth divided by the clients"
	if len(hosts) > 0 {
		sub += fmt.Sprintf("; %d cores, %s", hosts[0].Cores, hosts[0].Go)
	}
	limits := make([]float64, len(keys))
	for i, k := range keys {
		limits[i] = maxStreamKB
		if k.kind == scenario.KindSession {
			limits[i] = maxSessionKB
		}
	}
	var out []Chart
	mem, notes := grid("kb_per_client")
	c := &BarChart{Title: "Server memory per connected client", Subtitle: sub, YLabel: "KiB per client",
		Categories: cats, Series: series, Values: mem, Notes: notes, Limits: limits, LimitLabel: "goal for " + first(series)}
	if hasValues(c.Values) {
		out = append(out, Chart{Name: "clients_memory.svg", SVG: c.SVG()})
	}
	p50, n50 := grid("fanout_p50_ms")
	p99, _ := grid("fanout_p99_ms")
	// Only the kinds with streams: an idle session has nothing to receive a change on.
	var fcats []string
	var fp50, fp99 [][]float64
	var fn [][]string
	for i, k := range keys {
		if k.kind != scenario.KindSession {
			fcats, fp50, fp99, fn = append(fcats, cats[i]), append(fp50, p50[i]), append(fp99, p99[i]), append(fn, n50[i])
		}
	}
	fl := make([]float64, len(fcats))
	for i := range fl {
		fl[i] = maxFanoutP99
	}
	f := &BarChart{Title: "A list change to every open stream",
		Subtitle: "p50, p99 (whisker): trigger call to receipt; " + strings.TrimPrefix(sub, "median of the runs; server VmRSS growth divided by the clients; "),
		YLabel:   "ms", Categories: fcats, Series: series, Values: fp50, Whiskers: fp99, Notes: fn, Limits: fl, LimitLabel: "p99 goal"}
	if hasValues(f.Values) {
		out = append(out, Chart{Name: "clients_fanout.svg", SVG: f.SVG()})
	}
	return out
}

func first(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}
