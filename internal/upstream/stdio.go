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

// exitDrain is how long the reader of the standard error of a process that exited gets to reach
// its end (a child of it may hold the pipe open) before the pipe is closed under it.
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
	c := &stdioConn{cmd: cmd, stdin: stdin, h: h, grace: grace, exited: make(chan struct{})}
	c.w = newLineWriter(stdin, wg)
	stderrDone := make(chan struct{})
	wg.Add(2)
	// The two goroutines of a process: they end when it has exited and its pipes are closed,
	// which Close brings about (the end of its input, then a kill after the grace).
	go func() { // its standard error
		defer wg.Done()
		defer close(stderrDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 512), 64<<10)
		for sc.Scan() {
			if s.Stderr != nil {
				s.Stderr(sc.Text())
			}
		}
	}()
	go func() { // its output, then its exit
		defer wg.Done()
		c.read(stdout, max)
		// The output ended: the process exited, or closed it (a process it started may
		// still hold it: the kill of Close reaches the whole group).
		state, err := cmd.Process.Wait()
		c.mu.Lock()
		c.state = state
		if c.kill != nil {
			c.kill.Stop()
		}
		c.mu.Unlock()
		close(c.exited)
		select {
		case <-stderrDone:
		case <-time.After(exitDrain):
			_ = stderr.Close() // held open by a process it started
			<-stderrDone
		}
		_ = stdout.Close()
		_ = stdin.Close()
		c.w.close()
		<-c.w.done
		if err == nil {
			err = &ExitError{Command: s.Command, State: state}
		}
		h.Closed(err)
	}()
	return c, nil
}

type stdioConn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      *lineWriter
	h      Handler
	grace  time.Duration
	exited chan struct{}

	mu      sync.Mutex
	closing bool
	kill    *time.Timer // the kill after the grace, once Close has ended the input
	state   *os.ProcessState
}

// read decodes the process's output, one message per line, until it ends.
func (c *stdioConn) read(r io.Reader, max int) {
	lr := newLineReader(r, max)
	sc := newAnswerScanner()
	for {
		line, err := lr.next()
		if errors.Is(err, errLineTooLong) {
			continue // skipped; the stream goes on
		}
		if err != nil {
			return
		}
		if key, result, ok := sc.scan(line); ok && c.h.Result(key, result) {
			continue
		}
		m, werr := sc.decode(line)
		if werr != nil || m == nil {
			continue // not a message: ignored, as a client ignores noise
		}
		c.h.Message(m, protocol.ID{})
	}
}

func (c *stdioConn) Send(out *Outgoing)    { c.w.write(out) }
func (c *stdioConn) PID() int              { return c.cmd.Process.Pid }
func (c *stdioConn) EndStream(protocol.ID) {}
func (c *stdioConn) SetSession(string)     {}

// Close ends the process's input, its signal to exit, and kills its process group if it has
// not exited after the grace.
func (c *stdioConn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || c.state != nil {
		return
	}
	c.closing = true
	c.w.close()
	_ = c.stdin.Close()
	c.kill = time.AfterFunc(c.grace, func() {
		select {
		case <-c.exited:
		default:
			killProcessGroup(c.cmd)
		}
	})
}
