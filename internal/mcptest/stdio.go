package mcptest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Stdio is a client of one stdio connection: it writes lines to the server's input and reads
// the server's output line by line, exactly as a real client sees it.
type Stdio struct {
	t     testing.TB
	in    io.WriteCloser
	lines chan string // the server's output lines; closed when the output ends
	done  chan error  // the connection's end: what serve returned, or the process's exit
}

// Serve is what serves one stdio connection until in ends, as Server.ServeStdio does. It
// returns nil or the error that ended the connection; the harness fails the test with the error.
type Serve func(ctx context.Context, in io.Reader, out io.Writer) error

// Pipe serves one in-process stdio connection with serve, over two pipes, and returns its
// client. Cleanup closes the input, waits for serve to return (under the watchdog) and fails
// the test if it returned an error.
func Pipe(t testing.TB, serve Serve) *Stdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &Stdio{t: t, in: inW, lines: make(chan string, 1024), done: make(chan error, 1)}
	go func() {
		err := serve(context.Background(), inR, outW)
		_ = outW.Close()
		c.done <- err
	}()
	go c.read(outR)
	t.Cleanup(func() { c.end("serve") })
	return c
}

// Command starts cmd with pipes to its standard input and output and returns its client.
// Cleanup closes the input, waits for the process to exit (under the watchdog, then kills it)
// and fails the test if it exited with an error. cmd's Stderr is left as the caller set it.
func Command(t testing.TB, cmd *exec.Cmd) *Stdio {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	c := &Stdio{t: t, in: in, lines: make(chan string, 1024), done: make(chan error, 1)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		c.read(out)
	}()
	go func() {
		<-read // Wait closes the output pipe: read it to its end first
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if !c.end(cmd.Path) {
			_ = cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

func (c *Stdio) read(out io.Reader) {
	defer close(c.lines)
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			c.lines <- strings.TrimSuffix(line, "\n")
		}
		if err != nil {
			return
		}
	}
}

// end closes the input and waits for the connection to end; it reports whether it did.
func (c *Stdio) end(what string) bool {
	_ = c.in.Close()
	timer := time.NewTimer(Watchdog)
	defer timer.Stop()
	select {
	case err := <-c.done:
		c.done <- err // for a later end
		if err != nil {
			c.t.Errorf("%s: %v", what, err)
		}
	case <-timer.C:
		c.t.Errorf("%s did not return within %v of the end of its input", what, Watchdog)
		return false
	}
	for range c.lines {
	}
	return true
}

// For returns the client reporting its failures to t, for a subtest that goes on with its
// parent's connection.
func (c *Stdio) For(t testing.TB) *Stdio {
	d := *c
	d.t = t
	return &d
}

// Input is the server's input, for a test that writes bytes that are not lines.
func (c *Stdio) Input() io.Writer { return c.in }

// CloseInput closes the server's input: the end of input a client's exit causes.
func (c *Stdio) CloseInput() error { return c.in.Close() }

// Lines are the server's output lines as they arrive, closed when the output ends.
func (c *Stdio) Lines() <-chan string { return c.lines }

// Send writes one line to the server.
func (c *Stdio) Send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// Recv returns the next line from the server.
func (c *Stdio) Recv() string {
	c.t.Helper()
	timer := time.NewTimer(Watchdog)
	defer timer.Stop()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("the server closed its output")
		}
		return line
	case <-timer.C:
		c.t.Fatalf("no message from the server within %v (the harness's watchdog)", Watchdog)
	}
	return ""
}

// Expect sends one request and asserts the exact line that answers it.
func (c *Stdio) Expect(request, want string) {
	c.t.Helper()
	c.Send(request)
	if got := c.Recv(); got != want {
		c.t.Errorf("request %s\n got: %s\nwant: %s", request, got, want)
	}
}

// ExpectNext asserts the exact next line.
func (c *Stdio) ExpectNext(want string) {
	c.t.Helper()
	if got := c.Recv(); got != want {
		c.t.Errorf("\n got: %s\nwant: %s", got, want)
	}
}

// ExpectPing sends a ping with the JSON id id and asserts that its answer is the next line.
func (c *Stdio) ExpectPing(id string) {
	c.t.Helper()
	req, resp := Ping(id)
	c.Expect(req, resp)
}

// Silent asserts that the server sends nothing during d; why says what d leaves room for (a
// late answer, a report), and is printed if something arrives.
func (c *Stdio) Silent(d time.Duration, why string) {
	c.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case line := <-c.lines:
		c.t.Errorf("unexpected message within %v (%s): %s", d, why, line)
	case <-timer.C:
	}
}

// Initialize runs the handshake at 2025-11-25 with no client capabilities.
func (c *Stdio) Initialize() {
	c.t.Helper()
	c.InitializeAt(LegacyVersion, "{}")
}

// InitializeWith runs the handshake at 2025-11-25 declaring the client capabilities caps (a
// JSON object).
func (c *Stdio) InitializeWith(caps string) {
	c.t.Helper()
	c.InitializeAt(LegacyVersion, caps)
}

// InitializeAt runs the handshake at version, declaring caps, and checks that version was
// negotiated.
func (c *Stdio) InitializeAt(version, caps string) {
	c.t.Helper()
	c.Send(InitializeAt(version, caps))
	if got := c.Recv(); !strings.Contains(got, `"protocolVersion":"`+version+`"`) {
		c.t.Fatalf("initialize at %s: %s", version, got)
	}
	c.Send(Initialized)
}

// Drain reads the output until the server closes it, which it does once the connection has
// ended, and returns the lines and how the connection ended (what serve returned, or the
// process's exit).
func (c *Stdio) Drain() ([]string, error) {
	c.t.Helper()
	var lines []string
	timer := time.NewTimer(Watchdog)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				select {
				case err := <-c.done:
					c.done <- err // for Cleanup
					return lines, err
				case <-timer.C:
					c.t.Fatalf("the connection did not end within %v of its output's end", Watchdog)
				}
			}
			lines = append(lines, line)
		case <-timer.C:
			c.t.Fatalf("the output did not end within %v; so far: %q", Watchdog, lines)
		}
	}
}

// Pipes are the two ends of an in-process stdio connection for tests that drive the output side
// by hand (reading slowly, or not at all, or breaking it).
type Pipes struct {
	InR  *io.PipeReader
	InW  *io.PipeWriter
	OutR *io.PipeReader
	OutW *io.PipeWriter
	r    *bufio.Reader
}

// NewPipes returns the pipes of a connection; the server reads InR and writes OutW.
func NewPipes() *Pipes {
	p := &Pipes{}
	p.InR, p.InW = io.Pipe()
	p.OutR, p.OutW = io.Pipe()
	p.r = bufio.NewReader(p.OutR)
	return p
}

// Write writes one line to the server.
func (p *Pipes) Write(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(p.InW, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// ReadByte reads one byte of output: proof that the server is writing.
func (p *Pipes) ReadByte() (byte, error) { return p.r.ReadByte() }

// ReadLine reads one line of output, under the watchdog.
func (p *Pipes) ReadLine(t testing.TB) string {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := p.r.ReadString('\n')
		got <- result{strings.TrimSuffix(line, "\n"), err}
	}()
	timer := time.NewTimer(Watchdog)
	defer timer.Stop()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("read: %v", r.err)
		}
		return r.line
	case <-timer.C:
		_ = p.OutR.CloseWithError(errors.New("watchdog"))
		<-got
		t.Fatalf("no line from the server within %v (the harness's watchdog)", Watchdog)
	}
	return ""
}

// Ping is a ping with the JSON id id and its answer.
func Ping(id string) (request, response string) {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"ping"}`, id), fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, id)
}
