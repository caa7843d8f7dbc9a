package httpserve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/httpserve"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// The faults of streams taken from net/http (detach.go), against a real HTTP/1.1 server on
// loopback: a client that vanishes without closing, a client that stops reading while others
// read, and a shutdown with many streams open.

// streamServer is an engine and its handler served by httptest.
type streamServer struct {
	t   *testing.T
	eng *engine.Engine
	h   *httpserve.Handler
	url string
}

func newStreamServer(t *testing.T, cfg streamable.Config) *streamServer {
	t.Helper()
	set, err := tools.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Start(engine.Config{Tools: set})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpserve.New(eng, cfg, httpserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.Shutdown()
		if err := eng.Shutdown(ctx); err != nil {
			t.Errorf("engine shutdown: %v", err)
		}
		h.Drain(ctx)
		hs.Close()
	})
	return &streamServer{t: t, eng: eng, h: h, url: hs.URL}
}

// rawClient is one HTTP/1.1 connection spoken by hand, as a client that may stop reading.
type rawClient struct {
	t    *testing.T
	conn *net.TCPConn
	br   *bufio.Reader
}

// dial connects; with tinyWindow the socket's receive buffer is as small as the kernel allows,
// so that a client that stops reading closes its window after a few KiB.
func (s *streamServer) dial(tinyWindow bool) *rawClient {
	s.t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		if !tinyWindow {
			return nil
		}
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1) })
		if err == nil {
			err = serr
		}
		return err
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		s.t.Fatal(err)
	}
	rc := &rawClient{t: s.t, conn: c.(*net.TCPConn), br: bufio.NewReaderSize(c, 256)}
	s.t.Cleanup(func() { _ = rc.conn.Close() })
	return rc
}

// do sends a request and reads the head of its response; the body is left to read.
func (c *rawClient) do(s *streamServer, method, body string, hdr map[string]string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest(method, s.url, strings.NewReader(body))
	if body == "" {
		req.Body, req.ContentLength = nil, 0
	} else {
		req.Header.Set("Content-Type", protocol.MediaTypeJSON)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	_ = c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := req.Write(c.conn); err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		c.t.Fatal(err)
	}
	_ = c.conn.SetDeadline(time.Time{})
	return resp
}

const accept = "application/json, text/event-stream"

// session opens a legacy session on its own connection, subscribed to uri, and returns its id.
func (s *streamServer) session(uri string) string {
	s.t.Helper()
	c := s.dial(false)
	resp := c.do(s, http.MethodPost, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, map[string]string{"Accept": accept})
	_, _ = io.Copy(io.Discard, resp.Body)
	sid := resp.Header.Get(protocol.HeaderSessionID)
	hdr := map[string]string{"Accept": accept, protocol.HeaderSessionID: sid}
	resp = c.do(s, http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp = c.do(s, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"`+uri+`"}}`, hdr)
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"result":{}`) {
		s.t.Fatalf("subscribe: %s", b)
	}
	_ = c.conn.Close()
	return sid
}

// getStream opens the standalone GET stream of session sid on a connection of its own.
func (s *streamServer) getStream(sid string, tinyWindow bool) (*rawClient, *mcptest.EventReader) {
	s.t.Helper()
	c := s.dial(tinyWindow)
	resp := c.do(s, http.MethodGet, "", map[string]string{"Accept": protocol.MediaTypeEventStream, protocol.HeaderSessionID: sid})
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET: %d", resp.StatusCode)
	}
	return c, mcptest.NewEventReader(resp.Body)
}

// listenStream opens a subscriptions/listen stream for tool list changes and updates of uri,
// and reads its acknowledgement.
func (s *streamServer) listenStream(uri string) (*rawClient, *mcptest.EventReader) {
	s.t.Helper()
	c := s.dial(false)
	body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["` + uri +
		`"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp := c.do(s, http.MethodPost, body, map[string]string{"Accept": accept, protocol.HeaderProtocolVersion: "2026-07-28", "Mcp-Method": "subscriptions/listen"})
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("listen: %d", resp.StatusCode)
	}
	br := mcptest.NewEventReader(resp.Body)
	if ev := br.RequireData(s.t); !strings.Contains(ev, "notifications/subscriptions/acknowledged") {
		s.t.Fatalf("first event: %s", ev)
	}
	return c, br
}

// waitStats waits until the handler's stream counters satisfy cond, and returns how long that
// took.
func (s *streamServer) waitStats(what string, cond func(httpserve.StreamStats) bool) time.Duration {
	s.t.Helper()
	start := time.Now()
	mcptest.Eventually(s.t, what, func() bool { return cond(s.h.StreamStats()) })
	return time.Since(start)
}

// TestDetachedStreamsCarryEverything: GET and listen streams leave net/http once open and
// still carry every notification, in order, with keep-alive comments between them.
func TestDetachedStreamsCarryEverything(t *testing.T) {
	s := newStreamServer(t, streamable.Config{KeepAlive: 50 * time.Millisecond})
	sid := s.session("demo://a")
	_, get := s.getStream(sid, false)
	_, listen := s.listenStream("demo://a")
	s.waitStats("both streams detached", func(st httpserve.StreamStats) bool { return st.Open == 2 })
	for i := range 5 {
		s.eng.ResourceUpdated("demo://a")
		for _, br := range []*mcptest.EventReader{get, listen} {
			if ev := br.RequireData(t); !strings.Contains(ev, `"notifications/resources/updated"`) || !strings.Contains(ev, `"uri":"demo://a"`) {
				t.Fatalf("update %d: %s", i, ev)
			}
		}
	}
	// Idle, each stream gets comments.
	for _, br := range []*mcptest.EventReader{get, listen} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line == ": keep-alive\n" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no keep-alive comment")
			}
		}
	}
}

// TestVanishedClientDropped: a client that stops reading and never closes its connection (its
// host gone, as far as the server can tell: data it is sent is never taken) is dropped within
// the keep-alive bound once data waits for it, and its session's GET stream can be opened
// again; another client is served throughout.
func TestVanishedClientDropped(t *testing.T) {
	const keepAlive = 100 * time.Millisecond
	s := newStreamServer(t, streamable.Config{KeepAlive: keepAlive})
	sid := s.session("demo://a")
	gone, _ := s.getStream(sid, true) // it will never read
	_ = gone
	other := s.session("demo://a")
	_, live := s.getStream(other, false)
	s.waitStats("streams detached", func(st httpserve.StreamStats) bool { return st.Open == 2 })
	// A few KiB close the silent client's window: what follows waits unsent.
	for range 60 {
		s.eng.ResourceUpdated("demo://a")
	}
	for range 60 {
		live.RequireData(t)
	}
	took := s.waitStats("the silent client dropped", func(st httpserve.StreamStats) bool { return st.Gone == 1 && st.Open == 1 })
	t.Logf("dropped %v after its window closed (keep-alive %v)", took.Round(time.Millisecond), keepAlive)
	// The session's GET stream is free again.
	c := s.dial(false)
	resp := c.do(s, http.MethodGet, "", map[string]string{"Accept": protocol.MediaTypeEventStream, protocol.HeaderSessionID: sid})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET after the drop: %d", resp.StatusCode)
	}
	s.eng.ResourceUpdated("demo://a")
	if ev := live.RequireData(t); !strings.Contains(ev, "resources/updated") {
		t.Fatalf("the other client after the drop: %s", ev)
	}
}

// TestSlowReaderCutOff: a client that stops reading is cut off once its backlog passes the
// bound, and a burst of changes reaches the reading clients whole meanwhile, without waiting
// for the slow one.
func TestSlowReaderCutOff(t *testing.T) {
	s := newStreamServer(t, streamable.Config{})
	slowSID := s.session("demo://a")
	slow, _ := s.getStream(slowSID, true)
	fastSID := s.session("demo://a")
	_, fast := s.getStream(fastSID, false)
	_, listen := s.listenStream("demo://a")
	s.waitStats("streams detached", func(st httpserve.StreamStats) bool { return st.Open == 3 })

	const burst = 3000 // ~150 B each: more than the bound, the socket's buffers and the window
	start := time.Now()
	var wg sync.WaitGroup
	for _, br := range []*mcptest.EventReader{fast, listen} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range burst {
				line, err := br.ReadString('\n')
				for err == nil && !strings.HasPrefix(line, "data: ") {
					line, err = br.ReadString('\n')
				}
				if err != nil {
					t.Errorf("reader: event %d: %v", i, err)
					return
				}
			}
		}()
	}
	for range burst {
		s.eng.ResourceUpdated("demo://a")
	}
	wg.Wait()
	t.Logf("%d updates reached the reading clients in %v", burst, time.Since(start).Round(time.Millisecond))
	s.waitStats("the slow reader cut off", func(st httpserve.StreamStats) bool { return st.CutOff == 1 && st.Open == 2 })
	// The slow client finds its stream closed once it reads: what was sent, then the end.
	_ = slow.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, slow.br)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the slow client's stream: %v", err)
	}
}

// TestShutdownEndsDetachedStreams: a shutdown ends many open streams of both kinds within its
// grace: each GET stream ends, each listen stream gets its closing result, and every connection
// closes.
func TestShutdownEndsDetachedStreams(t *testing.T) {
	set, err := tools.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Start(engine.Config{Tools: set})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpserve.New(eng, streamable.Config{}, httpserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	s := &streamServer{t: t, eng: eng, h: h, url: hs.URL}
	const n = 200 // of each kind
	var gets, listens []*mcptest.EventReader
	for range n {
		_, br := s.getStream(s.session("demo://a"), false)
		gets = append(gets, br)
		_, br = s.listenStream("demo://a")
		listens = append(listens, br)
	}
	s.waitStats("streams detached", func(st httpserve.StreamStats) bool { return st.Open == 2*n })

	const grace = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	start := time.Now()
	h.Shutdown()
	if err := eng.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h.Drain(ctx)
	took := time.Since(start)
	if st := h.StreamStats(); st.Open != 0 {
		t.Fatalf("%d streams open after the shutdown", st.Open)
	}
	if took > grace {
		t.Errorf("shutdown took %v, over its grace %v", took, grace)
	}
	t.Logf("%d streams ended in %v", 2*n, took.Round(time.Millisecond))
	for i, br := range gets {
		if b, err := io.ReadAll(br); err != nil || len(b) != 0 {
			t.Fatalf("GET stream %d: %q %v, want its end", i, b, err)
		}
	}
	for i, br := range listens {
		var last string
		for {
			line, err := br.ReadString('\n')
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("listen stream %d: %v", i, err)
			}
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				last = d
			}
		}
		var res struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(last), &res) != nil || res.ID != 7 || !strings.Contains(string(res.Result), "subscriptionId") {
			t.Fatalf("listen stream %d ended with %s, want its closing result", i, last)
		}
	}
}

// wrappedListener hands out connections that hide their socket, as a listener wrapper of a
// host's (a connection limiter, a PROXY-protocol reader) does.
type wrappedListener struct{ net.Listener }

type wrappedConn struct{ net.Conn }

func (l wrappedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return wrappedConn{c}, nil
}

// TestDetachedStreamOnWrappedConn: a connection whose socket the hub cannot watch still leaves
// net/http, served by goroutines of its own: it carries the notifications, its client's leaving
// is seen, and the goroutines end with it.
func TestDetachedStreamOnWrappedConn(t *testing.T) {
	set, err := tools.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Start(engine.Config{Tools: set})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpserve.New(eng, streamable.Config{}, httpserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(h)
	hs.Listener = wrappedListener{hs.Listener}
	hs.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.Shutdown()
		if err := eng.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		h.Drain(ctx)
		hs.Close()
	})
	s := &streamServer{t: t, eng: eng, h: h, url: hs.URL}
	c, listen := s.listenStream("demo://a")
	s.waitStats("detached", func(st httpserve.StreamStats) bool { return st.Open == 1 })
	eng.ResourceUpdated("demo://a")
	if ev := listen.RequireData(t); !strings.Contains(ev, "resources/updated") {
		t.Fatalf("update: %s", ev)
	}
	_ = c.conn.Close()
	s.waitStats("the client's leaving seen", func(st httpserve.StreamStats) bool { return st.Open == 0 && st.Gone == 1 })
}
