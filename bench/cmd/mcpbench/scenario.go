package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/internal/procstat"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

type scenarioSpec struct {
	name  string
	about string
	run   func(context.Context, scenario.Target, scenario.Config) (*scenario.Result, error)
	// flags registers the scenario's own knobs on fs, into cfg.
	flags func(fs *flag.FlagSet, cfg *scenario.Config)
}

var scenarios = map[string]scenarioSpec{
	"throughput": {"throughput", "concurrent echo calls: calls/s, latency percentiles, errors", scenario.Throughput,
		func(fs *flag.FlagSet, cfg *scenario.Config) {
			loadFlags(fs, cfg)
		}},
	"cancel": {"cancel", "N long sleep calls in flight, all cancelled: late responses, recovery time, memory", scenario.Cancel,
		func(fs *flag.FlagSet, cfg *scenario.Config) {
			fs.IntVar(&cfg.N, "n", cfg.N, "sleep calls to put in flight")
			fs.IntVar(&cfg.SleepMs, "sleep", cfg.SleepMs, "ms each sleep call asks for")
			fs.IntVar(&cfg.Concurrency, "c", cfg.Concurrency, "HTTP: cancellation POSTs sent in parallel")
			fs.Var(seconds{&cfg.Window}, "window", "how long after the last cancellation late responses are counted")
			fs.Var(seconds{&cfg.Settle}, "settle", "wait after the window before the last memory sample")
			fs.Var(seconds{&cfg.LoadWait}, "load-wait", "wait with the calls in flight before the loaded memory sample")
			fs.Var(seconds{&cfg.Timeout}, "timeout", "limit for each call (ping, echo)")
			fs.Var(seconds{&cfg.Stall}, "stall", "sending the sleep calls or the cancellations fails once nothing could be sent for this long")
			fs.IntVar(&cfg.ProgressEvery, "progress-every", cfg.ProgressEvery, "every k-th slow call asks for progress (a progressToken), so progress after the cancellation is counted (0: none)")
		}},
	"cancel-cpu": {"cancel-cpu", "N CPU-bound calls in flight, all cancelled: did the server stop the work? Its CPU after the cancellation against its idle CPU", scenario.CancelCPU,
		func(fs *flag.FlagSet, cfg *scenario.Config) {
			cfg.LoadWait, cfg.Window = time.Second, 2*time.Second
			fs.IntVar(&cfg.CPUCalls, "n", cfg.CPUCalls, "CPU-bound calls to put in flight")
			fs.Var(seconds{&cfg.Idle}, "idle", "how long the idle server's CPU is measured")
			fs.Var(seconds{&cfg.LoadWait}, "load-wait", "wait with the calls in flight; the loaded CPU is measured over its second half")
			fs.Var(seconds{&cfg.Window}, "window", "how long after the last cancellation the server's CPU is measured")
			fs.IntVar(&cfg.Concurrency, "c", cfg.Concurrency, "HTTP: cancellation POSTs sent in parallel")
			fs.Var(seconds{&cfg.Timeout}, "timeout", "limit for each call")
			fs.Var(seconds{&cfg.Stall}, "stall", "sending the calls or the cancellations fails once nothing could be sent for this long")
		}},
	"mixed": {"mixed", "echo load with a fraction of short sleep calls cancelled mid-flight", scenario.Mixed,
		func(fs *flag.FlagSet, cfg *scenario.Config) {
			loadFlags(fs, cfg)
			fs.Float64Var(&cfg.CancelFrac, "cancel-frac", cfg.CancelFrac, "fraction of calls that are sleep calls cancelled mid-flight")
			fs.IntVar(&cfg.MixedSleepMs, "sleep", cfg.MixedSleepMs, "ms each sleep call asks for")
			fs.Var(seconds{&cfg.CancelWithin}, "cancel-within", "cancel each sleep call after a random delay below this (default: half of -sleep)")
			fs.IntVar(&cfg.MaxSleeps, "max-sleeps", cfg.MaxSleeps, "sleep calls in flight at most (workers do not wait for them)")
			fs.Var(seconds{&cfg.Window}, "window", "how long after the load late responses are still counted")
		}},
	"errors": {"errors", "bad inputs one by one, then fail(mode=error) calls under load", scenario.Errors,
		func(fs *flag.FlagSet, cfg *scenario.Config) {
			loadFlags(fs, cfg)
			fs.Var(seconds{&cfg.ReplyWait}, "reply-wait", "how long to wait for the reply to a probe")
			fs.IntVar(&cfg.Oversize, "oversize", cfg.Oversize, "bytes of echo text in the oversized message")
		}},
}

func loadFlags(fs *flag.FlagSet, cfg *scenario.Config) {
	fs.IntVar(&cfg.Concurrency, "c", cfg.Concurrency, "concurrent calls")
	fs.Var(seconds{&cfg.Duration}, "d", "measured duration (seconds, or a Go duration such as 500ms)")
	fs.Var(seconds{&cfg.Warmup}, "warmup", "unmeasured warm-up before it")
	fs.IntVar(&cfg.Payload, "payload", cfg.Payload, "bytes of echo text")
	fs.Var(seconds{&cfg.Timeout}, "timeout", "limit for each call")
}

// seconds is a duration flag that also takes a bare number of seconds.
type seconds struct{ d *time.Duration }

func (s seconds) String() string {
	if s.d == nil {
		return ""
	}
	return s.d.String()
}

func (s seconds) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		*s.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("want seconds or a duration such as 1.5s or 500ms")
	}
	*s.d = d
	return nil
}

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func runScenario(ctx context.Context, sc scenarioSpec, args []string, stdout, stderr io.Writer) error {
	cfg := scenario.DefaultConfig()
	fs := flag.NewFlagSet(sc.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		stdio, httpURL, name string
		pprofURL             string
		pid                  int
		asJSON, discard, q   bool
		hdrs                 headers
		connectTimeout       = 10 * time.Second
		eraName              = string(client.Legacy)
	)
	fs.StringVar(&stdio, "stdio", "", `start this server command and speak over its stdin/stdout ("CMD ARGS"; quotes group words)`)
	fs.StringVar(&httpURL, "http", "", "Streamable HTTP endpoint URL of a running server")
	fs.IntVar(&pid, "pid", 0, "server process id to sample memory, threads and CPU from /proc (HTTP; stdio uses its child)")
	fs.StringVar(&pprofURL, "pprof", "", "base URL of the server's Go net/http/pprof handlers (http://HOST:PORT/debug/pprof/): the load scenarios read its runtime.MemStats at the window's edges for allocation per call")
	fs.StringVar(&name, "name", "", "target name in results (default: the command's base name or the URL's host)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one JSON object instead of a table")
	fs.BoolVar(&discard, "discard-stderr", false, "stdio: discard the server's stderr instead of passing it through")
	fs.BoolVar(&q, "q", false, "no progress line on stderr")
	fs.Var(&hdrs, "header", `HTTP: extra request header "Name: value" (repeatable)`)
	fs.Var(seconds{&connectTimeout}, "connect-timeout", "how long to keep retrying the handshake while an HTTP server starts")
	var tools toolFlags
	tools.register(fs)
	fs.StringVar(&eraName, "era", eraName, "protocol era: legacy (initialize, sessions; MCP 2025-11-25) or modern (server/discover, the envelope in every request, no session; MCP 2026-07-28)")
	sc.flags(fs, &cfg)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mcpbench %s (--stdio \"CMD ARGS\" | --http URL) [flags]\n\n%s.\n\nFlags:\n", sc.name, sc.about)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpbench %s: unexpected argument %q\n", sc.name, fs.Arg(0))
		return errUsage
	}
	if (stdio == "") == (httpURL == "") {
		fmt.Fprintf(stderr, "mcpbench %s: give exactly one of --stdio or --http\n", sc.name)
		return errUsage
	}
	era, err := client.ParseEra(eraName)
	if err != nil {
		fmt.Fprintf(stderr, "mcpbench %s: --era: %v\n", sc.name, err)
		return errUsage
	}
	if err := tools.apply(&cfg); err != nil {
		fmt.Fprintf(stderr, "mcpbench %s: %v\n", sc.name, err)
		return errUsage
	}
	if !q {
		cfg.Progress = stderr
	}
	var target scenario.Target
	if stdio != "" {
		target, err = stdioTarget(stdio, name, era, discard, stderr, connectTimeout)
	} else {
		target, err = httpTarget(httpURL, name, era, hdrs, cfg, connectTimeout)
	}
	if err != nil {
		return err
	}
	target.PID = pid
	if pprofURL != "" {
		if _, err := procstat.PprofHeapURL(pprofURL); err != nil {
			return fmt.Errorf("--pprof: %w", err)
		}
		target.Pprof = pprofURL
	}
	res, err := sc.run(ctx, target, cfg)
	var na error
	if err != nil && scenario.NotApplicable(err) {
		res, na = scenario.NotApplicableResult(sc.name, target, cfg, err), fmt.Errorf("%w: %s against %s: %v", errNotApplicable, sc.name, target.Name, err)
	} else if err != nil {
		return fmt.Errorf("%s against %s: %w", sc.name, target.Name, err)
	}
	if asJSON {
		err = json.NewEncoder(stdout).Encode(res)
	} else {
		err = printResult(stdout, res)
	}
	if err != nil {
		return err
	}
	return na
}

// handshake opens a connection in era: initialize (legacy) or
// server/discover (modern).
func handshake(ctx context.Context, c *client.Client, era client.Era) error {
	if era == client.Modern {
		return c.Discover(ctx)
	}
	return c.Initialize(ctx)
}

func stdioTarget(command, name string, era client.Era, discard bool, stderr io.Writer, timeout time.Duration) (scenario.Target, error) {
	argv, err := splitCommand(command)
	if err != nil {
		return scenario.Target{}, fmt.Errorf("--stdio: %w", err)
	}
	if name == "" {
		name = filepath.Base(argv[0])
	}
	opts := client.StdioOptions{Stderr: stderr}
	if discard {
		opts.Stderr = nil
	}
	return scenario.Target{
		Name: name, Transport: "stdio", Endpoint: command, Era: era,
		Dial: func(ctx context.Context) (*client.Client, error) {
			c, err := client.DialStdio(argv, opts)
			if err != nil {
				return nil, err
			}
			ictx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if err := handshake(ictx, c, era); err != nil {
				cerr := c.Close()
				if alive := c.Alive(); alive != nil {
					err = fmt.Errorf("%w (%v)", err, alive)
				}
				return nil, errors.Join(err, cerr)
			}
			return c, nil
		},
	}, nil
}

func httpTarget(raw, name string, era client.Era, hdrs headers, cfg scenario.Config, timeout time.Duration) (scenario.Target, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return scenario.Target{}, fmt.Errorf("--http: want an http:// or https:// URL, got %q", raw)
	}
	if name == "" {
		name = u.Host
	}
	h := http.Header{}
	for _, kv := range hdrs {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return scenario.Target{}, fmt.Errorf("--header %q: want \"Name: value\"", kv)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	opts := client.HTTPOptions{Header: h, MaxIdle: max(cfg.Concurrency, 64)}
	return scenario.Target{
		Name: name, Transport: "http", Endpoint: raw, Era: era, Header: h,
		Dial: func(ctx context.Context) (*client.Client, error) {
			deadline := time.Now().Add(timeout)
			for {
				c, err := client.DialHTTP(raw, opts)
				if err != nil {
					return nil, err
				}
				ictx, cancel := context.WithTimeout(ctx, timeout)
				err = handshake(ictx, c, era)
				cancel()
				if err == nil {
					return c, nil
				}
				c.Close()
				// A server that is still starting refuses connections.
				if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) || ctx.Err() != nil {
					return nil, err
				}
				t := time.NewTimer(100 * time.Millisecond)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return nil, ctx.Err()
				}
			}
		},
	}, nil
}

// splitCommand splits a command line into words: spaces separate, single
// and double quotes group, a backslash escapes the next character (outside
// single quotes). No other shell syntax.
func splitCommand(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
		quote rune
		esc   bool
	)
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc, in = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	switch {
	case esc:
		return nil, errors.New("trailing backslash")
	case quote != 0:
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

func printResult(w io.Writer, r *scenario.Result) error {
	server := ""
	if len(r.Server) > 0 {
		var si struct{ Name, Version string }
		if json.Unmarshal(r.Server, &si) == nil {
			server = strings.TrimSpace(si.Name + " " + si.Version)
		}
	}
	fmt.Fprintf(w, "%s: %s over %s, %s era", r.Scenario, r.Target, r.Transport, r.EraName())
	if server != "" {
		fmt.Fprintf(w, " (server %s, protocol %s)", server, r.Protocol)
	}
	fmt.Fprintln(w)
	if r.NotApplicable != "" {
		fmt.Fprintf(w, "  endpoint: %s\n  not applicable: %s\n\n", r.Endpoint, r.NotApplicable)
		return nil
	}
	fmt.Fprintf(w, "  endpoint: %s\n", r.Endpoint)
	keys := make([]string, 0, len(r.Params))
	for k := range r.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ps []string
	for _, k := range keys {
		ps = append(ps, fmt.Sprintf("%s=%v", k, r.Params[k]))
	}
	fmt.Fprintf(w, "  params:   %s\n", strings.Join(ps, " "))
	fmt.Fprintf(w, "  machine:  %s, %d cores, %s\n\n", r.Host.CPU, r.Host.Cores, r.Host.Go)

	names := make([]string, 0, len(r.Metrics))
	for k := range r.Metrics {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return scenario.Less(names[i], names[j]) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, n := range names {
		info := scenario.Info(n)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", n, formatValue(r.Metrics[n]), info.Unit, info.Doc)
	}
	tw.Flush()
	if len(r.Probes) > 0 {
		fmt.Fprintln(w, "\n  probes:")
		for _, p := range r.Probes {
			fmt.Fprintf(w, "  - %s: %s\n      expected: %s\n", p.Name, p.Summary(), p.Expect)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\n  notes:")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

func formatValue(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}
