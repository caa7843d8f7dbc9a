//go:build linux

package httpserve

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// poller is the hub's view of the detached sockets on Linux: one epoll instance, edge-triggered,
// and an eventfd that wakes its wait. Events carry the stream's id, never its descriptor, so an
// event that arrives for a stream already closed (whose descriptor a new connection may reuse)
// finds nothing.
type poller struct {
	h      *hub
	epfd   int
	evfd   int
	events []unix.EpollEvent
}

func newPoller(h *hub) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN} // id 0: the wake-up
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(evfd)
		return nil, err
	}
	return &poller{h: h, epfd: epfd, evfd: evfd, events: make([]unix.EpollEvent, 256)}, nil
}

// prepare gives ws its socket (ws.raw), if it has one this process can watch.
func (p *poller) prepare(ws *wireStream) bool {
	sc, ok := ws.conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ws.raw = raw
	return true
}

// add watches ws's socket: readable (the client sent something, or closed), writable, hung up.
// A TCP socket gets the dead-client bound (TCP_USER_TIMEOUT) and a fixed send buffer.
func (p *poller) add(ws *wireStream) error {
	raw := ws.raw
	_, isTCP := ws.conn.(*net.TCPConn)
	var cerr error
	err := raw.Control(func(fd uintptr) {
		if isTCP {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(p.h.deadAfter/time.Millisecond))
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, sendBuffer)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET,
			Fd: int32(uint32(ws.id)), Pad: int32(uint32(ws.id >> 32))}
		cerr = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err == nil {
		err = cerr
	}
	return err
}

// remove stops watching ws's socket; it is called before the socket closes.
func (p *poller) remove(ws *wireStream) {
	_ = ws.raw.Control(func(fd uintptr) {
		_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
}

// write writes as much of buf as the socket takes without blocking; a full socket is not an
// error.
func (p *poller) write(ws *wireStream, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	n := 0
	var werr error
	err := ws.raw.Write(func(fd uintptr) bool {
		for n < len(buf) {
			m, e := unix.Write(int(fd), buf[n:])
			if m > 0 {
				n += m
			}
			switch {
			case e == unix.EINTR:
				continue
			case e == unix.EAGAIN:
			case e != nil:
				werr = e
			case m > 0:
				continue
			}
			break
		}
		return true // never wait: the poller says when the socket drains
	})
	if err != nil {
		return n, err
	}
	return n, werr
}

// drain reads and drops what the client sent, and reports whether it closed its side.
func (p *poller) drain(ws *wireStream) (gone bool) {
	var buf [512]byte
	err := ws.raw.Read(func(fd uintptr) bool {
		for {
			n, e := unix.Read(int(fd), buf[:])
			switch {
			case e == unix.EINTR:
				continue
			case e == unix.EAGAIN:
			case e != nil || n == 0:
				gone = true
			default:
				continue
			}
			return true
		}
	})
	return gone || err != nil
}

// wait waits up to d for events (a wake-up among them) and handles them.
func (p *poller) wait(d time.Duration) {
	ms := int(d / time.Millisecond)
	if d > 0 && ms == 0 {
		ms = 1
	}
	n, err := unix.EpollWait(p.epfd, p.events, max(ms, 0))
	if err != nil {
		return // EINTR
	}
	h := p.h
	for _, ev := range p.events[:n] {
		id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
		if id == 0 {
			var b [8]byte
			_, _ = unix.Read(p.evfd, b[:])
			continue
		}
		h.mu.Lock()
		ws := h.streams[id]
		h.mu.Unlock()
		if ws == nil {
			continue
		}
		if ev.Events&(unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
			ws.close(endGone)
			continue
		}
		if ev.Events&unix.EPOLLIN != 0 && p.drain(ws) {
			ws.close(endGone)
			continue
		}
		if ev.Events&unix.EPOLLOUT != 0 {
			ws.readyToWrite()
		}
	}
}

// wake interrupts wait.
func (p *poller) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(p.evfd, one[:])
}

func (p *poller) close() {
	_ = unix.Close(p.epfd)
	_ = unix.Close(p.evfd)
}
