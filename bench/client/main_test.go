package client_test

import (
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain/bench/internal/fakemcp"
)

// childEnv makes the test binary act as a stdio MCP server, for the tests
// of DialStdio: "serve" serves until stdin ends; "stubborn" also ignores
// stdin's end and SIGTERM, so that only SIGKILL stops it.
const childEnv = "MCPBENCH_FAKE_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		runChild(mode)
		return
	}
	goleak.VerifyTestMain(m)
}

func runChild(mode string) {
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	s := fakemcp.New(fakemcp.Options{})
	s.Serve(os.Stdin, os.Stdout)
	if mode == "stubborn" {
		select {}
	}
	s.Close()
	os.Exit(0)
}
