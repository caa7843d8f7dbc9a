// Command proxy is the least a stdio proxy can do: it starts the one server of a --mount file
// (the mcpServers JSON the gateway reads) and copies bytes both ways, its standard input to the
// server's and the server's output to its own, reading nothing. bench/run.sh measures it, as
// px-TARGET, beside the gateway in front of the same server (PROXY=yes): its CPU per call is
// what any process that stands between a client and a stdio server pays at that load, for two
// more reads, two more writes and the wake-ups they take, before it parses a byte.
//
// It ends when the server's output ends (it closes the server's input at the end of its own)
// and exits with the server's status.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	code, err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
	}
	os.Exit(code)
}

// server is the part of an mcpServers entry the proxy uses.
type server struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
}

// run proxies stdin and stdout to the server of the mount file and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mount := fs.String("mount", "", "the mcpServers JSON `FILE` naming the one server to start")
	transport := fs.String("transport", "stdio", "stdio, the only transport")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if *transport != "stdio" {
		return 2, fmt.Errorf("--transport %s: stdio only", *transport)
	}
	srv, err := readMount(*mount)
	if err != nil {
		return 2, err
	}
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Dir = srv.Cwd
	if len(srv.Env) > 0 {
		cmd.Env = os.Environ()
		for k, v := range srv.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1, err
	}
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	// Owned by run: it ends at the end of the proxy's input, or when the server stops reading
	// (a failed write); the server's exit follows either.
	go func() {
		_, _ = io.Copy(in, stdin)
		_ = in.Close()
	}()
	_, copyErr := io.Copy(stdout, out)
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), nil
	case err != nil:
		return 1, err
	case copyErr != nil:
		return 1, copyErr
	}
	return 0, nil
}

// readMount reads the one server of an mcpServers file.
func readMount(path string) (server, error) {
	if path == "" {
		return server{}, errors.New("--mount FILE is required")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return server{}, err
	}
	var f struct {
		MCPServers map[string]server `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return server{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.MCPServers) != 1 {
		return server{}, fmt.Errorf("%s: want one server in mcpServers, got %d", path, len(f.MCPServers))
	}
	var key string
	var s server
	for key, s = range f.MCPServers { // the only one
	}
	if s.Command == "" {
		return server{}, fmt.Errorf("%s: mcpServers.%s: a command is required (stdio only)", path, key)
	}
	return s, nil
}
