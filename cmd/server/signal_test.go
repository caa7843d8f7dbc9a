package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinaryShutdown stops the real binary the ways an operator or a client does, each with
// calls in flight: SIGTERM and SIGINT must silence those calls (no answer), flush the
// diagnostics and exit 0; so must stdin EOF once --end-of-input-grace has passed with the calls
// still running (what ends in time is answered: see TestBinaryEndOfInput); so must SIGTERM
// while the client reads nothing (the server must not wait forever for stdout). A stdout that
// the client closes ends the server with exit 1.
func TestBinaryShutdown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	stops := []struct {
		name string
		args []string
		stop func(cmd *exec.Cmd, stdin io.Closer) error
	}{
		{"SIGTERM", nil, func(cmd *exec.Cmd, _ io.Closer) error { return cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGINT", nil, func(cmd *exec.Cmd, _ io.Closer) error { return cmd.Process.Signal(os.Interrupt) }},
		{"stdin EOF", []string{"--end-of-input-grace", "300ms"}, func(_ *exec.Cmd, stdin io.Closer) error { return stdin.Close() }},
	}
	for _, tt := range stops {
		t.Run(tt.name, func(t *testing.T) {
			s := startBinary(t, bin, tt.args...)
			s.exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			if got := s.exchange(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","arguments":{"mode":"error"}}}`); !strings.Contains(got, "Tool execution failed") {
				t.Fatalf("fail: %s", got)
			}
			for id := 2; id <= 6; id++ {
				s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}}}`, id))
			}
			if got := s.exchange(`{"jsonrpc":"2.0","id":7,"method":"ping"}`); got != `{"jsonrpc":"2.0","id":7,"result":{}}` {
				t.Fatalf("ping: %s", got)
			}
			if err := tt.stop(s.cmd, s.stdin); err != nil {
				t.Fatal(err)
			}
			rest, err := io.ReadAll(s.stdout) // until the server closes stdout
			if err != nil || len(rest) != 0 {
				t.Errorf("after the stop the server sent %q (%v); the calls in flight must get no answer", rest, err)
			}
			s.wait(0)
			if lines := s.diagnostics(); len(lines) != 1 || !strings.Contains(lines[0], `"request_id":1`) {
				t.Errorf("diagnostics file: %q, want the one report of request 1", lines)
			}
			if !strings.Contains(s.stderr.String(), `"msg":"stopped"`) {
				t.Errorf("no clean stop in the log: %s", s.stderr.String())
			}
		})
	}
	t.Run("SIGTERM with a client that reads nothing", func(t *testing.T) {
		s := startBinary(t, bin, "--output-grace", "200ms")
		s.exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		text := strings.Repeat("x", 32<<10)
		for id := 1; id <= 16; id++ { // 512 KiB of answers: far more than a pipe holds
			s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, id, text))
		}
		s.send(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		s.wait(0)
		_, _ = io.Copy(io.Discard, s.stdout)
		if lines := s.diagnostics(); len(lines) != 1 || !strings.Contains(lines[0], "stdio: output stalled") || strings.Contains(lines[0], `"tool"`) {
			t.Errorf("diagnostics file: %q, want one report of the stalled output with no details", lines)
		}
	})
	t.Run("stdout closed by the client", func(t *testing.T) { testBrokenStdout(t, bin) })
}

// TestShutdownGraceFlag: --shutdown-grace, the one flag the three graces had, still sets them
// all; a grace given after it is set alone.
func TestShutdownGraceFlag(t *testing.T) {
	for _, tt := range []struct {
		args                   []string
		handler, input, output time.Duration
	}{
		{nil, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{[]string{"--shutdown-grace", "2s"}, 2 * time.Second, 2 * time.Second, 2 * time.Second},
		{[]string{"--shutdown-grace", "2s", "--output-grace", "3s"}, 2 * time.Second, 2 * time.Second, 3 * time.Second},
		{[]string{"--handler-grace", "1s", "--end-of-input-grace", "1h", "--output-grace", "3s"}, time.Second, time.Hour, 3 * time.Second},
	} {
		var o options
		if err := newFlagSet(&o, io.Discard).Parse(tt.args); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if o.handlerGrace != tt.handler || o.endOfInputGrace != tt.input || o.outputGrace != tt.output {
			t.Errorf("%q: handler %s, end of input %s, output %s; want %s, %s, %s", tt.args,
				o.handlerGrace, o.endOfInputGrace, o.outputGrace, tt.handler, tt.input, tt.output)
		}
	}
	var o options
	if err := newFlagSet(&o, io.Discard).Parse([]string{"--shutdown-grace", "soon"}); err == nil {
		t.Error("--shutdown-grace soon: no error")
	}
}

// TestBinaryEndOfInput: a client that closes stdin still gets the answers to the calls it sent,
// progress included, and the server then exits 0, without waiting out --end-of-input-grace (an hour
// here). The official TypeScript client probes a server with server/discover, closes stdin and
// sends SIGTERM: an answered probe leaves nothing in flight, and the server exits at once.
func TestBinaryEndOfInput(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	t.Run("calls in flight", func(t *testing.T) {
		s := startBinary(t, bin, "--end-of-input-grace", "1h")
		s.exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":200}}}`)
		s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":300},"_meta":{"progressToken":"p"}}}`)
		s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail","arguments":{"mode":"panic"}}}`)
		_ = s.stdin.Close()
		rest, err := io.ReadAll(s.stdout)
		if err != nil {
			t.Fatal(err)
		}
		var answers []string
		for _, line := range strings.Split(strings.TrimSpace(string(rest)), "\n") {
			if !strings.Contains(line, `"notifications/progress"`) {
				answers = append(answers, line)
			}
		}
		slices.Sort(answers)
		want := []string{
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept"}]}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"slept"}]}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Tool execution failed"}],"isError":true}}`,
		}
		if !slices.Equal(answers, want) {
			t.Errorf("answers after EOF:\n%s\nwant:\n%s", strings.Join(answers, "\n"), strings.Join(want, "\n"))
		}
		s.wait(0)
		if lines := s.diagnostics(); len(lines) != 1 || !strings.Contains(lines[0], `"request_id":3`) {
			t.Errorf("diagnostics file: %q, want the one report of request 3", lines)
		}
	})
	t.Run("discover probe", func(t *testing.T) {
		s := startBinary(t, bin, "--end-of-input-grace", "1h")
		got := s.exchange(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
		if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result":`) {
			t.Fatalf("server/discover: %s", got)
		}
		_ = s.stdin.Close()
		_ = s.cmd.Process.Signal(syscall.SIGTERM) // fails harmlessly if the server has exited
		s.waitStopped()
	})
}

// testBrokenStdout: when the client closes the server's stdout, the write error is reported
// with no details, the server shuts down, and it exits 1 (SIGPIPE does not kill it).
func testBrokenStdout(t *testing.T, bin string) {
	s := startBinary(t, bin)
	s.exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}}}`)
	_ = s.out.Close()
	// The answers to pings meet the closed pipe. Not necessarily the first: a process that this
	// test binary forks meanwhile (other tests start binaries in parallel) holds a copy of the
	// pipe's read end from its fork until its exec, and a write in that window succeeds, after
	// which the server would wait out the 600 s sleep for its next write. So ping every 50 ms
	// until the server exits (30 s at most, as wait); the writes to its stdin fail harmlessly
	// once it has.
	for id, deadline := 2, time.Now().Add(30*time.Second); time.Now().Before(deadline); id++ {
		_, _ = fmt.Fprintf(s.stdin, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id)
		select {
		case err := <-s.done:
			s.done <- err // for wait
			deadline = time.Time{}
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.wait(1)
	lines := s.diagnostics()
	if len(lines) != 1 || !strings.Contains(lines[0], "stdio: write") || !strings.Contains(lines[0], "broken pipe") || strings.Contains(lines[0], `"tool"`) {
		t.Errorf("diagnostics file: %q, want one write error with no details", lines)
	}
}

// binary is one running server process.
type binary struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	out    io.Closer   // the read end of stdout
	stderr *syncBuffer // written by exec's copier while a failing test may read it
	diag   string
	done   chan error
}

func startBinary(t *testing.T, bin string, args ...string) *binary {
	t.Helper()
	s := &binary{t: t, diag: filepath.Join(t.TempDir(), "diag.jsonl"), stderr: new(syncBuffer), done: make(chan error, 1)}
	s.cmd = exec.Command(bin, append([]string{"--diagnostics-file", s.diag}, args...)...)
	s.cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// A pipe of our own, not StdoutPipe: Wait, which runs concurrently, would close that one
	// under a reader that has not reached EOF yet.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout = w
	s.stdout, s.out = bufio.NewReader(out), out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	t.Cleanup(func() { _ = out.Close() })
	go func() { s.done <- s.cmd.Wait() }() // ends when the process exits; wait or Cleanup kill it
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
	return s
}

func (s *binary) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("write: %v", err)
	}
}

func (s *binary) exchange(line string) string {
	s.t.Helper()
	s.send(line)
	got, err := s.stdout.ReadString('\n')
	if err != nil {
		s.t.Fatalf("read: %v (stderr: %s)", err, s.stderr.String())
	}
	return strings.TrimSuffix(got, "\n")
}

// wait waits for the process to exit with code, under a watchdog.
func (s *binary) wait(code int) {
	s.t.Helper()
	select {
	case err := <-s.done:
		s.done <- err // for Cleanup
		got := 0
		if ee, ok := err.(*exec.ExitError); ok {
			got = ee.ExitCode()
		} else if err != nil {
			s.t.Fatalf("wait: %v", err)
		}
		if got != code {
			s.t.Fatalf("exit code %d, want %d\nstderr: %s", got, code, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		s.t.Fatalf("the server did not exit\nstderr: %s", s.stderr.String())
	}
}

// waitStopped waits, under a watchdog, for the process to end with exit code 0 or by SIGTERM
// (which can arrive after the server has restored the default signal handling on its way out).
func (s *binary) waitStopped() {
	s.t.Helper()
	select {
	case err := <-s.done:
		s.done <- err // for Cleanup
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM:
		default:
			s.t.Fatalf("exit: %v\nstderr: %s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		s.t.Fatalf("the server did not exit\nstderr: %s", s.stderr.String())
	}
}

func (s *binary) diagnostics() []string {
	s.t.Helper()
	data, err := os.ReadFile(s.diag)
	if err != nil {
		s.t.Fatal(err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}
