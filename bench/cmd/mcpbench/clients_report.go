package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/toolgrain/toolgrain/bench/report"
	"github.com/toolgrain/toolgrain/bench/scenario"
)

// clientsReport prints the clients scenario's table and goals (after the other scenarios'
// report, if any), writes them to the Markdown file md (after what it holds, with appendMD),
// and draws their charts in svgDir.
func clientsReport(results []scenario.Result, baseline string, asJSON bool, md string, appendMD bool, svgDir string, stdout io.Writer) error {
	if len(results) == 0 {
		return nil
	}
	rows := report.SummarizeClients(results, baseline)
	ours := baseline
	if ours == "" {
		ours = rows[0].Target
	}
	verdicts := report.EvaluateClients(rows, ours)
	if md != "" {
		var b bytes.Buffer
		b.WriteString("\n## Connected clients\n\n")
		if err := report.WriteClientsMarkdown(&b, rows, verdicts); err != nil {
			return err
		}
		flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if appendMD {
			flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(md, flags, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(b.Bytes())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if svgDir != "" {
		if err := os.MkdirAll(svgDir, 0o755); err != nil {
			return err
		}
		var hosts []scenario.Host
		for _, r := range results {
			hosts = append(hosts, r.Host)
		}
		for _, c := range report.ClientsCharts(rows, hosts) {
			if err := os.WriteFile(filepath.Join(svgDir, c.Name), c.SVG, 0o644); err != nil {
				return err
			}
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Clients []*report.ClientsRow `json:"clients"`
			Goals   []report.Verdict     `json:"clients_goals"`
		}{rows, verdicts})
	}
	return report.WriteClients(stdout, rows, verdicts)
}
