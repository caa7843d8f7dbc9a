// Command stdlib serves the demonstration tool set (echo, greet, sleep, spin, fail)
// with the Go standard library alone: no MCP SDK, no schema validation, no
// actors. Newline-delimited JSON-RPC over stdio, and a plain net/http handler
// for Streamable HTTP. It is the floor the other servers are measured
// against: what a request costs when a server does little more than decode
// it, call the tool and encode the answer.
//
// It is still a correct MCP server for what mcpbench sends, in both eras:
//
//   - legacy (2025-11-25): initialize (protocol version negotiated), ping,
//     tools/list, tools/call; over HTTP a session minted at initialize and
//     required afterwards, ended by DELETE;
//   - modern (2026-07-28): the envelope in params._meta, server/discover,
//     results with resultType and the server's identity; over HTTP no
//     session, and Mcp-Method and Mcp-Name checked against the body;
//   - cancellation: notifications/cancelled by id (stdio, legacy HTTP), or a
//     closed response stream (HTTP); a cancelled call is never answered;
//   - progress: sleep sends notifications/progress once a second when the
//     request has a progressToken (over HTTP on an SSE response).
//
// What it does not do: validate arguments against schemas (the tools check
// their arguments in plain code), validate output (fail with mode bad-output
// returns its invalid output as it is, marker included), resumable streams,
// server-to-client requests, resources, prompts, logging.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/toolgrain/toolgrain/bench/peers/internal/demo"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "stdlib:", err)
		os.Exit(1)
	}
}

// run serves until the end of input (stdio), or until SIGINT or SIGTERM
// (HTTP). Over stdio the end of input is the shutdown signal, as the spec
// has it; a signal ends the process at once.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var opts demo.Options
	fs := flag.NewFlagSet("stdlib", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts.Register(fs)
	grace := fs.Duration("shutdown-grace", 2*time.Second, "stdio: at end of input, how long calls in flight get to finish before they are cancelled")
	if err := opts.Parse(fs, args); err != nil {
		return err
	}
	stopPprof, err := demo.StartPprof(opts.Pprof, stderr)
	if err != nil {
		return err
	}
	defer stopPprof()
	s := &server{}
	if opts.Transport == "stdio" {
		return s.serveStdio(stdin, stdout, *grace)
	}
	ctx, stop := demo.SignalContext()
	defer stop()
	h := newHTTPHandler(s)
	defer h.close()
	return demo.ServeHTTP(ctx, opts.Addr, h, stderr)
}
