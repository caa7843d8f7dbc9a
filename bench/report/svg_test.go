package report_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/bench/report"
)

var update = flag.Bool("update", false, "rewrite the golden SVG files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update to accept):\n%s", name, got)
	}
}

// wellFormed parses an SVG as XML and counts its elements by name.
func wellFormed(t *testing.T, svg []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	count := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return count
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			count[se.Name.Local]++
		}
	}
}

func TestBarChartGolden(t *testing.T) {
	nan := math.NaN()
	c := &report.BarChart{
		Title: "Echo <latency> & more", Subtitle: "a test", YLabel: "ms",
		Categories: []string{"stdio, legacy\n16 concurrent", "http, modern"},
		Series:     []string{"ours", "theirs"},
		Values:     [][]float64{{1.5, 3}, {2, nan}},
		Whiskers:   [][]float64{{4, 9.25}, {7, nan}},
		Notes:      [][]string{{"", ""}, {"", "n/a"}},
		Limits:     []float64{5, nan},
		LimitLabel: "goal",
	}
	svg := c.SVG()
	count := wellFormed(t, svg)
	// 3 bars plus the background; 3 whiskers of 2 lines, 1 goal line, 6
	// grid lines and the x axis.
	if count["rect"] != 4+2 || count["line"] != 3*2+1+6+1+1 {
		t.Errorf("elements = %v", count)
	}
	if !bytes.Contains(svg, []byte("Echo &lt;latency&gt; &amp; more")) || !bytes.Contains(svg, []byte(">n/a<")) {
		t.Error("title not escaped, or the n/a note missing")
	}
	golden(t, "bar.golden.svg", svg)
}

func TestBarChartLogGolden(t *testing.T) {
	c := &report.BarChart{
		Title: "CPU", YLabel: "µs", LogY: true,
		Categories: []string{"stdio", "http"}, Series: []string{"ours", "theirs"},
		Values: [][]float64{{35, 320}, {0, 1200}}, Limits: []float64{20, 45}, LimitLabel: "goal",
	}
	svg := c.SVG()
	// The zero is not drawn on a log scale: 3 bars and the background.
	if count := wellFormed(t, svg); count["rect"] != 4+2 {
		t.Errorf("elements = %v", count)
	}
	if !bytes.Contains(svg, []byte(">10,000<")) || !bytes.Contains(svg, []byte(">10<")) {
		t.Errorf("want decades from 10 to 10,000 on the axis:\n%s", svg)
	}
	golden(t, "bar_log.golden.svg", svg)
}

func TestLineChartGolden(t *testing.T) {
	c := &report.LineChart{
		Title: "Memory", YLabel: "MiB", X: []string{"before", "loaded", "after"},
		Series: []string{"ours", "theirs"}, LogY: true,
		Panels: []report.Panel{
			{Title: "stdio", Values: [][]float64{{20, 300, 40}, {10, 2000, 900}}},
			{Title: "http", Values: [][]float64{{21, 350, 45}, {math.NaN(), math.NaN(), math.NaN()}}, Notes: []string{"", "n/a"}},
		},
	}
	svg := c.SVG()
	if count := wellFormed(t, svg); count["polyline"] != 3 || count["circle"] != 9 {
		t.Errorf("elements = %v", count)
	}
	golden(t, "line.golden.svg", svg)
}

func TestCharts(t *testing.T) {
	charts := report.Charts(report.Summarize(fixture(), "toolgrain"), report.Names{})
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
		wellFormed(t, c.SVG)
	}
	if got := strings.Join(names, " "); got != "throughput.svg latency.svg cpu.svg alloc.svg rss_cancel.svg" {
		t.Errorf("charts = %s", got)
	}
	// The fixture's mcp-go does not serve the modern era: said, not drawn.
	if !bytes.Contains(charts[0].SVG, []byte(">n/a<")) || !bytes.Contains(charts[0].SVG, []byte("toolgrain, stdio, modern 16 concurrent: 9,000 calls/s")) {
		t.Errorf("throughput chart:\n%s", charts[0].SVG)
	}
	// Without cancel runs or allocation figures, those charts are left out.
	var rs = fixture()[:6]
	for i := range rs {
		delete(rs[i].Metrics, "server_alloc_bytes_per_call")
	}
	for _, c := range report.Charts(report.Summarize(rs, "toolgrain"), report.Names{}) {
		if c.Name == "alloc.svg" || c.Name == "rss_cancel.svg" {
			t.Errorf("%s drawn without data", c.Name)
		}
	}
}
