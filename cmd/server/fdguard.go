package main

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// fdGuard is the HTTP listener of a server that may run out of file descriptors: every
// connected client holds one, and a server with tens of thousands of open streams can reach
// the process's limit (RLIMIT_NOFILE). net/http's own answer to EMFILE is to retry Accept after
// a pause, which leaves the new connections waiting in the kernel's queue, their clients
// hanging. fdGuard refuses them instead: it keeps one descriptor in reserve, and when Accept
// fails for want of descriptors it gives that one back, accepts the waiting connection, resets
// it (the client sees its connection refused at once) and takes the reserve again; a log line
// says so, at most once a second with the count since the last. Connections already accepted,
// and their streams, need no new descriptor and are served as before.
type fdGuard struct {
	*net.TCPListener
	log *zap.Logger

	mu      sync.Mutex
	spare   *os.File // the descriptor in reserve; nil when it could not be taken again
	refused int      // connections refused since the last log line
	logged  time.Time
	backoff time.Duration // between attempts while no descriptor can be had at all
}

// fdLogEvery bounds the log lines about refused connections.
const fdLogEvery = time.Second

func newFDGuard(ln *net.TCPListener, log *zap.Logger) *fdGuard {
	g := &fdGuard{TCPListener: ln, log: log}
	g.spare, _ = os.Open(os.DevNull)
	return g
}

// Accept returns the next connection, refusing those that come while the process has no
// descriptor to spare.
func (g *fdGuard) Accept() (net.Conn, error) {
	for {
		c, err := g.TCPListener.AcceptTCP()
		if err == nil {
			g.mu.Lock()
			g.backoff = 0
			g.mu.Unlock()
			return c, nil
		}
		if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
			return nil, err
		}
		g.refuse(err)
	}
}

// refuse turns one connection waiting for a descriptor away, with the reserve's. It runs on
// the accepting goroutine only.
func (g *fdGuard) refuse(cause error) {
	g.mu.Lock()
	spare := g.spare
	g.spare = nil
	g.mu.Unlock()
	refused := false
	if spare != nil {
		_ = spare.Close()
		// Only a connection already waiting (the one that met EMFILE): the deadline ends the
		// wait when it went away meanwhile. (One already past would fail before trying.)
		_ = g.TCPListener.SetDeadline(time.Now().Add(50 * time.Millisecond))
		if c, err := g.TCPListener.AcceptTCP(); err == nil {
			_ = c.SetLinger(0) // a reset: the client learns at once
			_ = c.Close()
			refused = true
		}
		_ = g.TCPListener.SetDeadline(time.Time{})
		spare, _ = os.Open(os.DevNull)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.spare == nil {
		g.spare = spare
	} else if spare != nil {
		_ = spare.Close() // Close ran meanwhile
	}
	if refused {
		g.refused++
		g.backoff = 0
	} else {
		// No descriptor at all, not even the reserve's: wait as net/http would, and try again.
		g.backoff = min(max(2*g.backoff, 5*time.Millisecond), time.Second)
		time.Sleep(g.backoff)
	}
	if now := time.Now(); now.Sub(g.logged) >= fdLogEvery {
		g.log.Warn("out of file descriptors: refusing new connections; connected clients are still served",
			zap.Error(cause), zap.Int("refused", g.refused), zap.Uint64("limit", fdLimit()))
		g.logged, g.refused = now, 0
	}
}

// Close closes the listener and gives the reserve back.
func (g *fdGuard) Close() error {
	g.mu.Lock()
	if g.spare != nil {
		_ = g.spare.Close()
		g.spare = nil
	}
	g.mu.Unlock()
	return g.TCPListener.Close()
}
