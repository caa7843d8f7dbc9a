package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
)

// DefaultKillGrace is how long a stdio upstream gets, after its input was closed, to exit
// before it is killed.
const DefaultKillGrace = 2 * time.Second

// exitDrain is how long the readers of a process that exited get to reach the end of its
// output (a child of it may hold the pipe open) before the pipes are closed under them.
const exitDrain = time.Second

// Stdio is the transport to a command the gateway starts: newline-delimited JSON-RPC on its
// standard input and output. Its standard error is read line by line and handed to Stderr.
// The process runs in a process group of its own, which is killed as a whole when it does not
// exit on the end of its input.
type Stdio struct {
	Command string
	Args    []string
	// Env is added to the gateway's own environment (KEY=VALUE), overriding it.
	Env []string
	// Dir is the working directory; empty means the gateway's.
	Dir string
	// Stderr receives each line the process writes on its standard error; nil drops them.
	Stderr func(line string)
	// MaxMessageSize bounds one message read; 0 means protocol.DefaultMaxMessageSize.
	MaxMessageSize int
	// KillGrace is how long the process gets to exit after its input was closed; 0 means
	// DefaultKillGrace.
	KillGrace time.Duration
}

// Kind returns "stdio".
func (Stdio) Kind() string { return "stdio" }

// ExitError says that the upstream process ended.
type ExitError struct {
	Command string
	State   *os.ProcessState
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("upstream process %q ended: %v", e.Command, e.State)
}

// Open starts the process.
func (s Stdio) Open(_ context.Context, h Handler, wg *sync.WaitGroup) (Conn, error) {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = s.Dir
	if len(s.Env) > 0 {
		cmd.Env = append(os.Environ(), s.Env...)
	}
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %q: %w", s.Command, err)
	}
	max := s.MaxMessageSize
	if max <= 0 {
		max = protocol.DefaultMaxMessageSize
	}
	grace := s.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	c := &stdioConn{
		cmd: cmd, stdin: stdin, h: h, grace: grace,
		exited: make(chan struct{}), closing: make(chan struct{}),
	}
	c.w = protocol.NewStreamWriter(stdin, nil)
	var readers sync.WaitGroup
	readers.Add(2)
	wg.Add(4)
	// The four goroutines of a process: they end when it has exited and its pipes are closed,
	// which Close brings about (the end of its input, then a kill after the grace).
	go func() { // its output
		defer wg.Done()
		defer readers.Done()
		c.read(stdout, max)
	}()
	go func() { // its standard error
		defer wg.Done()
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 4096), 64<<10)
		for sc.Scan() {
			if s.Stderr != nil {
				s.Stderr(sc.Text())
			}
		}
	}()
	go func() { // its exit
		defer wg.Done()
		state, err := cmd.Process.Wait()
		c.state, c.waitErr = state, err
		close(c.exited)
		// A child of the process may keep its output open: the readers get a moment to
		// finish, then the pipes are closed under them.
		done := make(chan struct{})
		go func() { readers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(exitDrain):
			_ = stdout.Close()
			_ = stderr.Close()
			<-done
		}
		_ = stdin.Close()
		_ = c.w.Close()
		if err == nil {
			err = &ExitError{Command: s.Command, State: state}
		}
		h.Closed(err)
	}()
	go func() { // the kill: after Close and the grace, or never once the process exited
		defer wg.Done()
		select {
		case <-c.exited:
			return
		case <-c.closing:
		}
		_ = stdin.Close() // the end of its input: the process's signal to exit
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-c.exited:
		case <-t.C:
			killProcessGroup(cmd)
		}
	}()
	return c, nil
}

type stdioConn struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	w       *protocol.StreamWriter
	h       Handler
	grace   time.Duration
	once    sync.Once
	closing chan struct{}
	exited  chan struct{}
	state   *os.ProcessState
	waitErr error
}

// read decodes the process's output, one message per line, until it ends.
func (c *stdioConn) read(r io.Reader, max int) {
	lr := protocol.NewLineReader(r, max)
	for {
		line, err := lr.Next()
		if err != nil {
			var tooLarge *protocol.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				continue // skipped by the reader; the stream goes on
			}
			return
		}
		m, werr := protocol.Decode(line)
		if werr != nil || m == nil {
			continue // not a message: ignored, as a client ignores noise
		}
		c.h.Message(m, protocol.ID{})
	}
}

func (c *stdioConn) Send(out *Outgoing)    { c.w.Send(out.Frame) }
func (c *stdioConn) PID() int              { return c.cmd.Process.Pid }
func (c *stdioConn) EndStream(protocol.ID) {}
func (c *stdioConn) SetSession(string)     {}
func (c *stdioConn) Close()                { c.once.Do(func() { close(c.closing) }) }
