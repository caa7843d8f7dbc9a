package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgrain/toolgrain/bench/internal/fakemcp"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

// fakeProcess returns a --stdio command that starts the test binary as a
// fake server with opts (see TestMain).
func fakeProcess(t *testing.T, opts fakemcp.Options) string {
	t.Helper()
	b, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeEnv, string(b))
	return shellQuote(os.Args[0])
}

func decode(t *testing.T, out string) scenario.Result {
	t.Helper()
	var r scenario.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	return r
}

// foreignFlags name the foreign fake's own tools.
var foreignFlags = []string{
	"--tool", "reverse", "--args", `{"message": "hello"}`,
	"--slow-tool", "long_operation", "--slow-args", `{"duration": 600, "steps": 1}`,
}

// TestForeignServer drives a server that has none of the demonstration
// tools, over stdio and HTTP, with its own tools named by the flags.
func TestForeignServer(t *testing.T) {
	hsrv := fakemcp.New(fakemcp.Options{Foreign: true, Session: "s"})
	hs := httptest.NewServer(hsrv.Handler())
	defer func() { hsrv.Close(); hs.Close() }()
	for _, where := range [][]string{{"--http", hs.URL}, {"--stdio", fakeProcess(t, fakemcp.Options{Foreign: true})}} {
		t.Run(where[0][2:], func(t *testing.T) {
			// Without the flags the first echo fails, and the error says what to do.
			_, _, err := runCmd(t, "", append([]string{"throughput", "-q", "-d", "0.1", "-warmup", "0"}, where...)...)
			if err == nil || !strings.Contains(err.Error(), "a first echo call failed") || !strings.Contains(err.Error(), "--tool") {
				t.Errorf("throughput without --tool: %v", err)
			}

			args := append(append([]string{"throughput", "--json", "-q", "-c", "2", "-d", "0.2", "-warmup", "0"}, where...), foreignFlags[:4]...)
			out, _, err := runCmd(t, "", args...)
			if err != nil {
				t.Fatal(err)
			}
			r := decode(t, out)
			if r.Metrics["calls_total"] <= 0 || r.Metrics["errors"] != 0 || r.Params["tool"] != "reverse" || r.Params["args"] != `{"message":"hello"}` {
				t.Errorf("throughput = %+v", r)
			}

			args = append(append([]string{"cancel", "--json", "-q", "-n", "40", "-window", "0.2", "-settle", "0", "-load-wait", "0.1"}, where...), foreignFlags...)
			out, _, err = runCmd(t, "", args...)
			if err != nil {
				t.Fatal(err)
			}
			r = decode(t, out)
			m := r.Metrics
			if m["sent"] != 40 || m["cancels_sent"] != 40 || m["late_responses"] != 0 || m["answered_before_cancel"] != 0 ||
				m["echo_after_last_cancel_ms"] <= 0 || r.Params["slow_tool"] != "long_operation" {
				t.Errorf("cancel = %+v", r)
			}

			args = append(append([]string{"mixed", "--json", "-q", "-c", "2", "-d", "0.3", "-warmup", "0", "-window", "0.1",
				"-cancel-within", "10ms"}, where...), "--tool", "reverse", "--args", `{"message":"hi"}`,
				"--slow-tool", "long_operation", "--slow-args", `{"duration":0.5,"steps":1}`)
			out, _, err = runCmd(t, "", args...)
			if err != nil {
				t.Fatal(err)
			}
			r = decode(t, out)
			if r.Metrics["echo_per_sec"] <= 0 || r.Metrics["cancels_sent"] <= 0 || r.Metrics["errors"] != 0 || r.Metrics["late_responses"] != 0 {
				t.Errorf("mixed = %+v", r)
			}
		})
	}
}

// TestToolErrorsAreCounted: isError results and JSON-RPC errors of the
// quick tool are failures, counted by kind and shown, never answers.
func TestToolErrorsAreCounted(t *testing.T) {
	srv := fakemcp.New(fakemcp.Options{Foreign: true, Session: "s", FailEvery: 3})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	out, _, err := runCmd(t, "", "throughput", "--http", hs.URL, "--json", "-q", "-c", "1", "-d", "0.3", "-warmup", "0",
		"--tool", "reverse", "--args", `{"message":"hello"}`)
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, out)
	m := r.Metrics
	if m["errors_tool"] < 1 || m["errors_rpc"] < 1 || m["errors_other"] != 0 || m["errors"] != m["errors_tool"]+m["errors_rpc"] {
		t.Errorf("error kinds = %v", m)
	}
	// One call in three failed: the answers counted are the other two.
	ok := m["calls_per_sec"] * 0.3
	if all := ok + m["errors"]; m["errors"] < all/3-2 || m["errors"] > all/3+2 {
		t.Errorf("errors %v of %v calls, want a third", m["errors"], all)
	}
	if len(r.Notes) == 0 || !strings.Contains(strings.Join(r.Notes, "\n"), "the first failure of the run: isError") {
		t.Errorf("notes = %q, want the first failure shown", r.Notes)
	}
}

func TestToolFlagsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"throughput", "--stdio", "x", "--args", `{"a":1}`},
		{"cancel", "--stdio", "x", "--slow-args", `{"a":1}`},
		{"cancel-cpu", "--stdio", "x", "--cpu-args", `{"a":1}`},
		{"throughput", "--stdio", "x", "--tool", "t", "--args", `[1]`},
		{"throughput", "--stdio", "x", "--tool", "t", "--args", `{"a":`},
		{"cancel", "--stdio", "x", "--slow-tool", "t", "--slow-args", `null`},
	} {
		_, stderr, err := runCmd(t, "", args...)
		if !errors.Is(err, errUsage) || !strings.Contains(stderr, "args") {
			t.Errorf("%q: err = %v, stderr %q; want a usage error about the arguments", args, err, stderr)
		}
	}
}

// TestToolsListing lists the foreign fake's tools and runs every command it
// prints, as printed, with shorter durations appended.
func TestToolsListing(t *testing.T) {
	// A fresh fake for every command: the fake remembers cancellations of
	// ids it has not seen across sessions.
	var cur atomic.Pointer[fakemcp.Server]
	fresh := func() {
		if old := cur.Swap(fakemcp.New(fakemcp.Options{Foreign: true, Session: "s"})); old != nil {
			old.Close()
		}
	}
	fresh()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur.Load().Handler().ServeHTTP(w, r)
	}))
	defer func() { hs.Close(); cur.Load().Close() }()
	out, _, err := runCmd(t, "", "tools", "--http", hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"4 tools of fakemcp 1.0.0:", "  reverse\n      Reverses a message.\n      input: {", `args:  {"message":"xxxxx"}`,
		`mcpbench throughput --http ` + hs.URL + ` --tool reverse --args '{"message":"xxxxx"}'`,
		`--slow-tool long_operation --slow-args '{"duration":600,"steps":5}'`,
		`--slow-tool long_operation --slow-args '{"duration":0.05,"steps":5}' -cancel-within 25ms`,
		`--cpu-tool burn_cpu --cpu-args '{"millis":10000}'`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tools output lacks %q:\n%s", want, out)
		}
	}
	short := map[string][]string{
		"throughput": {"-c", "2", "-d", "0.2", "-warmup", "0"},
		"cancel":     {"-n", "20", "-window", "0.1", "-settle", "0", "-load-wait", "0.1"},
		// The suggested sleep of 50 ms leaves its cancellation 25 ms of margin, which a loaded
		// 2-core machine under -race can miss (the call is then answered first and counted as
		// a failure); one second keeps the same command and takes the timing out of the test.
		"mixed":      {"-c", "2", "-d", "0.2", "-warmup", "0", "-window", "0.1", "--slow-args", `{"duration":1,"steps":5}`},
		"cancel-cpu": {"--pid", strconv.Itoa(os.Getpid()), "-n", "1", "-idle", "0.1", "-load-wait", "0.2", "-window", "0.1"},
	}
	ran := 0
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "mcpbench ") {
			continue
		}
		words, err := splitCommand(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if strings.Contains(line, "delete_everything") {
			t.Errorf("a command calls the tool no benchmark should call: %s", line)
		}
		args := append(append(words[1:], "--json", "-q"), short[words[1]]...)
		fresh()
		out, _, err := runCmd(t, "", args...)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		r := decode(t, out)
		if r.Scenario != words[1] || len(r.Metrics) == 0 || r.Metrics["errors"] != 0 {
			t.Errorf("%s: result %+v", line, r)
		}
		ran++
	}
	if ran != 4 {
		t.Errorf("ran %d commands, want one per scenario:\n%s", ran, out)
	}

	// A server with the demonstration tools needs no tool flags.
	demo := fakemcp.New(fakemcp.Options{Session: "s"})
	ds := httptest.NewServer(demo.Handler())
	defer func() { demo.Close(); ds.Close() }()
	out, _, err = runCmd(t, "", "tools", "--http", ds.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mcpbench throughput --http " + ds.URL + "\n", "mcpbench cancel --http " + ds.URL + "\n",
		"mcpbench mixed --http " + ds.URL + "\n", "mcpbench cancel-cpu --http " + ds.URL + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("demonstration tools: output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCmd(t, "", "tools", "--http", ds.URL, "--json")
	var list []struct {
		Name string
		Args json.RawMessage
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 4 || list[0].Name != "echo" || compact(list[0].Args) != `{"text":"xxxxx"}` {
		t.Errorf("tools --json = %s, %v", out, err)
	}
}

// TestCancelCPU measures a server process that stops its cancelled
// CPU-bound work and one that does not.
func TestCancelCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("spins two server processes for about 3 s each")
	}
	tests := []struct {
		name    string
		opts    fakemcp.Options
		flags   []string
		stopped float64
	}{
		{"stops", fakemcp.Options{}, nil, 1},
		{"keeps spinning", fakemcp.Options{Foreign: true, KeepSpinning: true},
			[]string{"--tool", "reverse", "--args", `{"message":"x"}`, "--cpu-tool", "burn_cpu", "--cpu-args", `{"millis":6000}`}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := fakeProcess(t, tt.opts)
			// Two calls load both cores of a small machine; the windows
			// are long enough for the 10 ms clock ticks of /proc. On a
			// machine so busy that the calls barely run, mcpbench gives no
			// verdict (a note says so), and the measurement is taken again,
			// three times at most.
			args := append([]string{"cancel-cpu", "--stdio", cmd, "--json", "-q", "-n", "2", "-idle", "0.5", "-load-wait", "1", "-window", "1"}, tt.flags...)
			for attempt := 1; ; attempt++ {
				out, _, err := runCmd(t, "", args...)
				if err != nil {
					t.Fatal(err)
				}
				r := decode(t, out)
				m := r.Metrics
				if m["cancels_sent"] != 2 {
					t.Fatalf("metrics %v: want both calls cancelled", m)
				}
				stopped, judged := m["work_stopped"]
				if !judged && attempt < 3 {
					t.Logf("attempt %d: no verdict (%q)", attempt, r.Notes)
					continue
				}
				if !judged || stopped != tt.stopped {
					t.Errorf("work_stopped = %v (judged %v), want %v; metrics %v, notes %q", stopped, judged, tt.stopped, m, r.Notes)
				}
				break
			}
		})
	}
}

func compact(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}
