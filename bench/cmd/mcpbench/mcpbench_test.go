package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/bench/internal/fakemcp"
	"github.com/toolgrain/toolgrain/bench/report"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"./server", []string{"./server"}},
		{"  ./server   --transport stdio ", []string{"./server", "--transport", "stdio"}},
		{`node "my server.js" --name 'a b'`, []string{"node", "my server.js", "--name", "a b"}},
		{`a\ b c`, []string{"a b", "c"}},
		{`x "" y`, []string{"x", "", "y"}},
		{`x 'it''s'`, []string{"x", "its"}},
		{`x "say \"hi\""`, []string{"x", `say "hi"`}},
	}
	for _, tt := range tests {
		got, err := splitCommand(tt.give)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("splitCommand(%q) = %q, %v; want %q", tt.give, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "   ", `x "open`, `x \`} {
		if got, err := splitCommand(bad); err == nil {
			t.Errorf("splitCommand(%q) = %q, want an error", bad, got)
		}
	}
}

func TestSecondsFlag(t *testing.T) {
	tests := []struct {
		give string
		want time.Duration
	}{
		{"5", 5 * time.Second},
		{"0.25", 250 * time.Millisecond},
		{"500ms", 500 * time.Millisecond},
		{"1m", time.Minute},
	}
	for _, tt := range tests {
		var d time.Duration
		if err := (seconds{&d}).Set(tt.give); err != nil || d != tt.want {
			t.Errorf("Set(%q) = %v, %v; want %v", tt.give, d, err, tt.want)
		}
	}
	var d time.Duration
	if err := (seconds{&d}).Set("soon"); err == nil {
		t.Error(`Set("soon") succeeded`)
	}
}

func runCmd(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no command", nil},
		{"unknown command", []string{"bogus"}},
		{"no target", []string{"throughput"}},
		{"two targets", []string{"throughput", "--stdio", "x", "--http", "http://h/mcp"}},
		{"bad flag", []string{"cancel", "--nope"}},
		{"stray argument", []string{"mixed", "--stdio", "x", "extra"}},
		{"unknown era", []string{"throughput", "--stdio", "x", "--era", "2026"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := runCmd(t, "", tt.args...)
			if !errors.Is(err, errUsage) || stderr == "" {
				t.Errorf("err = %v, stderr %q; want errUsage and a message", err, stderr)
			}
		})
	}
	out, _, err := runCmd(t, "", "help")
	if err != nil || !strings.Contains(out, "throughput") || !strings.Contains(out, "report") {
		t.Errorf("help = %q, %v", out, err)
	}
	_, stderr, err := runCmd(t, "", "cancel", "-h")
	if err != nil || !strings.Contains(stderr, "-window") || !strings.Contains(stderr, "--stdio") && !strings.Contains(stderr, "-stdio") {
		t.Errorf("cancel -h = %q, %v; want the flags documented", stderr, err)
	}
}

func TestBadHTTPURL(t *testing.T) {
	if _, _, err := runCmd(t, "", "throughput", "--http", "localhost:8080"); err == nil || errors.Is(err, errUsage) {
		t.Errorf("err = %v, want a clear error about the URL", err)
	}
}

// TestThroughputThenReport runs the throughput scenario twice against a
// fake HTTP server, under two names, and reports the JSON results.
func TestThroughputThenReport(t *testing.T) {
	srv := fakemcp.New(fakemcp.Options{Session: "s"})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()

	var all bytes.Buffer
	for _, name := range []string{"base", "other"} {
		out, _, err := runCmd(t, "", "throughput", "--http", hs.URL, "--name", name, "--json", "-q",
			"-c", "2", "-d", "0.2", "-warmup", "0")
		if err != nil {
			t.Fatal(err)
		}
		var r scenario.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("--json output %q: %v", out, err)
		}
		if r.Target != name || r.Transport != "http" || r.Scenario != "throughput" || r.Metrics["calls_total"] <= 0 ||
			r.Params["concurrency"] != 2.0 {
			t.Errorf("result = %+v", r)
		}
		all.WriteString(out)
	}
	out, _, err := runCmd(t, all.String(), "report", "--baseline", "base")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== throughput over http, legacy era, 2 concurrent ==", "base (n=1)", "other (n=1)", "base÷other", "calls_per_sec"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	if _, _, err := runCmd(t, all.String(), "report", "--svg", dir, "--md", filepath.Join(dir, "r.md")); err != nil {
		t.Fatal(err)
	}
	// No --pid: no CPU figures, so no cpu.svg.
	for _, f := range []string{"throughput.svg", "latency.svg", "r.md"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("--svg/--md: %s: %v", f, err)
		}
	}
	out, _, err = runCmd(t, all.String(), "report", "--json", "-")
	var j report.JSON
	if err != nil || json.Unmarshal([]byte(out), &j) != nil || j.Baseline != "base" || len(j.Rows) == 0 {
		t.Errorf("report --json = %q, %v", out, err)
	}
}

// TestModernEra runs a scenario in the modern era against a fake that serves
// it and one that does not: the second is a result marked not applicable,
// and a distinct error, not a failure.
func TestModernEra(t *testing.T) {
	srv := fakemcp.New(fakemcp.Options{})
	hs := httptest.NewServer(srv.Handler())
	legacy := fakemcp.New(fakemcp.Options{LegacyOnly: true, Session: "s"})
	ls := httptest.NewServer(legacy.Handler())
	defer func() { srv.Close(); hs.Close(); legacy.Close(); ls.Close() }()

	out, _, err := runCmd(t, "", "throughput", "--http", hs.URL, "--era", "modern", "--json", "-q", "-c", "2", "-d", "0.1", "-warmup", "0")
	var r scenario.Result
	if err != nil || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("modern run: %q, %v", out, err)
	}
	if r.Era != "modern" || r.Protocol != "2026-07-28" || r.NotApplicable != "" || r.Metrics["calls_total"] <= 0 {
		t.Errorf("modern result = %+v", r)
	}
	for _, req := range srv.Received() {
		if req.Method == "initialize" || req.Header.Get("MCP-Protocol-Version") != "2026-07-28" {
			t.Errorf("a modern run sent %s with headers %v", req.Method, req.Header)
		}
	}

	out, _, err = runCmd(t, "", "throughput", "--http", ls.URL, "--era", "modern", "--json", "-q", "-d", "0.1")
	if !errors.Is(err, errNotApplicable) {
		t.Errorf("err = %v, want errNotApplicable", err)
	}
	r = scenario.Result{}
	if json.Unmarshal([]byte(out), &r) != nil || r.NotApplicable == "" || r.Era != "modern" || len(r.Metrics) != 0 {
		t.Errorf("not-applicable result = %q", out)
	}
	out, _, _ = runCmd(t, "", "cancel", "--http", ls.URL, "--era", "modern", "-q")
	if !strings.Contains(out, "not applicable: ") {
		t.Errorf("table = %q, want the reason it is not applicable", out)
	}
}

func TestTableOutput(t *testing.T) {
	srv := fakemcp.New(fakemcp.Options{})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	out, _, err := runCmd(t, "", "errors", "--http", hs.URL, "-q", "-c", "2", "-d", "0.1", "-warmup", "0",
		"-reply-wait", "0.2", "-oversize", "1000")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"errors: 127.0.0.1:", "fail_calls_per_sec", "probes:", "- malformed JSON:", "expected:"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestReportErrors(t *testing.T) {
	if _, _, err := runCmd(t, "", "report"); err == nil {
		t.Error("report of nothing succeeded")
	}
	if _, _, err := runCmd(t, "", "report", "/nonexistent/results.json"); err == nil {
		t.Error("report of a missing file succeeded")
	}
}
