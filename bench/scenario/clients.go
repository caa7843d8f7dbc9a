package scenario

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/internal/procstat"
)

// The clients scenario: N connected clients of one kind held open against a Streamable HTTP
// server, to measure what a connected client costs the server (memory per client, the time to
// open them, the CPU of keeping them idle) and how fast one change reaches them all.
//
// Kinds:
//   - session: a legacy session (initialize, notifications/initialized), its connection then
//     closed: the server keeps the session alone.
//   - get: a legacy session with its standalone GET SSE stream open.
//   - listen: an open subscriptions/listen request (MCP 2026-07-28).
//   - mixed: get and listen alternately.
//   - sse: a session of the HTTP+SSE transport (MCP 2024-11-05): a GET of the endpoint without a
//     session opens its stream, whose endpoint event names the URL its initialize (and, with a
//     resource to subscribe to, its resources/subscribe) is POSTed to, on connections of their
//     own; the answers come on the stream, which is then held open. Its close ends the session.
//
// The clients speak raw HTTP/1.1 on their own connections (one each), so the client side adds
// no connection pool and one goroutine per open stream.

// Kinds of the clients scenario.
const (
	KindSession = "session"
	KindGet     = "get"
	KindListen  = "listen"
	KindMixed   = "mixed"
	KindSSE     = "sse"
)

// ClientKinds lists the kinds the clients scenario knows.
var ClientKinds = []string{KindSession, KindGet, KindListen, KindMixed, KindSSE}

// ClientsConfig configures the clients scenario; the count of clients is [Config].N.
type ClientsConfig struct {
	// Kind is one of [ClientKinds].
	Kind string
	// Parallel is how many clients are opened at once; 0 means 32.
	Parallel int
	// Settle is the wait after the last client opened, before the memory sample; 0 means 10 s:
	// a server's runtime gives back the memory that the burst of opening used (a Go server's
	// scavenger returns freed heap pages over a few seconds), and the sample is meant to be
	// the steady cost of the clients.
	Settle time.Duration
	// Idle is how long the server's CPU is measured with every client open and nothing
	// happening (but the keep-alive traffic the server sends); 0 means 30 s, negative skips it.
	Idle time.Duration
	// Trigger names the server's tool that changes a list or updates a resource: called with
	// {"list":"tools"}, it must change the tool list once; with {"uri":U}, announce an update of
	// the resource U. Empty means the fan-out is not measured.
	Trigger string
	// Subscribe is the resource URI the streams subscribe to (resources/subscribe for a GET
	// stream's session, resourceSubscriptions for a listen stream) and whose update is
	// measured; empty means only list changes are.
	Subscribe string
	// Rounds is how many changes of each sort are measured; 0 means 3.
	Rounds int
	// FanoutWait bounds the wait for one change to reach every stream; 0 means 5 s.
	FanoutWait time.Duration
}

func (cc ClientsConfig) withDefaults() ClientsConfig {
	if cc.Kind == "" {
		cc.Kind = KindListen
	}
	if cc.Parallel <= 0 {
		cc.Parallel = 32
	}
	if cc.Settle <= 0 {
		cc.Settle = 10 * time.Second
	}
	if cc.Idle == 0 {
		cc.Idle = 30 * time.Second
	}
	if cc.Rounds <= 0 {
		cc.Rounds = 3
	}
	if cc.FanoutWait <= 0 {
		cc.FanoutWait = 5 * time.Second
	}
	return cc
}

func init() {
	Metrics = append(Metrics, clientsMetrics...)
	for i, mi := range Metrics {
		metricIndex[mi.Name] = i
	}
}

var clientsMetrics = []MetricInfo{
	{"clients", "clients", Neutral, "clients: clients open at the memory sample"},
	{"open_failed", "clients", Lower, "clients: clients that could not be opened"},
	{"open_sec", "s", Lower, "clients: time to open every client"},
	{"opened_per_sec", "clients/s", Higher, "clients: clients opened per second"},
	{"kb_per_client", "KiB", Lower, "clients: growth of the server's resident memory (VmRSS) from before the first client to all open, per client"},
	{"anon_kb_per_client", "KiB", Lower, "clients: the same for its anonymous memory (RssAnon: heap, stacks), per client"},
	{"heap_kb_per_client", "KiB", Lower, "clients: growth of the Go heap in use (runtime HeapInuse, from --pprof), per client"},
	{"goroutines_per_client", "", Lower, "clients: growth of the server's goroutines (from --pprof), per client"},
	{"threads_per_1000", "", Lower, "clients: growth of the server's OS threads per 1,000 clients"},
	{"rss_before_kb", "KiB", Lower, "clients: server resident memory before the first client"},
	{"rss_open_kb", "KiB", Lower, "clients: with every client open, after the settle time"},
	{"rss_open_anon_kb", "KiB", Lower, "clients: the anonymous part of rss_open_kb (RssAnon)"},
	{"mb_at_100k", "MiB", Lower, "clients: kb_per_client × 100,000: the slope extrapolated to 100,000 clients, not measured"},
	{"idle_cpu_pct", "%", Lower, "clients: server CPU over the idle window, in percent of one core"},
	{"idle_cpu_ns_per_client_sec", "ns", Lower, "clients: server CPU per open client per second of the idle window"},
	{"keepalives_per_client_min", "", Neutral, "clients: SSE comments (keep-alives) a stream received per minute of the idle window"},
	{"fanout_p50_ms", "ms", Lower, "clients: a list change (tools/list_changed): median time from the trigger call sent to a stream receiving it"},
	{"fanout_p99_ms", "ms", Lower, "clients: the same, 99th percentile over every stream and change"},
	{"fanout_max_ms", "ms", Lower, "clients: the same, slowest"},
	{"fanout_missed", "deliveries", Lower, "clients: list changes a stream had not received within the fan-out wait"},
	{"update_p50_ms", "ms", Lower, "clients: a resource update (resources/updated): median time from the trigger call sent to a subscribed stream receiving it"},
	{"update_p99_ms", "ms", Lower, "clients: the same, 99th percentile"},
	{"update_max_ms", "ms", Lower, "clients: the same, slowest"},
	{"update_missed", "deliveries", Lower, "clients: resource updates a stream had not received within the fan-out wait"},
	{"streams_dropped", "streams", Lower, "clients: streams the server ended before the client closed them"},
}

// Clients opens cfg.N clients of kind cfg.Clients.Kind against an HTTP target and measures what
// they cost the server: resident memory per client (VmRSS and RssAnon growth divided by the
// clients; the Go heap too with --pprof), the time to open them, the server's CPU while they
// idle, and, when the server has a trigger tool, how long a list change and a resource update
// take to reach every open stream. The clients are closed (and their sessions deleted) at the
// end.
func Clients(ctx context.Context, t Target, cfg Config) (*Result, error) {
	cc := cfg.Clients.withDefaults()
	if !slices.Contains(ClientKinds, cc.Kind) {
		return nil, fmt.Errorf("clients: unknown kind %q (want one of %s)", cc.Kind, strings.Join(ClientKinds, ", "))
	}
	if t.Transport != "http" {
		return nil, errors.New("clients: needs a Streamable HTTP server (--http)")
	}
	if cfg.N <= 0 {
		return nil, errors.New("clients: -n must be positive")
	}
	ep, err := newEndpoint(t.Endpoint, t.Header)
	if err != nil {
		return nil, err
	}
	defer ep.close()
	ep.timeout = cfg.Timeout
	ep.subscribe = cc.Subscribe
	r := newResult("clients", t, map[string]any{
		"kind": cc.Kind, "n": cfg.N, "parallel": cc.Parallel, "idle_sec": max(cc.Idle, 0).Seconds(),
		"settle_sec": cc.Settle.Seconds(), "trigger": cc.Trigger, "subscribe": cc.Subscribe,
	})

	// The control connection: the trigger calls, and the check that the target serves the era
	// the kind needs.
	ctl, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	r.connected(ctl)
	pid := t.pid(ctl)

	// One client of the kind first, closed again: it fails early on a server that cannot
	// open it, and lets the server make what it makes once (pools, goroutines) before the
	// baseline.
	first, err := ep.open(ctx, cc.Kind, 0)
	if errors.Is(err, errNoSubscribe) {
		// A server without resource subscriptions: the update is not measured.
		r.note("resource updates not measured: %v", err)
		ep.subscribe = ""
		first, err = ep.open(ctx, cc.Kind, 0)
	}
	if errors.Is(err, errNoListen) || errors.Is(err, errNoGet) || errors.Is(err, errNoSSE) {
		return nil, fmt.Errorf("clients: %w: %v", ErrNotApplicable, err)
	}
	if err != nil {
		return nil, fmt.Errorf("clients: the first %s client: %w", cc.Kind, err)
	}
	first.close()
	ep.deleteSession(ctx, first)
	if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
		return nil, err
	}
	before, haveBefore := sample(pid)
	memBefore, haveMem := goMem(ctx, t.Pprof)

	pool := &clientPool{}
	defer func() {
		// Close every client; the sessions are deleted so that a long-running server is left
		// as it was.
		pool.closeAll()
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool.deleteSessions(cctx, ep, cc.Parallel)
	}()
	start := time.Now()
	prog := startProgress(cfg.Progress, func() string {
		return fmt.Sprintf("clients: %d/%d %s clients open, %d failed", pool.opened.Load(), cfg.N, cc.Kind, pool.failed.Load())
	})
	firstErr := pool.openAll(ctx, ep, cc.Kind, cfg.N, cc.Parallel)
	prog.Stop()
	openTime := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	open := int(pool.opened.Load())
	r.set("clients", float64(open))
	r.set("open_failed", float64(pool.failed.Load()))
	if firstErr != nil {
		r.note("%d of %d clients could not be opened; the first error: %v", pool.failed.Load(), cfg.N, firstErr)
	}
	if open == 0 {
		return nil, fmt.Errorf("clients: no client could be opened: %v", firstErr)
	}
	r.set("open_sec", openTime.Seconds())
	r.set("opened_per_sec", float64(open)/openTime.Seconds())

	if err := sleepCtx(ctx, cc.Settle); err != nil {
		return nil, err
	}
	if after, ok := sample(pid); ok && haveBefore {
		r.set("rss_before_kb", float64(before.RSSKB))
		r.set("rss_open_kb", float64(after.RSSKB))
		perClient := float64(after.RSSKB-before.RSSKB) / float64(open)
		r.set("kb_per_client", perClient)
		r.set("mb_at_100k", perClient*100000/1024)
		if after.AnonKB > 0 {
			r.set("rss_open_anon_kb", float64(after.AnonKB))
			r.set("anon_kb_per_client", float64(after.AnonKB-before.AnonKB)/float64(open))
		}
		r.set("threads_per_1000", float64(after.Threads-before.Threads)*1000/float64(open))
	}
	if haveMem {
		if memAfter, ok := goMem(ctx, t.Pprof); ok {
			r.set("heap_kb_per_client", (float64(memAfter.heapInuse)-float64(memBefore.heapInuse))/1024/float64(open))
			r.set("goroutines_per_client", float64(memAfter.goroutines-memBefore.goroutines)/float64(open))
		}
	}

	streams := pool.streams()
	if cc.Idle > 0 {
		ka0 := pool.keepalives()
		s0, ok0 := sample(pid)
		if err := sleepCtx(ctx, cc.Idle); err != nil {
			return nil, err
		}
		s1, ok1 := sample(pid)
		if ok0 && ok1 {
			cpu := (s1.CPU - s0.CPU).Seconds()
			r.set("idle_cpu_pct", 100*cpu/cc.Idle.Seconds())
			r.set("idle_cpu_ns_per_client_sec", cpu*1e9/cc.Idle.Seconds()/float64(open))
		}
		if len(streams) > 0 {
			r.set("keepalives_per_client_min", float64(pool.keepalives()-ka0)/float64(len(streams))/cc.Idle.Minutes())
		}
	}

	if cc.Trigger != "" && len(streams) > 0 {
		fanout(ctx, r, ctl, cfg, cc, streams)
	} else if cc.Trigger == "" && len(streams) > 0 {
		r.note("fan-out not measured: no trigger tool (--trigger)")
	}
	dropped := 0
	for _, s := range streams {
		if s.gone.Load() {
			dropped++
		}
	}
	if len(streams) > 0 {
		r.set("streams_dropped", float64(dropped))
	}
	r.clientNotes(ctl)
	return r.finish(), nil
}

// fanout measures cc.Rounds list changes, then as many resource updates, each from the trigger
// call sent to every stream's receipt.
func fanout(ctx context.Context, r *Result, ctl *client.Client, cfg Config, cc ClientsConfig, streams []*stream) {
	measure := func(args map[string]any, count func(*stream) *counter) (lat []time.Duration, missed int, err error) {
		params := toolParams(cc.Trigger, args)
		for range cc.Rounds {
			base := make([]int64, len(streams))
			for i, s := range streams {
				base[i] = count(s).n.Load()
			}
			t0 := time.Now()
			msg, err := callOnce(ctx, ctl, cfg.Timeout, "tools/call", params)
			var res client.ToolResult
			if err == nil && msg.Error == nil && msg.Result != nil {
				_ = json.Unmarshal(msg.Result, &res)
			}
			if err != nil || msg.Error != nil || res.IsError {
				return nil, 0, fmt.Errorf("the trigger call %s %v failed: %s", cc.Trigger, args, describe(msg, err))
			}
			deadline := t0.Add(cc.FanoutWait)
			for {
				reached := 0
				for i, s := range streams {
					if count(s).n.Load() > base[i] {
						reached++
					}
				}
				if reached == len(streams) || time.Now().After(deadline) || ctx.Err() != nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			for i, s := range streams {
				c := count(s)
				if c.n.Load() > base[i] {
					lat = append(lat, time.Duration(c.at.Load()-t0.UnixNano()))
				} else {
					missed++
				}
			}
			if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
				return lat, missed, err
			}
		}
		return lat, missed, nil
	}
	set := func(prefix string, lat []time.Duration, missed int) {
		slices.Sort(lat)
		r.set(prefix+"_p50_ms", ms(percentile(lat, 50)))
		r.set(prefix+"_p99_ms", ms(percentile(lat, 99)))
		if len(lat) > 0 {
			r.set(prefix+"_max_ms", ms(lat[len(lat)-1]))
		}
		r.set(prefix+"_missed", float64(missed))
	}
	lat, missed, err := measure(map[string]any{"list": "tools"}, func(s *stream) *counter { return &s.lists })
	if err != nil {
		r.note("fan-out not measured: %v", err)
		return
	}
	set("fanout", lat, missed)
	if cc.Subscribe == "" {
		return
	}
	lat, missed, err = measure(map[string]any{"uri": cc.Subscribe}, func(s *stream) *counter { return &s.updates })
	if err != nil {
		r.note("resource update fan-out not measured: %v", err)
		return
	}
	set("update", lat, missed)
}

// goStats is what --pprof tells of a Go server.
type goStats struct {
	heapInuse  uint64
	goroutines int64
}

// goMem reads the heap in use (after a collection) and the goroutine count of a Go server
// with net/http/pprof; ok is false without one.
func goMem(ctx context.Context, base string) (goStats, bool) {
	if base == "" {
		return goStats{}, false
	}
	heapURL, err := procstat.PprofHeapURL(base)
	if err != nil {
		return goStats{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// gc=1: the profile is taken after a collection, so the heap is what is live.
	m, err := procstat.ReadGoMem(ctx, http.DefaultClient, heapURL+"&gc=1")
	if err != nil {
		return goStats{}, false
	}
	n, err := procstat.ReadGoroutines(ctx, http.DefaultClient, base)
	if err != nil {
		return goStats{}, false
	}
	return goStats{heapInuse: m.HeapInuse, goroutines: n}, true
}

// errNoListen: the server does not hold a subscriptions/listen request open.
var errNoListen = errors.New("the server does not hold subscriptions/listen open")

// endpoint is where the clients connect, and how they speak.
type endpoint struct {
	addr      string // host:port to dial
	url       *url.URL
	header    http.Header
	timeout   time.Duration // per HTTP exchange while opening
	subscribe string
	hc        *http.Client // sends the DELETEs of the sessions, over a few kept connections
}

// close closes the connections the DELETEs kept.
func (ep *endpoint) close() { ep.hc.CloseIdleConnections() }

func newEndpoint(raw string, header http.Header) (*endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("clients: want an http:// URL, got %q", raw)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return &endpoint{addr: addr, url: u, header: header, timeout: 10 * time.Second, hc: hc}, nil
}

// counter counts one sort of notification a stream received, and when the last came.
type counter struct {
	n  atomic.Int64
	at atomic.Int64 // unix nanoseconds
}

func (c *counter) add(now int64) {
	c.at.Store(now)
	c.n.Add(1)
}

// stream is one open client: its connection, and for a stream what it has received.
type stream struct {
	conn    net.Conn
	session string        // the legacy session to delete at the end; "" for none
	body    io.Closer     // the stream's response body; nil for a session without one
	br      *bufio.Reader // reads it
	lists   counter       // notifications/*/list_changed
	updates counter       // notifications/resources/updated
	keeps   atomic.Int64
	gone    atomic.Bool // the server ended the stream
	closed  atomic.Bool // the client closed it
	done    chan struct{}
}

func (s *stream) isStream() bool { return s.body != nil }

func (s *stream) close() {
	if s.closed.Swap(true) {
		return
	}
	if s.conn != nil {
		s.conn.Close()
	}
	if s.done != nil {
		<-s.done
	}
}

// read counts the events of the stream until it ends.
func (s *stream) read(br *bufio.Reader) {
	defer close(s.done)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if !s.closed.Load() {
				s.gone.Store(true)
			}
			return
		}
		switch {
		case bytes.HasPrefix(line, []byte(":")):
			s.keeps.Add(1)
		case bytes.HasPrefix(line, []byte("data:")):
			now := time.Now().UnixNano()
			switch {
			case bytes.Contains(line, []byte(`list_changed"`)):
				s.lists.add(now)
			case bytes.Contains(line, []byte(`"notifications/resources/updated"`)):
				s.updates.add(now)
			}
		}
		for errors.Is(err, bufio.ErrBufferFull) { // the rest of a long line
			_, err = br.ReadSlice('\n')
		}
	}
}

// clientPool holds the open clients.
type clientPool struct {
	mu     sync.Mutex
	all    []*stream
	opened atomic.Int64
	failed atomic.Int64
}

// openAll opens n clients of kind, parallel at a time, and returns the first error.
func (p *clientPool) openAll(ctx context.Context, ep *endpoint, kind string, n, parallel int) error {
	var next atomic.Int64
	var errOnce sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Add(1)
		// Owned by openAll, which waits for it; it ends when every client is opened or ctx ends.
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				s, err := ep.open(ctx, kind, i)
				if err != nil {
					p.failed.Add(1)
					errOnce.Do(func() { first = err })
					continue
				}
				p.mu.Lock()
				p.all = append(p.all, s)
				p.mu.Unlock()
				p.opened.Add(1)
			}
		}()
	}
	wg.Wait()
	return first
}

func (p *clientPool) streams() []*stream {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*stream
	for _, s := range p.all {
		if s.isStream() {
			out = append(out, s)
		}
	}
	return out
}

func (p *clientPool) keepalives() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, s := range p.all {
		n += s.keeps.Load()
	}
	return n
}

func (p *clientPool) closeAll() {
	p.mu.Lock()
	all := slices.Clone(p.all)
	p.mu.Unlock()
	for _, s := range all {
		s.close()
	}
}

// deleteSessions ends the clients' legacy sessions, parallel at a time.
func (p *clientPool) deleteSessions(ctx context.Context, ep *endpoint, parallel int) {
	p.mu.Lock()
	all := slices.Clone(p.all)
	p.mu.Unlock()
	work := make(chan *stream)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		// Owned by deleteSessions, which waits for it; it ends when work is closed.
		go func() {
			defer wg.Done()
			for s := range work {
				ep.deleteSession(ctx, s)
			}
		}()
	}
	for _, s := range all {
		if s.session != "" {
			work <- s
		}
	}
	close(work)
	wg.Wait()
}

// open opens client i of kind (mixed: get for even i, listen for odd).
func (ep *endpoint) open(ctx context.Context, kind string, i int) (*stream, error) {
	if kind == KindMixed {
		kind = KindGet
		if i%2 == 1 {
			kind = KindListen
		}
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, ep.timeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", ep.addr)
	if err != nil {
		return nil, err
	}
	s := &stream{conn: conn}
	ok := false
	defer func() {
		if !ok {
			conn.Close()
		}
	}()
	br := bufio.NewReaderSize(conn, 2048)
	_ = conn.SetDeadline(time.Now().Add(ep.timeout))
	switch kind {
	case KindSession, KindGet:
		if err := ep.initialize(conn, br, s, kind == KindGet); err != nil {
			ep.deleteSession(ctx, s)
			return nil, err
		}
		if kind == KindSession {
			ok = true
			conn.Close() // the session stays; its connection goes
			s.conn = nil
			return s, nil
		}
		if err := ep.get(conn, br, s); err != nil {
			ep.deleteSession(ctx, s)
			return nil, err
		}
	case KindListen:
		if err := ep.listen(conn, br, s); err != nil {
			return nil, err
		}
	case KindSSE:
		if err := ep.sse(ctx, conn, br, s); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	_ = conn.SetDeadline(time.Time{})
	ok = true
	s.done = make(chan struct{})
	// Owned by s: it ends when the stream ends, which s.close brings about and waits for.
	go s.read(s.br)
	return s, nil
}

// exchange sends one request on conn and reads the response's head.
func (ep *endpoint) exchange(conn net.Conn, br *bufio.Reader, method string, body []byte, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequest(method, ep.url.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	for k, vs := range ep.header {
		req.Header[k] = vs
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(br, req)
}

// roundTrip is exchange followed by the whole body, which must come with the status want.
func (ep *endpoint) roundTrip(conn net.Conn, br *bufio.Reader, method string, body []byte, hdr map[string]string, want int) (*http.Response, []byte, error) {
	resp, err := ep.exchange(conn, br, method, body, hdr)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != want {
		return nil, nil, fmt.Errorf("%s: HTTP %d, want %d: %s", method, resp.StatusCode, want, shorten(string(bytes.TrimSpace(b)), 160))
	}
	return resp, b, nil
}

const legacyHeaders = "application/json, text/event-stream"

// initialize opens a legacy session on conn and keeps its id in s; with ep.subscribe, the
// session of a stream subscribes to that resource.
func (ep *endpoint) initialize(conn net.Conn, br *bufio.Reader, s *stream, stream bool) error {
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpbench-clients","version":"1"}}}`)
	resp, body, err := ep.roundTrip(conn, br, http.MethodPost, init, map[string]string{"Accept": legacyHeaders}, http.StatusOK)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if !bytes.Contains(body, []byte(`"protocolVersion"`)) {
		return fmt.Errorf("initialize: no result: %s", shorten(string(body), 160))
	}
	s.session = resp.Header.Get("Mcp-Session-Id")
	if s.session == "" {
		return errors.New("initialize: no Mcp-Session-Id")
	}
	hdr := map[string]string{"Accept": legacyHeaders, "Mcp-Session-Id": s.session, "MCP-Protocol-Version": "2025-11-25"}
	if _, _, err := ep.roundTrip(conn, br, http.MethodPost, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), hdr, http.StatusAccepted); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	if ep.subscribe != "" && stream {
		sub, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": map[string]string{"uri": ep.subscribe}})
		if _, body, err := ep.roundTrip(conn, br, http.MethodPost, sub, hdr, http.StatusOK); err != nil {
			return fmt.Errorf("resources/subscribe: %w", err)
		} else if !bytes.Contains(body, []byte(`"result"`)) {
			return fmt.Errorf("%w: the server answered resources/subscribe %s", errNoSubscribe, shorten(string(bytes.TrimSpace(body)), 160))
		}
	}
	return nil
}

// errNoGet: the server offers no standalone GET stream (the transport lets it answer 405).
var errNoGet = errors.New("the server offers no standalone GET stream")

// errNoSubscribe: the server refuses resources/subscribe.
var errNoSubscribe = errors.New("no resource subscriptions")

// get opens the session's standalone SSE stream on conn.
func (ep *endpoint) get(conn net.Conn, br *bufio.Reader, s *stream) error {
	resp, err := ep.exchange(conn, br, http.MethodGet, nil, map[string]string{
		"Accept": "text/event-stream", "Mcp-Session-Id": s.session, "MCP-Protocol-Version": "2025-11-25"})
	if err != nil {
		return fmt.Errorf("GET: %w", err)
	}
	if resp.StatusCode == http.StatusMethodNotAllowed {
		return fmt.Errorf("%w: GET answered 405", errNoGet)
	}
	if err := sseHead(resp); err != nil {
		return fmt.Errorf("GET: %w", err)
	}
	s.body, s.br = resp.Body, bufio.NewReaderSize(resp.Body, 1024)
	return nil
}

// listen opens a subscriptions/listen stream on conn and reads its acknowledgement.
func (ep *endpoint) listen(conn net.Conn, br *bufio.Reader, s *stream) error {
	filter := map[string]any{"toolsListChanged": true}
	if ep.subscribe != "" {
		filter["resourceSubscriptions"] = []string{ep.subscribe}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": filter,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    client.ModernVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}})
	resp, err := ep.exchange(conn, br, http.MethodPost, body, map[string]string{
		"Accept": legacyHeaders, "MCP-Protocol-Version": client.ModernVersion, "Mcp-Method": "subscriptions/listen"})
	if err != nil {
		return fmt.Errorf("subscriptions/listen: %w", err)
	}
	if err := sseHead(resp); err != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return fmt.Errorf("%w: %v: %s", errNoListen, err, shorten(string(bytes.TrimSpace(b)), 160))
	}
	// The first event is the acknowledgement.
	lr := bufio.NewReaderSize(resp.Body, 1024)
	for {
		line, err := lr.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("%w: the stream ended before its acknowledgement: %v", errNoListen, err)
		}
		if bytes.HasPrefix(line, []byte("data:")) {
			if !bytes.Contains(line, []byte("notifications/subscriptions/acknowledged")) {
				return fmt.Errorf("%w: its first event is not the acknowledgement: %s", errNoListen, shorten(string(line), 160))
			}
			break
		}
	}
	s.body, s.br = resp.Body, lr
	return nil
}

// errNoSSE: the server does not serve the HTTP+SSE transport on the endpoint.
var errNoSSE = errors.New("the server offers no HTTP+SSE stream on the endpoint")

// sse opens an HTTP+SSE session on conn: its stream, then its initialize, notifications/initialized
// and (with ep.subscribe) resources/subscribe POSTed to the URL the endpoint event names, each
// answer read from the stream.
func (ep *endpoint) sse(ctx context.Context, conn net.Conn, br *bufio.Reader, s *stream) error {
	resp, err := ep.exchange(conn, br, http.MethodGet, nil, map[string]string{"Accept": "text/event-stream"})
	if err != nil {
		return fmt.Errorf("GET: %w", err)
	}
	if err := sseHead(resp); err != nil {
		return fmt.Errorf("%w: GET: %v", errNoSSE, err)
	}
	lr := bufio.NewReaderSize(resp.Body, 1024)
	// data returns the data of the stream's next event, and its type.
	data := func() (event, data string, err error) {
		for {
			line, err := lr.ReadString('\n')
			if err != nil {
				return "", "", fmt.Errorf("the stream ended: %w", err)
			}
			line = strings.TrimRight(line, "\r\n")
			switch {
			case line == "" && data != "":
				return event, data, nil
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			}
		}
	}
	event, endpoint, err := data()
	if err != nil || event != "endpoint" {
		return fmt.Errorf("%w: the first event is not the endpoint (%q, %v)", errNoSSE, event, err)
	}
	u, err := ep.url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	post := func(body string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(body))
		if err != nil {
			return err
		}
		for k, vs := range ep.header {
			req.Header[k] = vs
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := ep.hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("POST: HTTP %d, want 202", resp.StatusCode)
		}
		return nil
	}
	answer := func(what, body string) (string, error) {
		if err := post(body); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		_, d, err := data()
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		return d, nil
	}
	if d, err := answer("initialize", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"mcpbench-clients","version":"1"}}}`); err != nil {
		return err
	} else if !strings.Contains(d, `"protocolVersion"`) {
		return fmt.Errorf("initialize: no result: %s", shorten(d, 160))
	}
	if err := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	if ep.subscribe != "" {
		sub, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": map[string]string{"uri": ep.subscribe}})
		if d, err := answer("resources/subscribe", string(sub)); err != nil {
			return err
		} else if !strings.Contains(d, `"result"`) {
			return fmt.Errorf("%w: the server answered resources/subscribe %s", errNoSubscribe, shorten(d, 160))
		}
	}
	s.body, s.br = resp.Body, lr
	return nil
}

// sseHead checks that a response starts an SSE stream.
func sseHead(resp *http.Response) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		return fmt.Errorf("HTTP %d %s, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return nil
}

// deleteSession ends s's legacy session on a connection of its own, if it has one.
func (ep *endpoint) deleteSession(ctx context.Context, s *stream) {
	if s.session == "" {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, ep.url.String(), nil)
	if err != nil {
		return
	}
	for k, vs := range ep.header {
		req.Header[k] = vs
	}
	req.Header.Set("Mcp-Session-Id", s.session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := ep.hc.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	s.session = ""
}
