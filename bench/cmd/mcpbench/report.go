package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/toolgrain/toolgrain/bench/report"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

func runReport(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseline := fs.String("baseline", "", "target the ratios are computed against (default: the first target in the input)")
	asJSON := fs.Bool("json", false, "print the medians as JSON rows instead of tables")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: mcpbench report [--baseline NAME] [--json] [FILE ...]

Reads results written by "mcpbench SCENARIO --json" from the files (or stdin,
or "-"), and prints, per scenario and transport, the median of each metric
for each target side by side, with the ratio baseline ÷ target. The "better"
column says which direction is good for each metric. For the errors scenario
it also prints each probe's most frequent outcome per target.

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
	sum := report.Summarize(results, *baseline)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report.ToJSON(sum))
	}
	return report.Write(stdout, sum)
}
