package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolgrain/toolgrain/bench/report"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

func runReport(args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseline := fs.String("baseline", "", "target the ratios are computed against (default: the first target in the input)")
	asJSON := fs.Bool("json", false, "print the medians as JSON rows instead of tables")
	var names report.Names
	fs.StringVar(&names.Versus, "versus", "mcp-go", "the SDK the targets compare with")
	fs.StringVar(&names.Floor, "floor", "stdlib", "the standard-library floor the CPU target is relative to")
	md := fs.String("md", "", "also write the targets and the era comparison as Markdown tables to this `file`")
	svgDir := fs.String("svg", "", "also draw the report as SVG charts in this `directory` (throughput, latency, CPU and allocation per call, memory over the cancel burst)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: mcpbench report [--baseline NAME] [--json] [--md FILE] [--svg DIR] [FILE ...]

Reads results written by "mcpbench SCENARIO --json" from the files (or stdin,
or "-"), and prints, per scenario, transport, era (and concurrency for
throughput), the median of each metric for each target side by side, with
the ratio baseline ÷ target. The "better" column says which direction is
good for each metric. For the errors scenario it also prints each probe's
most frequent outcome per target. Targets that do not serve an era show
n/a. Then it compares each target's legacy and modern echo, tabulates every
target's cancellation behaviour (late responses and progress per cancel burst,
the follow-up echo, memory, whether cancelled CPU-bound work stopped), and judges the
performance targets for the baseline (as ours) against --versus
and --floor, marking each met or missed. With --svg it also draws charts.

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
	var results []scenario.Result
	read := func(name string, r io.Reader) error {
		rs, err := report.Read(r)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		results = append(results, rs...)
		return nil
	}
	files := fs.Args()
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, f := range files {
		if f == "-" {
			if err := read("stdin", stdin); err != nil {
				return err
			}
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		err = read(f, fh)
		fh.Close()
		if err != nil {
			return err
		}
	}
	if len(results) == 0 {
		return errors.New("report: no results in the input")
	}
	clients, results := report.SplitClients(results)
	if len(results) == 0 {
		return clientsReport(clients, *baseline, *asJSON, *md, false, *svgDir, stdout)
	}
	defer func() {
		if err == nil {
			err = clientsReport(clients, *baseline, *asJSON, *md, true, *svgDir, stdout)
		}
	}()
	sum := report.Summarize(results, *baseline)
	verdicts, eras, cancels := report.Evaluate(sum, names), report.Eras(sum), report.Cancellation(sum)
	if *md != "" {
		if err := writeMarkdown(*md, verdicts, eras, cancels); err != nil {
			return err
		}
	}
	if *svgDir != "" {
		if err := os.MkdirAll(*svgDir, 0o755); err != nil {
			return err
		}
		for _, c := range report.Charts(sum, names) {
			if err := os.WriteFile(filepath.Join(*svgDir, c.Name), c.SVG, 0o644); err != nil {
				return err
			}
		}
	}
	if *asJSON {
		j := report.ToJSON(sum)
		j.Targets, j.Eras, j.Cancellation = verdicts, eras, cancels
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(j)
	}
	if err := report.Write(stdout, sum); err != nil {
		return err
	}
	if len(eras) > 0 {
		if err := report.WriteEras(stdout, eras); err != nil {
			return err
		}
	}
	if len(cancels) > 0 {
		if err := report.WriteCancellation(stdout, cancels); err != nil {
			return err
		}
	}
	if len(verdicts) > 0 {
		return report.WriteTargets(stdout, verdicts)
	}
	return nil
}

func writeMarkdown(name string, verdicts []report.Verdict, eras []report.EraRow, cancels []report.CancelRow) error {
	var b bytes.Buffer
	if len(cancels) > 0 {
		b.WriteString("## Cancellation: every target\n\n")
		if err := report.WriteCancellationMarkdown(&b, cancels); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	b.WriteString("## Modern vs legacy: echo (legacy / modern)\n\n")
	if err := report.WriteErasMarkdown(&b, eras); err != nil {
		return err
	}
	b.WriteString("\n## Performance targets\n\n")
	if err := report.WriteTargetsMarkdown(&b, verdicts); err != nil {
		return err
	}
	return os.WriteFile(name, b.Bytes(), 0o644)
}
