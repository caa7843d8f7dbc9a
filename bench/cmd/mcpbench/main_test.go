package main

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain/bench/internal/fakemcp"
)

// fakeEnv, when set, makes the test binary a fake MCP server over its
// stdin and stdout, with the fakemcp.Options it holds as JSON: a server
// process of its own, whose CPU the cancel-cpu scenario can measure apart
// from the tests'.
const fakeEnv = "MCPBENCH_TEST_FAKE"

func TestMain(m *testing.M) {
	if opts := os.Getenv(fakeEnv); opts != "" {
		os.Exit(serveFake(opts))
	}
	goleak.VerifyTestMain(m)
}

func serveFake(opts string) int {
	var o fakemcp.Options
	if err := json.Unmarshal([]byte(opts), &o); err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 2
	}
	srv := fakemcp.New(o)
	err := srv.Serve(os.Stdin, os.Stdout)
	// The process ends here, spinning handlers and all, as a server that
	// exits at the end of its input does.
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 1
	}
	return 0
}
