package scenario

import (
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
)

func TestUntilStalled(t *testing.T) {
	// Nobody reads what the client writes: flushing can never finish.
	pr, pw := io.Pipe()
	fromR, fromW := io.Pipe()
	c := client.Connect(fromR, pw)
	defer func() {
		c.Close()
		pr.Close()
		fromW.Close()
	}()
	if _, err := c.Start("ping", nil); err != nil {
		t.Fatal(err)
	}
	err := untilStalled(context.Background(), c, 20*time.Millisecond, c.Flush)
	if !errors.Is(err, errStalled) {
		t.Errorf("untilStalled = %v, want errStalled", err)
	}
	// A phase that finishes is not touched.
	if err := untilStalled(context.Background(), c, time.Hour, func(context.Context) error { return nil }); err != nil {
		t.Errorf("untilStalled of a finished phase = %v", err)
	}
}

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i))
	}
	tests := []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {90, 90}, {99, 99}, {100, 100}, {0, 1}}
	for _, tt := range tests {
		if got := percentile(lat, tt.p); got != tt.want {
			t.Errorf("percentile(1..100, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile(lat[:1], 99); got != 1 {
		t.Errorf("percentile of one sample = %v", got)
	}
}

func TestCompareID(t *testing.T) {
	tests := []struct {
		got, want string
		desc      string
		ok        bool
	}{
		{"7", "7", "exact", true},
		{"null", "null", "null", true},
		{"null", "7", "null", false},
		{"1.2345678901234568e+29", hugeID, "changed: 1.2345678901234568e+29", false},
		{`"7"`, "7", `changed: "7"`, false},
	}
	for _, tt := range tests {
		desc, ok := compareID([]byte(tt.got), tt.want)
		if desc != tt.desc || ok != tt.ok {
			t.Errorf("compareID(%s, %s) = %q, %v; want %q, %v", tt.got, tt.want, desc, ok, tt.desc, tt.ok)
		}
	}
	if desc, ok := compareID(nil, "7"); desc != "absent" || ok {
		t.Errorf("compareID(nil) = %q, %v", desc, ok)
	}
}

// TestREADMEDocumentsEveryMetric keeps bench/README.md and [Metrics] in step.
func TestREADMEDocumentsEveryMetric(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Metrics {
		if !regexp.MustCompile("`" + m.Name + "`").Match(readme) {
			t.Errorf("bench/README.md does not mention the metric `%s`", m.Name)
		}
	}
}
