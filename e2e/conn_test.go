package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
)

// newServer builds a server that the test closes at its end, after every connection attached
// with attach has ended.
func newServer(t testing.TB, cfg toolgrain.Config) *toolgrain.Server {
	t.Helper()
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// attach serves one more in-process stdio connection of srv. Cleanup closes its input and
// waits for ServeStdio; it does not close the server.
func attach(t testing.TB, srv *toolgrain.Server) *stdioClient { return attachAs(t, srv, nil) }

// attachAs is attach for a connection the host authenticated as id (ServeStdioAs).
func attachAs(t testing.TB, srv *toolgrain.Server, id *toolgrain.Identity) *stdioClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &stdioClient{t: t, srv: srv, in: inW, lines: make(chan string, 1024), done: make(chan error, 1)}
	go func() {
		err := srv.ServeStdioAs(context.Background(), inR, outW, id)
		_ = outW.Close()
		c.done <- err
	}()
	go func() {
		defer close(c.lines)
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				c.lines <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		select {
		case err := <-c.done:
			if err != nil && !errors.Is(err, toolgrain.ErrServerClosed) {
				t.Errorf("ServeStdio: %v", err)
			}
		case <-time.After(watchdog):
			t.Errorf("ServeStdio did not return after EOF")
		}
		for range c.lines {
		}
	})
	return c
}

// cancelFor is the cancellation of the request with the JSON id id.
func cancelFor(id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`, id)
}

func ping(id string) (request, response string) {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"ping"}`, id), fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, id)
}

// expectPing sends a ping and asserts that its answer is the next line.
func (c *stdioClient) expectPing(id string) {
	c.t.Helper()
	req, resp := ping(id)
	c.expect(req, resp)
}

func echoResult(id, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, text)
}

// pipes are the two ends of an in-process stdio connection for tests that drive the output
// side by hand (reading slowly, or not at all, or breaking it).
type pipes struct {
	inR  *io.PipeReader
	inW  *io.PipeWriter
	outR *io.PipeReader
	outW *io.PipeWriter
	r    *bufio.Reader
}

func newPipes() *pipes {
	p := &pipes{}
	p.inR, p.inW = io.Pipe()
	p.outR, p.outW = io.Pipe()
	p.r = bufio.NewReader(p.outR)
	return p
}

func (p *pipes) write(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(p.inW, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readLine reads one line of output, under the watchdog.
func (p *pipes) readLine(t testing.TB) string {
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
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("read: %v", r.err)
		}
		return r.line
	case <-time.After(watchdog):
		_ = p.outR.CloseWithError(errors.New("watchdog"))
		<-got
		t.Fatal("no line from the server")
	}
	return ""
}
