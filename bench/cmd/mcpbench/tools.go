package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

// listedTool is one entry of a tools/list result.
type listedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// runTools lists a server's tools with their input schemas and prints a
// command line for each scenario, with arguments made from the schemas.
func runTools(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		stdio, httpURL string
		hdrs           headers
		asJSON         bool
		connectTimeout = 10 * time.Second
		eraName        = string(client.Legacy)
	)
	fs.StringVar(&stdio, "stdio", "", `start this server command and speak over its stdin/stdout ("CMD ARGS"; quotes group words)`)
	fs.StringVar(&httpURL, "http", "", "Streamable HTTP endpoint URL of a running server")
	fs.Var(&hdrs, "header", `HTTP: extra request header "Name: value" (repeatable)`)
	fs.StringVar(&eraName, "era", eraName, "protocol era to list in: legacy or modern")
	fs.BoolVar(&asJSON, "json", false, "print the tools as JSON (name, description, inputSchema, the arguments made for it) instead of text")
	fs.Var(seconds{&connectTimeout}, "connect-timeout", "how long to keep retrying the handshake while an HTTP server starts")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: mcpbench tools (--stdio "CMD ARGS" | --http URL) [flags]

Lists the server's tools with their input schemas and prints a command line
for each scenario (throughput, cancel, mixed, cancel-cpu) that names the
server's own tools with --tool/--args, --slow-tool/--slow-args and
--cpu-tool/--cpu-args, with arguments made from the schemas where it can.
A long call is a tool whose name or description speaks of sleeping, waiting
or a long operation and that takes a duration; a CPU-bound call one that
speaks of spinning, burning or computing. Check that the arguments mean what
you want before you measure.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpbench tools: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	if (stdio == "") == (httpURL == "") {
		fmt.Fprintln(stderr, "mcpbench tools: give exactly one of --stdio or --http")
		return errUsage
	}
	era, err := client.ParseEra(eraName)
	if err != nil {
		fmt.Fprintf(stderr, "mcpbench tools: --era: %v\n", err)
		return errUsage
	}
	var target scenario.Target
	if stdio != "" {
		target, err = stdioTarget(stdio, "", era, true, stderr, connectTimeout)
	} else {
		target, err = httpTarget(httpURL, "", era, hdrs, scenario.DefaultConfig(), connectTimeout)
	}
	if err != nil {
		return err
	}
	c, err := target.Dial(ctx)
	if err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	list, err := listTools(ctx, c)
	c.Close()
	if err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	if asJSON {
		type out struct {
			listedTool
			Args json.RawMessage `json:"args,omitempty"`
		}
		var all []out
		for _, t := range list {
			o := out{listedTool: t}
			if a, ok := makeArgs(t, roleFast); ok {
				o.Args = a
			}
			all = append(all, o)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	where := "--stdio " + shellQuote(stdio)
	if httpURL != "" {
		where = "--http " + shellQuote(httpURL)
		for _, h := range hdrs {
			where += " --header " + shellQuote(h)
		}
	}
	if era != client.Legacy {
		where += " --era " + string(era)
	}
	server := ""
	if si := c.ServerInfo(); len(si) > 0 {
		var info struct{ Name, Version string }
		if json.Unmarshal(si, &info) == nil {
			server = strings.TrimSpace(info.Name + " " + info.Version)
		}
	}
	printTools(stdout, list, server, where)
	return nil
}

// listTools calls tools/list until there is no next cursor.
func listTools(ctx context.Context, c *client.Client) ([]listedTool, error) {
	var (
		all    []listedTool
		cursor string
	)
	for range 1000 {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		msg, err := c.Call(cctx, "tools/list", params)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("tools/list: %w", msg.Error)
		}
		var res struct {
			Tools      []listedTool `json:"tools"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := json.Unmarshal(msg.Result, &res); err != nil {
			return nil, fmt.Errorf("tools/list result: %w", err)
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" {
			return all, nil
		}
		cursor = res.NextCursor
	}
	return nil, errors.New("tools/list: more than 1000 pages")
}

func printTools(w io.Writer, list []listedTool, server, where string) {
	if server != "" {
		fmt.Fprintf(w, "%d tools of %s:\n\n", len(list), server)
	} else {
		fmt.Fprintf(w, "%d tools:\n\n", len(list))
	}
	for _, t := range list {
		fmt.Fprintf(w, "  %s\n", t.Name)
		if d := strings.Join(strings.Fields(t.Description), " "); d != "" {
			fmt.Fprintf(w, "      %s\n", shortText(d, 200))
		}
		fmt.Fprintf(w, "      input: %s\n", compactJSON(t.InputSchema))
		if a, ok := makeArgs(t, roleFast); ok {
			fmt.Fprintf(w, "      args:  %s\n", a)
		} else {
			fmt.Fprintf(w, "      args:  (cannot be made from the schema)\n")
		}
	}
	fmt.Fprintln(w, "\ncommands (arguments made from the input schemas: check that they mean what you want):")
	fast, fastOK := pick(list, roleFast)
	slow, slowOK := pick(list, roleSlow)
	cpu, cpuOK := pick(list, roleCPU)
	fastFlags := ""
	if fastOK {
		fastFlags = toolFlagsOf("tool", "args", fast, roleFast)
	}
	fmt.Fprintln(w)
	if fastOK {
		fmt.Fprintf(w, "  # throughput: %s calls in a loop\n", fast.Name)
		fmt.Fprintf(w, "  mcpbench throughput %s%s\n", where, fastFlags)
	} else {
		fmt.Fprintln(w, "  # throughput: no tool whose arguments could be made: name one with --tool NAME --args JSON")
	}
	fmt.Fprintln(w)
	if slowOK {
		fmt.Fprintf(w, "  # cancel: 10,000 %s calls in flight, all cancelled; %s answers the follow-up\n", slow.Name, orDefault(fast, fastOK))
		fmt.Fprintf(w, "  mcpbench cancel %s%s%s\n", where, fastFlags, toolFlagsOf("slow-tool", "slow-args", slow, roleSlow))
	} else {
		fmt.Fprintln(w, "  # cancel: no tool looks long-running (sleep, wait, delay, long, slow, with a duration): name one with --slow-tool NAME --slow-args JSON")
	}
	fmt.Fprintln(w)
	if slowOK && fastOK {
		mixedFlags := toolFlagsOf("slow-tool", "slow-args", slow, roleMixed)
		if mixedFlags != "" {
			if d, ok := callDuration(slow, roleMixed); ok {
				mixedFlags += " -cancel-within " + (d / 2).String()
			}
		}
		fmt.Fprintf(w, "  # mixed: %s calls, and short %s calls cancelled mid-flight\n", fast.Name, slow.Name)
		fmt.Fprintf(w, "  mcpbench mixed %s%s%s\n", where, fastFlags, mixedFlags)
	} else {
		fmt.Fprintln(w, "  # mixed: needs a quick and a long-running tool (--tool/--args and --slow-tool/--slow-args)")
	}
	fmt.Fprintln(w)
	if cpuOK {
		fmt.Fprintf(w, "  # cancel-cpu: %s calls in flight, all cancelled: does the server's CPU fall back to idle?\n", cpu.Name)
		fmt.Fprintf(w, "  mcpbench cancel-cpu %s%s%s\n", where, fastFlags, toolFlagsOf("cpu-tool", "cpu-args", cpu, roleCPU))
	} else {
		fmt.Fprintln(w, "  # cancel-cpu: no tool looks CPU-bound (spin, burn, cpu, compute, with a duration): name one with --cpu-tool NAME --cpu-args JSON")
	}
}

func orDefault(t listedTool, ok bool) string {
	if ok {
		return t.Name
	}
	return "echo"
}

// role is what a scenario wants a tool for.
type role int

const (
	roleFast  role = iota // a quick call
	roleSlow              // a long call, cancelled (cancel)
	roleMixed             // a short long call, cancelled mid-flight (mixed)
	roleCPU               // a CPU-bound call
)

var (
	slowName  = regexp.MustCompile(`(?i)sleep|wait|delay|long|slow|pause|hang`)
	cpuName   = regexp.MustCompile(`(?i)spin|burn|cpu|busy|crunch|compute|hash|prime|fib`)
	avoidFast = regexp.MustCompile(`(?i)fail|error|panic|crash|sleep|wait|delay|long|slow|spin|burn|cpu|delete|remove|drop|kill|write|send|exec|shell|trigger`)
	fastName  = regexp.MustCompile(`(?i)echo|ping|hello|greet|add|sum|time|now|status`)
)

// demo is the demonstration tool each role uses by default, and its
// argument: a tool with that name and argument needs no flags.
var demo = map[role][2]string{
	roleFast: {"echo", "text"}, roleSlow: {"sleep", "ms"}, roleMixed: {"sleep", "ms"}, roleCPU: {"spin", "ms"},
}

// pick chooses the tool for a role: the one whose name (or, less, its
// description) fits best and whose arguments can be made.
func pick(list []listedTool, r role) (listedTool, bool) {
	var (
		best      listedTool
		bestScore int
		found     bool
	)
	for _, t := range list {
		if _, ok := makeArgs(t, r); !ok {
			continue
		}
		score := 0
		switch r {
		case roleFast:
			if avoidFast.MatchString(t.Name) {
				continue
			}
			if fastName.MatchString(t.Name) {
				score += 4
			}
			if t.Name == "echo" {
				score += 2
			}
			score -= len(required(schemaOf(t)))
		case roleSlow, roleMixed, roleCPU:
			re := slowName
			if r == roleCPU {
				re = cpuName
			}
			switch {
			case re.MatchString(t.Name):
				score = 3
			case re.MatchString(t.Description):
				score = 1
			default:
				continue
			}
			if t.Name == demo[r][0] {
				score++
			}
		}
		if !found || score > bestScore {
			best, bestScore, found = t, score, true
		}
	}
	return best, found
}

// toolFlagsOf prints " --NAME tool --ARGS 'json'", or nothing when the tool
// is the role's demonstration tool with its one argument, which the
// defaults already call.
func toolFlagsOf(nameFlag, argsFlag string, t listedTool, r role) string {
	args, _ := makeArgs(t, r)
	if d := demo[r]; t.Name == d[0] {
		var m map[string]json.RawMessage
		want := map[role]string{roleSlow: "600000", roleMixed: "50", roleCPU: strconv.Itoa(scenario.DefaultCPUMs)}[r]
		if json.Unmarshal(args, &m) == nil && len(m) == 1 && m[d[1]] != nil && (r == roleFast || string(m[d[1]]) == want) {
			return ""
		}
	}
	return fmt.Sprintf(" --%s %s --%s %s", nameFlag, shellQuote(t.Name), argsFlag, shellQuote(string(args)))
}

func schemaOf(t listedTool) map[string]any {
	var s map[string]any
	_ = json.Unmarshal(t.InputSchema, &s)
	if s == nil {
		s = map[string]any{"type": "object"}
	}
	return s
}

func required(s map[string]any) []string {
	var out []string
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// makeArgs makes arguments for a tool from its input schema: its required
// properties, each from its default, const, enum or examples, or a value of
// its type within its bounds; for a long or CPU-bound call, its duration
// argument asks for a duration that fits the role.
func makeArgs(t listedTool, r role) (json.RawMessage, bool) {
	root := schemaOf(t)
	g := &argMaker{root: root, role: r}
	v, ok := g.object(root, true)
	if !ok {
		return nil, false
	}
	if r != roleFast && !g.timed {
		return nil, false
	}
	b, err := json.Marshal(v)
	return b, err == nil
}

// callDuration is how long a call of the tool made for the role asks to
// run, when it has a duration argument.
func callDuration(t listedTool, r role) (time.Duration, bool) {
	root := schemaOf(t)
	g := &argMaker{root: root, role: r}
	if _, ok := g.object(root, true); !ok || !g.timed {
		return 0, false
	}
	return g.duration, true
}

type argMaker struct {
	root     map[string]any
	role     role
	depth    int
	timed    bool // a duration argument was set for the role
	duration time.Duration
}

var (
	msName  = regexp.MustCompile(`(?i)(^ms$|_ms$|[a-z]Ms$|milli)`)
	durName = regexp.MustCompile(`(?i)(^ms$|_ms$|[a-z]Ms$|milli|sec|duration|delay|time|wait|sleep|^s$)`)
)

// roleDuration is how long a call of the role should run.
func roleDuration(r role) time.Duration {
	switch r {
	case roleSlow:
		return 600 * time.Second
	case roleMixed:
		return 50 * time.Millisecond
	case roleCPU:
		return scenario.DefaultCPUMs * time.Millisecond
	}
	return 0
}

func (g *argMaker) resolve(s map[string]any) map[string]any {
	ref, ok := s["$ref"].(string)
	if !ok {
		return s
	}
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, prefix); ok {
			defs, _ := g.root[strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/")].(map[string]any)
			if d, ok := defs[name].(map[string]any); ok {
				return d
			}
		}
	}
	return nil
}

func (g *argMaker) object(s map[string]any, top bool) (map[string]any, bool) {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	names := required(s)
	// At the top, a duration property the role needs is set even when it
	// is optional.
	if top && g.role != roleFast {
		var extra []string
		for n, p := range props {
			if ps, ok := p.(map[string]any); ok && isNumber(ps) && durName.MatchString(n) && !contains(names, n) {
				extra = append(extra, n)
			}
		}
		sort.Strings(extra)
		if len(extra) > 0 {
			names = append(names, extra[0])
		}
	}
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		if p == nil {
			return nil, false
		}
		v, ok := g.value(n, p, top)
		if !ok {
			return nil, false
		}
		out[n] = v
	}
	return out, true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func isNumber(s map[string]any) bool {
	t := typeOf(s)
	return t == "integer" || t == "number"
}

func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if n, ok := x.(string); ok && n != "null" {
				return n
			}
		}
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	return ""
}

func (g *argMaker) value(name string, s map[string]any, top bool) (any, bool) {
	if g.depth > 8 {
		return nil, false
	}
	g.depth++
	defer func() { g.depth-- }()
	if s = g.resolve(s); s == nil {
		return nil, false
	}
	if top && g.role != roleFast && isNumber(s) && durName.MatchString(name) && !g.timed {
		return g.durationValue(name, s)
	}
	if v, ok := s["const"]; ok {
		return v, true
	}
	if v, ok := s["default"]; ok {
		return v, true
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0], true
	}
	if e, ok := s["examples"].([]any); ok && len(e) > 0 {
		return e[0], true
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, a := range alts {
				if as, ok := a.(map[string]any); ok && typeOf(as) != "null" {
					if v, ok := g.value(name, as, top); ok {
						return v, true
					}
				}
			}
			return nil, false
		}
	}
	switch typeOf(s) {
	case "string":
		n := 5
		if m, ok := s["minLength"].(float64); ok && int(m) > n {
			n = int(m)
		}
		if m, ok := s["maxLength"].(float64); ok && int(m) < n {
			n = int(m)
		}
		switch s["format"] {
		case "uri", "url":
			return "https://example.com/", true
		case "email":
			return "someone@example.com", true
		case "date-time":
			return "2026-01-01T00:00:00Z", true
		case "date":
			return "2026-01-01", true
		}
		return strings.Repeat("x", n), true
	case "integer", "number":
		v := 1.0
		if m, ok := s["minimum"].(float64); ok {
			v = m
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok && v <= m {
			v = m + 1
		}
		return clamp(s, v), true
	case "boolean":
		return false, true
	case "array":
		n := 0
		if m, ok := s["minItems"].(float64); ok {
			n = int(m)
		}
		items := []any{}
		for range n {
			is, _ := s["items"].(map[string]any)
			if is == nil {
				return nil, false
			}
			v, ok := g.value(name, is, false)
			if !ok {
				return nil, false
			}
			items = append(items, v)
		}
		return items, true
	case "object":
		return g.object(s, false)
	}
	return nil, false
}

// durationValue sets a duration argument for the role, in milliseconds or
// seconds as its name or description says (seconds when neither does),
// within its bounds.
func (g *argMaker) durationValue(name string, s map[string]any) (any, bool) {
	want := roleDuration(g.role)
	desc, _ := s["description"].(string)
	// Milliseconds when the name or description says so; otherwise
	// seconds, the usual unit of a "duration" or a "delay".
	ms := msName.MatchString(name) || strings.Contains(strings.ToLower(desc), "millisecond")
	v := want.Seconds()
	if ms {
		v = float64(want.Milliseconds())
	}
	if typeOf(s) == "integer" {
		v = math.Ceil(v)
	}
	v = clamp(s, v)
	g.timed = true
	if ms {
		g.duration = time.Duration(v * float64(time.Millisecond))
	} else {
		g.duration = time.Duration(v * float64(time.Second))
	}
	return v, true
}

func clamp(s map[string]any, v float64) float64 {
	if m, ok := s["maximum"].(float64); ok && v > m {
		v = m
	}
	if m, ok := s["exclusiveMaximum"].(float64); ok && v >= m {
		v = m - 1
	}
	if m, ok := s["minimum"].(float64); ok && v < m {
		v = m
	}
	if typeOf(s) == "integer" {
		v = math.Floor(v)
	}
	return v
}

// shellQuote quotes s for a POSIX shell, and for mcpbench's own --stdio
// splitting, which reads the same quotes.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?[]{}#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func compactJSON(b json.RawMessage) string {
	if len(b) == 0 {
		return "(none)"
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return shortText(string(b), 300)
	}
	out, _ := json.Marshal(v)
	return shortText(string(out), 300)
}

func shortText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
