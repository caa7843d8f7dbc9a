package main

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryClientDeclarationLimit: --max-client-declaration bounds what an initialize
// declares; over it the initialize is refused with -32602 naming the limit.
func TestBinaryClientDeclarationLimit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cmd := exec.Command(buildServer(t), "--max-client-declaration", "100", "--log-level", "error")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	defer stdin.Close()
	caps := `{"experimental":{"x":"` + strings.Repeat("y", 100) + `"}}`
	if _, err := stdin.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Invalid params: capabilities and clientInfo take 127 bytes, more than the limit of 100","data":{"limit":100}}}` + "\n"
	if line != want {
		t.Errorf("initialize over the limit:\n got: %s\nwant: %s", line, want)
	}
}
