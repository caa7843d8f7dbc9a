package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Names say which targets the goals compare: this engine, the SDK it must
// beat, and the standard-library floor.
type Names struct {
	Ours   string // default: the summary's baseline
	Versus string // default: mcp-go
	Floor  string // default: stdlib
}

func (n Names) withDefaults(s *Summary) Names {
	if n.Ours == "" {
		n.Ours = s.Baseline
	}
	if n.Versus == "" {
		n.Versus = "mcp-go"
	}
	if n.Floor == "" {
		n.Floor = "stdlib"
	}
	return n
}

// Status is a verdict on one goal.
type Status string

// Statuses.
const (
	Met    Status = "met"
	Missed Status = "missed"
	// NoData means a figure the goal needs was not measured.
	NoData Status = "no data"
	// NA means the goal does not apply (for example late responses over
	// modern HTTP, where the client closes the stream it would come on).
	NA Status = "n/a"
)

// Verdict is one performance goal for one transport, era and concurrency.
type Verdict struct {
	Goal        string `json:"goal"`
	Transport   string `json:"transport"`
	Era         string `json:"era"`
	Concurrency int    `json:"concurrency,omitempty"`
	// Result says what was measured, with the figures compared.
	Result string `json:"result"`
	Status Status `json:"status"`
}

// goal limits per transport.
var (
	minThroughputRatio = map[string]float64{"stdio": 1.5, "http": 1.25}
	maxCPUMicros       = map[string]float64{"stdio": 20, "http": 45}
	maxAllocBytes      = map[string]float64{"stdio": 2048, "http": 4096}
)

const (
	gatewayFactor   = 1.5 // CPU: the gateway's per proxied call within this factor of ours direct
	floorFactor     = 1.5 // CPU: within this factor of the floor
	rssFactor       = 1.5 // RSS idle and under load: within this factor of the SDK's
	maxFollowUpMs   = 20  // cancel over stdio: follow-up echo
	maxSettledPct   = 150 // cancel: RSS after, % of before
	maxLateResponse = 0
)

// Evaluate judges the performance goals on a summary: per transport
// and era of ours, and per concurrency of its throughput runs. Each goal
// compares ours with the SDK or the floor in the same era; when they did not
// run in that era (not applicable), their legacy figures are used, and the
// result says so.
func Evaluate(s *Summary, names Names) []Verdict {
	n := names.withDefaults(s)
	var out []Verdict
	for _, tr := range []string{"stdio", "http"} {
		for _, era := range []string{"legacy", "modern"} {
			out = append(out, evaluateEra(s, n, tr, era)...)
		}
	}
	return out
}

func evaluateEra(s *Summary, n Names, tr, era string) []Verdict {
	var concs []int
	for _, g := range s.Groups {
		if g.Scenario == "throughput" && g.Transport == tr && g.Era == era && g.Runs[n.Ours] > 0 {
			concs = append(concs, g.Concurrency)
		}
	}
	slices.Sort(concs)
	var out []Verdict
	add := func(goal string, c int, status Status, result string) {
		out = append(out, Verdict{Goal: goal, Transport: tr, Era: era, Concurrency: c, Result: result, Status: status})
	}
	for i, c := range concs {
		g := s.Group("throughput", tr, era, c)
		vg, vnote := s.reference("throughput", tr, era, c, n.Versus)
		fg, fnote := s.reference("throughput", tr, era, c, n.Floor)

		minRatio := minThroughputRatio[tr]
		goal := fmt.Sprintf("echo throughput ≥ %.2f× %s", minRatio, n.Versus)
		ours, ok1 := g.Median("calls_per_sec", n.Ours)
		theirs, ok2 := median(vg, "calls_per_sec", n.Versus)
		if !ok1 || !ok2 || theirs == 0 {
			add(goal, c, NoData, missing(n, ok1, ok2, "calls/s"))
		} else {
			add(goal, c, judge(ours/theirs >= minRatio), fmt.Sprintf("%.2f× (%s %s, %s %s calls/s%s)",
				ours/theirs, n.Ours, num(ours), n.Versus, num(theirs), vnote))
		}

		goal = fmt.Sprintf("p99 no worse than %s's", n.Versus)
		ours, ok1 = g.Median("p99_ms", n.Ours)
		theirs, ok2 = median(vg, "p99_ms", n.Versus)
		if !ok1 || !ok2 {
			add(goal, c, NoData, missing(n, ok1, ok2, "p99"))
		} else {
			add(goal, c, judge(ours <= theirs), fmt.Sprintf("%s ms against %s ms%s", num(ours), num(theirs), vnote))
		}

		limit := maxCPUMicros[tr]
		goal = fmt.Sprintf("server CPU per echo call ≤ %s µs or ≤ %.1f× the floor", num(limit), floorFactor)
		ours, ok1 = g.Median("server_cpu_us_per_call", n.Ours)
		floor, okFloor := median(fg, "server_cpu_us_per_call", n.Floor)
		limitText := num(limit) + " µs"
		if okFloor && floorFactor*floor > limit {
			limit = floorFactor * floor
			limitText = fmt.Sprintf("%.1f× %s's %s µs", floorFactor, n.Floor, num(floor))
		}
		switch {
		case !ok1:
			add(goal, c, NoData, "not measured (needs the server's pid)")
		case !okFloor:
			add(goal, c, judge(ours <= limit), fmt.Sprintf("%s µs against %s (no floor measured)", num(ours), limitText))
		default:
			add(goal, c, judge(ours <= limit), fmt.Sprintf("%s µs against %s (%s: %s µs%s)", num(ours), limitText, n.Floor, num(floor), fnote))
		}

		if i == 0 {
			out = append(out, rssGoal(g, vg, vnote, n, tr, era, c, "rss_idle_kb", "RSS idle"))
		}
		out = append(out, rssGoal(g, vg, vnote, n, tr, era, c, "rss_load_kb", "RSS under load"))

		limit = maxAllocBytes[tr]
		goal = fmt.Sprintf("allocation per echo call ≤ %s B", num(limit))
		if ours, ok := g.Median("server_alloc_bytes_per_call", n.Ours); ok {
			add(goal, c, judge(ours <= limit), num(ours)+" B per call")
		} else {
			add(goal, c, NoData, "not measured (needs mcpbench --pprof and the server's net/http/pprof)")
		}

		if v, ok := gatewayGoal(g, n, tr, era, c); ok {
			out = append(out, v)
		}
	}

	g := s.Group("cancel", tr, era, 0)
	if g == nil || g.Runs[n.Ours] == 0 {
		return out
	}
	goal := "after 10,000 cancelled sleeps: 0 late responses"
	late, ok := g.Median("late_responses", n.Ours)
	sent, _ := g.Median("sent", n.Ours)
	suffix := ""
	if ok && sent != 10000 {
		suffix = fmt.Sprintf(" (this run: %s sleeps)", num(sent))
	}
	switch {
	case tr == "http" && era == "modern":
		add(goal, 0, NA, "the client cancels by closing the stream a response would come on")
	case !ok:
		add(goal, 0, NoData, "not counted (see the cancel notes)")
	default:
		add(goal, 0, judge(late <= maxLateResponse), num(late)+" late"+suffix)
	}
	if tr == "stdio" {
		goal = fmt.Sprintf("follow-up echo within %d ms of the last cancellation", maxFollowUpMs)
		if v, ok := g.Median("echo_after_last_cancel_ms", n.Ours); ok {
			add(goal, 0, judge(v <= maxFollowUpMs), num(v)+" ms"+suffix)
		} else {
			add(goal, 0, NoData, "no follow-up echo measured")
		}
	}
	goal = fmt.Sprintf("RSS after the burst within %d%% of before", maxSettledPct)
	if v, ok := g.Median("rss_settled_pct_of_before", n.Ours); ok {
		before, _ := g.Median("rss_before_kb", n.Ours)
		after, _ := g.Median("rss_settled_kb", n.Ours)
		add(goal, 0, judge(v <= maxSettledPct), fmt.Sprintf("%s%% (%s → %s KiB)%s", num(v), num(before), num(after), suffix))
	} else {
		add(goal, 0, NoData, "memory not sampled (needs the server's pid)")
	}
	return out
}

// gatewayGoal judges the gateway's CPU per proxied echo call (gw-OURS, our server mounting
// ours over stdio) against ours directly, over stdio, when the run measured the gateway. When
// it measured the least proxy in front of ours too (px-OURS: bytes copied, nothing read), the
// result gives its CPU, what any stdio hop costs at that load, and the gateway's above it.
func gatewayGoal(g *Group, n Names, tr, era string, c int) (Verdict, bool) {
	gw, px := "gw-"+n.Ours, "px-"+n.Ours
	if tr != "stdio" || g.Runs[gw] == 0 {
		return Verdict{}, false
	}
	v := Verdict{Goal: fmt.Sprintf("%s's CPU per proxied echo call ≤ %.1f× %s's direct", gw, gatewayFactor, n.Ours),
		Transport: tr, Era: era, Concurrency: c}
	proxied, ok1 := g.Median("server_cpu_us_per_call", gw)
	direct, ok2 := g.Median("server_cpu_us_per_call", n.Ours)
	if !ok1 || !ok2 || direct == 0 {
		v.Status, v.Result = NoData, "not measured (needs both servers' CPU)"
		return v, true
	}
	v.Status = judge(proxied <= gatewayFactor*direct)
	v.Result = fmt.Sprintf("%.2f× (%s µs against %s µs)", proxied/direct, num(proxied), num(direct))
	if hop, ok := g.Median("server_cpu_us_per_call", px); ok {
		v.Result += fmt.Sprintf("; the hop alone (%s): %s µs, %.2f×; the gateway above it: %.2f×",
			px, num(hop), hop/direct, (proxied-hop)/direct)
	}
	return v, true
}

func rssGoal(g, vg *Group, vnote string, n Names, tr, era string, c int, metric, what string) Verdict {
	v := Verdict{Goal: fmt.Sprintf("%s within %.1f× %s's", what, rssFactor, n.Versus), Transport: tr, Era: era, Concurrency: c}
	ours, ok1 := g.Median(metric, n.Ours)
	theirs, ok2 := median(vg, metric, n.Versus)
	if !ok1 || !ok2 || theirs == 0 {
		v.Status, v.Result = NoData, missing(n, ok1, ok2, "RSS")
		return v
	}
	v.Status = judge(ours <= rssFactor*theirs)
	v.Result = fmt.Sprintf("%.2f× (%s against %s KiB%s)", ours/theirs, num(ours), num(theirs), vnote)
	// The goal is on the whole RSS; its anonymous part, without the executable's pages, says
	// how much of a gap is the servers' own memory and how much the size of their binaries.
	anon := strings.TrimSuffix(metric, "_kb") + "_anon_kb"
	ourAnon, ok1 := g.Median(anon, n.Ours)
	theirAnon, ok2 := median(vg, anon, n.Versus)
	if ok1 && ok2 && theirAnon > 0 {
		v.Result += fmt.Sprintf("; anonymous %.2f× (%s against %s KiB)", ourAnon/theirAnon, num(ourAnon), num(theirAnon))
	}
	return v
}

// reference finds the group a peer is compared in: the same era if it ran
// there, else its legacy group, with a note saying so.
func (s *Summary) reference(scenario, tr, era string, c int, target string) (*Group, string) {
	if g := s.Group(scenario, tr, era, c); g != nil && g.Runs[target] > 0 {
		return g, ""
	}
	if era != "legacy" {
		if g := s.Group(scenario, tr, "legacy", c); g != nil && g.Runs[target] > 0 {
			return g, fmt.Sprintf("; %s in the legacy era", target)
		}
	}
	return nil, ""
}

func median(g *Group, metric, target string) (float64, bool) {
	if g == nil {
		return 0, false
	}
	return g.Median(metric, target)
}

func judge(ok bool) Status {
	if ok {
		return Met
	}
	return Missed
}

func missing(n Names, ours, theirs bool, what string) string {
	switch {
	case !ours:
		return fmt.Sprintf("no %s of %s", what, n.Ours)
	case !theirs:
		return fmt.Sprintf("no %s of %s", what, n.Versus)
	}
	return "no data"
}

// num formats a figure for a reader: thousands grouped, two decimals below
// 100, none above.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.Abs(v) < 100 && v != math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatInt(int64(math.Round(math.Abs(v))), 10)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// WriteTargets prints the verdicts as a table.
func WriteTargets(w io.Writer, vs []Verdict) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "\n== performance targets ==")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "transport\tera\tconc\tgoal\tstatus\tresult")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Transport, v.Era, conc(v.Concurrency), v.Goal, strings.ToUpper(string(v.Status)), v.Result)
	}
	tw.Flush()
	return ew.err
}

// WriteTargetsMarkdown prints the verdicts as a Markdown table.
func WriteTargetsMarkdown(w io.Writer, vs []Verdict) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "| transport | era | concurrent | goal | result | |")
	fmt.Fprintln(ew, "| --- | --- | ---: | --- | --- | --- |")
	for _, v := range vs {
		status := string(v.Status)
		if v.Status == Met || v.Status == Missed {
			status = "**" + status + "**"
		}
		fmt.Fprintf(ew, "| %s | %s | %s | %s | %s | %s |\n", v.Transport, v.Era, conc(v.Concurrency), v.Goal, v.Result, status)
	}
	return ew.err
}

func conc(c int) string {
	if c == 0 {
		return ""
	}
	return strconv.Itoa(c)
}

// EraRow compares one target's legacy and modern figures for echo over one
// transport at one concurrency, from throughput runs of the same report.
type EraRow struct {
	Target      string `json:"target"`
	Transport   string `json:"transport"`
	Concurrency int    `json:"concurrency"`
	// Legacy and Modern hold calls_per_sec, p50_ms, p99_ms,
	// server_cpu_us_per_call and server_alloc_bytes_per_call, as measured.
	Legacy map[string]float64 `json:"legacy"`
	Modern map[string]float64 `json:"modern"`
	// ModernNA says why the target could not run in the modern era.
	ModernNA string `json:"modern_not_applicable,omitempty"`
}

var eraMetrics = []string{"calls_per_sec", "p50_ms", "p99_ms", "server_cpu_us_per_call", "server_alloc_bytes_per_call"}

// Eras compares legacy and modern echo, per target, transport and
// concurrency, for every target with legacy throughput runs.
func Eras(s *Summary) []EraRow {
	var out []EraRow
	for _, g := range s.Groups {
		if g.Scenario != "throughput" || g.Era != "legacy" {
			continue
		}
		mg := s.Group("throughput", g.Transport, "modern", g.Concurrency)
		for _, t := range g.Targets {
			if g.Runs[t] == 0 {
				continue
			}
			row := EraRow{Target: t, Transport: g.Transport, Concurrency: g.Concurrency, Legacy: map[string]float64{}, Modern: map[string]float64{}}
			for _, m := range eraMetrics {
				if v, ok := g.Median(m, t); ok {
					row.Legacy[m] = v
				}
				if v, ok := median(mg, m, t); ok {
					row.Modern[m] = v
				}
			}
			if mg != nil {
				row.ModernNA = mg.NotApplicable[t]
			}
			out = append(out, row)
		}
	}
	return out
}

func (r EraRow) cells() []string {
	pair := func(m string) string {
		l, okL := r.Legacy[m]
		v, okM := r.Modern[m]
		switch {
		case r.ModernNA != "":
			return num(l) + " / n/a"
		case !okL && !okM:
			return "-"
		case !okM:
			return num(l) + " / -"
		case !okL:
			return "- / " + num(v)
		}
		return num(l) + " / " + num(v)
	}
	ratio := "-"
	if l, v := r.Legacy["calls_per_sec"], r.Modern["calls_per_sec"]; l > 0 && v > 0 {
		ratio = fmt.Sprintf("%.2f×", v/l)
	}
	return []string{r.Transport, strconv.Itoa(r.Concurrency), r.Target, pair("calls_per_sec"), ratio,
		pair("p50_ms"), pair("p99_ms"), pair("server_cpu_us_per_call"), pair("server_alloc_bytes_per_call")}
}

var eraHead = []string{"transport", "concurrent", "target", "echo calls/s legacy / modern", "modern ÷ legacy",
	"p50 ms", "p99 ms", "server CPU µs/call", "allocated B/call"}

// WriteEras prints the era comparison as a table.
func WriteEras(w io.Writer, rows []EraRow) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "\n== modern vs legacy: echo (legacy / modern) ==")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(eraHead, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	tw.Flush()
	return ew.err
}

// WriteErasMarkdown prints the era comparison as a Markdown table.
func WriteErasMarkdown(w io.Writer, rows []EraRow) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "| "+strings.Join(eraHead, " | ")+" |")
	fmt.Fprintln(ew, "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		fmt.Fprintln(ew, "| "+strings.Join(r.cells(), " | ")+" |")
	}
	return ew.err
}
