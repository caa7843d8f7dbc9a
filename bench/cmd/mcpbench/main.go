// Command mcpbench drives any MCP server, over stdio or Streamable HTTP, with
// load and cancellation scenarios, and turns many runs into one
// side-by-side table.
//
//	mcpbench throughput --stdio "./bin/server --transport stdio" -c 16 -d 10
//	mcpbench cancel --http http://127.0.0.1:8080/mcp --pid 1234 -n 10000
//	mcpbench mixed --stdio "./server" --json >> results.jsonl
//	mcpbench report --baseline toolgrain results.jsonl
//
// Run "mcpbench help" for every scenario and flag. It speaks raw JSON-RPC
// with the standard library only, so it favours no MCP framework.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		os.Exit(2)
	case errors.Is(err, errNotApplicable):
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(3)
	default:
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

// errUsage means the usage was already printed.
var errUsage = errors.New("usage")

// errNotApplicable means the target does not serve the era asked for; the
// result saying so was printed, and mcpbench exits with status 3.
var errNotApplicable = errors.New("not applicable")

const usage = `mcpbench: load and cancellation benchmarks for any MCP server.

Usage:
  mcpbench SCENARIO (--stdio "CMD ARGS" | --http URL) [flags]
  mcpbench tools (--stdio "CMD ARGS" | --http URL)
  mcpbench report [--baseline NAME] [--json] [FILE ...]

Scenarios:
  throughput  -c concurrent echo calls for -d after -warmup:
              calls/s, p50/p90/p99/max latency, errors, server CPU per call
  cancel      -n long sleep calls in flight, then notifications/cancelled for
              each: late responses, time until a follow-up echo is answered,
              server memory and threads before, loaded, after and settled
  mixed       echo load where -cancel-frac of the calls are short sleep calls
              cancelled mid-flight: completed calls/s, late responses, errors
  cancel-cpu  -n CPU-bound calls in flight, then all cancelled: the server's
              CPU after the cancellation against its idle CPU (did the work
              stop?)
  errors      a battery of bad inputs (malformed JSON, batch, unknown method
              and tool, bad arguments, odd ids, an oversized message, the
              fail tool's modes) and the error path under load (fail calls)
  clients     -n clients of one --kind (session, get, listen, mixed) held open
              over HTTP: server memory per client, time to open, idle CPU,
              and with --trigger the fan-out of a list change

By default the scenarios call the demonstration tools echo {text}, sleep {ms},
spin {ms} and, for errors, fail {mode}. Any other server is measured with its
own tools: --tool NAME --args JSON names the quick call, --slow-tool and
--slow-args the long call that is cancelled, --cpu-tool and --cpu-args the
CPU-bound call; "mcpbench tools" lists a server's tools and prints a command
line for each scenario. Results print as a table, or with --json as one JSON
object per run; report reads such objects (files or stdin) and prints medians
side by side. Run "mcpbench SCENARIO -h" for a scenario's flags.

--era modern drives the server in MCP 2026-07-28: no initialize, the envelope
in every request's _meta; over HTTP the modern headers, no session, and
cancellation by closing the response stream. A server that does not serve
that era gets a result marked not applicable, and mcpbench exits with 3.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "report":
		return runReport(args[1:], stdin, stdout, stderr)
	case "tools":
		return runTools(ctx, args[1:], stdout, stderr)
	}
	sc, ok := scenarios[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mcpbench: unknown command %q\n\n%s", args[0], usage)
		return errUsage
	}
	return runScenario(ctx, sc, args[1:], stdout, stderr)
}
