package e2e_test

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/faults"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

var (
	chaosSeed     = flag.Uint64("chaos.seed", 0, "seed of TestChaos; 0 takes $TOOLGRAIN_CHAOS_SEED, or else a new one")
	chaosDuration = flag.Duration("chaos.duration", 0, "how long TestChaos drives the server; 0 means 5 s, or 30 s with TOOLGRAIN_LONG=1")
)

const (
	chaosConns     = 4   // stdio connections
	chaosSessions  = 2   // HTTP sessions
	chaosInFlight  = 250 // per connection: about 1,000 calls in flight in all
	chaosCanary    = "ARG-CANARY-"
	chaosMaxLine   = 64 << 10
	chaosHeapLimit = 512 << 20 // peak live heap over the start
	chaosHeapLeft  = 64 << 20  // live heap over the start once the server is closed
)

// TestChaos drives a real server over four stdio connections and two Streamable HTTP sessions
// (each HTTP call on its own POST) with a seeded random mix of valid calls, cancellations,
// failing and panicking calls, timeouts, panics in the engine's own code, duplicate ids and bad
// input, about 1,200 calls in flight, with an OnError that is slow and sometimes panics. It checks that every call that was not cancelled got exactly one
// answer, the right one, and every cancelled call none (only long sleeps are cancelled, long
// before their end, so every cancellation takes effect); that the internal-failure marker and
// the argument canaries never reach the wire; that every expected report reached OnError, once,
// with the right details and no arguments; that the heap stayed bounded; and that no goroutine
// is left once the server is closed.
//
// A failure prints its seed; replay it with
//
//	go test -run TestChaos -chaos.seed=N ./e2e
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: 5 s, or 30 s with TOOLGRAIN_LONG=1")
	}
	duration := *chaosDuration
	if duration == 0 {
		duration = 5 * time.Second
		if longTests() {
			duration = 30 * time.Second
		}
	}
	seed := *chaosSeed
	if seed == 0 {
		seed, _ = strconv.ParseUint(os.Getenv("TOOLGRAIN_CHAOS_SEED"), 10, 64)
	}
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("chaos seed %d, %s, %d stdio connections and %d HTTP sessions", seed, duration, chaosConns, chaosSessions)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("TestChaos failed with seed %d; replay: go test -run TestChaos -chaos.seed=%d ./e2e", seed, seed)
		}
	})
	leaks := goleak.IgnoreCurrent()
	heapStart := newHeapPeak()

	diag := newChaosDiagnostics()
	restore := faults.Set(func(point, tool string) {
		if point == faults.RequestAnswer && tool == "probe" {
			panic("engine bug: " + demo.Marker)
		}
	})
	defer restore()
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools:       append(demo.Tools(), chaosTools()...),
		OnError:     diag.onError,
		Limits:      toolgrain.LimitsConfig{MaxMessageSize: chaosMaxLine},
		Diagnostics: toolgrain.DiagnosticsConfig{Queue: 1 << 20, CallbackTimeout: 15 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}

	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // owned by the test: ends when stopSampling closes
		defer close(sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				heapStart.sample()
			case <-stopSampling:
				return
			}
		}
	}()

	deadline := time.Now().Add(duration)
	conns := make([]*chaosConn, chaosConns)
	var wg sync.WaitGroup
	for i := range conns {
		conns[i] = newChaosConn(t, srv, i, seed, diag)
		wg.Add(1)
		go func() { // owned by the test, which waits for it
			defer wg.Done()
			conns[i].drive(deadline)
		}()
	}
	web := newChaosHTTP(srv)
	sessions := make([]*chaosSession, chaosSessions)
	for i := range sessions {
		sessions[i] = newChaosSession(web, i, seed, diag)
		wg.Add(1)
		go func() { // owned by the test, which waits for it
			defer wg.Done()
			sessions[i].drive(deadline)
		}()
	}
	wg.Wait()
	for _, c := range conns {
		c.finish()
	}
	close(stopSampling)
	<-sampled

	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	web.close()
	heapStart.check(t, chaosHeapLimit, "peak during the run")
	var total chaosCounts
	for _, c := range conns {
		for _, v := range c.violations {
			t.Error(v)
		}
		total.add(&c.counts)
	}
	for _, s := range sessions {
		for _, v := range s.violations {
			t.Error(v)
		}
		total.add(&s.counts)
	}
	diag.check(t, srv.Stats())
	t.Logf("calls %d (answered %d, cancelled %d; about %d in flight at the peak), bad lines %d, duplicates %d, reports %d (callback panics %d, abandoned %d), peak heap +%d MiB",
		total.calls, total.answered, total.cancelled, total.peakOpen, total.bad, total.duplicates, len(diag.expected),
		srv.Stats().CallbackPanics, srv.Stats().AbandonedCallbacks, (heapStart.peak-min(heapStart.base, heapStart.peak))>>20)
	if total.cancelled == 0 || total.answered == 0 {
		t.Errorf("the run exercised too little: %+v", total)
	}

	// Goroutines that were told to stop (closed connections, idle workers) may take a moment to
	// return on a loaded machine: wait for them, under the watchdog, before judging.
	leakOpts := []goleak.Option{leaks, goleak.IgnoreTopFunction(mcptest.DeadLetterThrottle)}
	for wait := time.Now().Add(mcptest.Watchdog); goleak.Find(leakOpts...) != nil && time.Now().Before(wait); {
		time.Sleep(50 * time.Millisecond)
	}
	goleak.VerifyNone(t, leakOpts...)

	diag.release()
	for _, c := range conns {
		c.calls = nil
	}
	after := newHeapPeak()
	if grew := after.base - min(heapStart.base, after.base); grew > chaosHeapLeft {
		t.Errorf("the heap is %d MiB larger after the run than before it", grew>>20)
	}
}

// chaosTools are the tools the chaos test adds to the demonstration set.
func chaosTools() []tools.Tool {
	type flakyIn struct {
		Secret string `json:"secret"`
		Mode   string `json:"mode"`
	}
	return []tools.Tool{
		{
			Name:        "flaky",
			Description: "Fails in the chosen way; its secret argument must never be reported.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"secret":{"type":"string"},"mode":{"enum":["ok","error","panic"]}},"required":["secret","mode"]}`),
			Handler: tools.Func(func(ctx context.Context, in flakyIn) (*tools.Result, error) {
				switch in.Mode {
				case "error":
					return nil, fmt.Errorf("flaky failed: %s", demo.Marker)
				case "panic":
					panic("flaky panicked: " + demo.Marker)
				}
				return tools.TextResult("ok"), nil
			}),
		},
		{
			Name:        "hang",
			Description: "Never returns by itself: every call ends at its timeout.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"secret":{"type":"string"}}}`),
			Timeout:     50 * time.Millisecond,
			Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}),
		},
		{
			Name:           "probe",
			Description:    "Answers, but the engine fails on the way (a test fault).",
			MaxConcurrency: 4,
			Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
				return tools.TextResult("unreachable"), nil
			}),
		},
	}
}

// chaosDiagnostics is the slow, sometimes panicking OnError of the chaos test, and the list of
// the reports it expects.
type chaosDiagnostics struct {
	mu       sync.Mutex
	expected map[string]string // request id -> tool, "" for a report with no details
	got      map[string]int
	bad      []string
	release  func()
}

func newChaosDiagnostics() *chaosDiagnostics {
	d := &chaosDiagnostics{expected: map[string]string{}, got: map[string]int{}}
	d.release = func() {
		d.mu.Lock()
		d.expected, d.got = nil, nil
		d.mu.Unlock()
	}
	return d
}

func (d *chaosDiagnostics) expect(id, tool string) {
	d.mu.Lock()
	d.expected[id] = tool
	d.mu.Unlock()
}

func (d *chaosDiagnostics) onError(err error, details *diagnostics.ToolErrorDetails) {
	key := "engine:" + err.Error() // an engine failure names no request: count it by kind
	if details != nil {
		key = details.Request().ID().String()
		if k, err := strconv.Unquote(key); err == nil {
			key = k
		}
	}
	seen := fmt.Sprintf("%v %+v %s %s %s", err, err, details.ToolName(), details.Request().ID(), details.Request().Meta())
	d.mu.Lock()
	if strings.Contains(seen, chaosCanary) {
		d.bad = append(d.bad, "a report carries an argument: "+seen)
	}
	if details != nil {
		if want, ok := d.expected[key]; !ok || want != details.ToolName() || details.Request().ToolName() != want {
			d.bad = append(d.bad, fmt.Sprintf("unexpected report for %s (tool %q): %v", key, details.ToolName(), err))
		}
	} else if !strings.Contains(err.Error(), "internal error: request actor panicked") {
		d.bad = append(d.bad, fmt.Sprintf("unexpected report with no details: %v", err))
	}
	d.got[key]++
	d.mu.Unlock()

	h := fnv.New32a()
	h.Write([]byte(key))
	switch v := h.Sum32() % 100; {
	case v < 3:
		panic("OnError exploded")
	case v < 6:
		time.Sleep(25 * time.Millisecond) // past CallbackTimeout: abandoned
	case v < 30:
		time.Sleep(time.Millisecond)
	}
}

func (d *chaosDiagnostics) check(t *testing.T, st toolgrain.Stats) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.bad {
		t.Error(b)
	}
	engineFailures := 0
	for id, tool := range d.expected {
		if tool == "" {
			engineFailures++
			continue
		}
		if n := d.got[id]; n != 1 {
			t.Errorf("request %s of %s: %d reports, want 1", id, tool, n)
		}
	}
	if n := d.got["engine:internal error: request actor panicked: engine bug: "+demo.Marker]; n != engineFailures {
		t.Errorf("%d engine failures reported, want %d", n, engineFailures)
	}
	if st.DroppedReports != 0 {
		t.Errorf("%d reports dropped", st.DroppedReports)
	}
}

type chaosCounts struct{ calls, answered, cancelled, bad, duplicates, peakOpen int }

func (c *chaosCounts) add(o *chaosCounts) {
	c.peakOpen += o.peakOpen
	c.calls += o.calls
	c.answered += o.answered
	c.cancelled += o.cancelled
	c.bad += o.bad
	c.duplicates += o.duplicates
}

// chaosCall is what one request of the chaos test expects back.
type chaosCall struct {
	want       string // the exact answer; "" for a cancelled call, which expects none
	cancelled  bool   // its cancellation was sent
	answered   bool
	duplicates int // answers still expected to duplicates of its id
}

// chaosConn drives one stdio connection.
type chaosConn struct {
	t    *testing.T
	name string
	rng  *rand.Rand
	diag *chaosDiagnostics
	in   *io.PipeWriter
	w    *bufio.Writer
	done chan error
	read chan struct{} // closed when the reading goroutine has ended

	mu          sync.Mutex
	calls       map[string]*chaosCall // by id key (ids are strings without escapes)
	open        int                   // calls that still expect an answer or a cancellation
	nullErrors  int                   // errors with id null still expected
	violations  []string
	counts      chaosCounts
	progress    atomic.Int64
	answeredSig chan struct{} // size 1

	seq     int
	cancels cancelQueue
}

func newChaosConn(t *testing.T, srv *toolgrain.Server, i int, seed uint64, diag *chaosDiagnostics) *chaosConn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &chaosConn{
		t: t, name: fmt.Sprintf("c%d", i), rng: rand.New(rand.NewPCG(seed, uint64(i))), diag: diag,
		in: inW, w: bufio.NewWriterSize(inW, 64<<10), done: make(chan error, 1), read: make(chan struct{}),
		calls: map[string]*chaosCall{}, answeredSig: make(chan struct{}, 1),
	}
	go func() { // owned by finish, which waits for it
		err := srv.ServeStdio(context.Background(), inR, outW)
		_ = outW.Close()
		c.done <- err
	}()
	go func() { // owned by finish: ends when the server closes the output
		defer close(c.read)
		r := bufio.NewReaderSize(outR, 64<<10)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				c.receive(strings.TrimSuffix(line, "\n"))
			}
			if err != nil {
				return
			}
		}
	}()
	c.send(mcptest.InitRequest)
	c.expectAnswerPrefix("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *chaosConn) violate(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.violations) < 20 {
		c.violations = append(c.violations, c.name+": "+fmt.Sprintf(format, args...))
	}
}

func (c *chaosConn) send(line string) {
	if _, err := c.w.WriteString(line + "\n"); err != nil {
		c.violate("write: %v", err)
	}
}

func (c *chaosConn) flush() {
	if err := c.w.Flush(); err != nil {
		c.violate("write: %v", err)
	}
}

// expectAnswerPrefix waits for the initialize answer, which is checked by its prefix only.
func (c *chaosConn) expectAnswerPrefix(id string) {
	c.mu.Lock()
	c.calls[id] = &chaosCall{want: "initialize"}
	c.open++
	c.mu.Unlock()
	c.flush()
	c.waitOpen(0)
}

func (c *chaosConn) receive(line string) {
	if strings.Contains(line, demo.Marker) || strings.Contains(line, "SECRET") {
		c.violate("internal detail on the wire: %.300s", line)
	}
	if strings.Contains(line, "flaky-"+chaosCanary) {
		c.violate("a flaky argument on the wire: %.300s", line)
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		c.violate("invalid JSON on the wire: %v: %.300s", err, line)
		return
	}
	if m.Method == "notifications/progress" {
		c.progress.Add(1)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if string(m.ID) == "null" {
		if c.nullErrors--; c.nullErrors < 0 {
			c.violations = append(c.violations, c.name+": an unexpected error with id null: "+line)
		}
		c.open--
		c.signal()
		return
	}
	id := string(m.ID) // the initialize request's integer id
	_ = json.Unmarshal(m.ID, &id)
	call, ok := c.calls[id]
	switch {
	case !ok:
		c.violations = append(c.violations, fmt.Sprintf("%s: an answer for unknown id %s: %.300s", c.name, m.ID, line))
	case call.duplicates > 0 && line == duplicateError(id):
		call.duplicates--
		c.open--
	case call.cancelled || call.want == "":
		c.violations = append(c.violations, fmt.Sprintf("%s: an answer for the cancelled call %s: %.300s", c.name, id, line))
	case call.answered:
		c.violations = append(c.violations, fmt.Sprintf("%s: a second answer for %s: %.300s", c.name, id, line))
	case call.want == "initialize" && strings.HasPrefix(line, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion"`):
		call.answered = true
		c.open--
	case line != call.want:
		c.violations = append(c.violations, fmt.Sprintf("%s: call %s\n got: %.300s\nwant: %.300s", c.name, id, line, call.want))
		call.answered = true
		c.open--
	default:
		call.answered = true
		c.counts.answered++
		c.open--
	}
	c.signal()
}

func (c *chaosConn) signal() {
	select {
	case c.answeredSig <- struct{}{}:
	default:
	}
}

func duplicateError(id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"error":{"code":-32600,"message":"Invalid Request: id \"%s\" is already in use by a request in flight"}}`, id, id)
}

// waitOpen waits until at most n calls expect something, under the watchdog.
func (c *chaosConn) waitOpen(n int) bool {
	deadline := time.After(mcptest.Watchdog)
	for {
		c.mu.Lock()
		open := c.open
		c.mu.Unlock()
		if open <= n {
			return true
		}
		select {
		case <-c.answeredSig:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			c.mu.Lock()
			var missing []string
			for id, call := range c.calls {
				if !call.answered && !call.cancelled && call.want != "" || call.duplicates > 0 {
					missing = append(missing, id)
				}
			}
			c.mu.Unlock()
			c.violate("%d calls still unanswered after %s, among them %.20q", open, mcptest.Watchdog, missing)
			return false
		}
	}
}

// expectCall records a request and what it expects; report names the tool whose failure it
// reports ("-" for none, "" for a report with no details).
func (c *chaosConn) expectCall(id, want, report string) {
	c.mu.Lock()
	c.calls[id] = &chaosCall{want: want}
	c.open++
	c.counts.calls++
	c.mu.Unlock()
	if report != "-" {
		c.diag.expect(id, report)
	}
}

func (c *chaosConn) nextID() string {
	c.seq++
	return fmt.Sprintf("%s-%d", c.name, c.seq)
}

func (c *chaosConn) drive(deadline time.Time) {
	for time.Now().Before(deadline) {
		c.sendDueCancels(time.Now())
		c.mu.Lock()
		open := c.open
		c.counts.peakOpen = max(c.counts.peakOpen, open)
		c.mu.Unlock()
		if open >= chaosInFlight {
			c.flush()
			select {
			case <-c.answeredSig:
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		c.step()
		if c.rng.IntN(8) == 0 {
			c.flush()
		}
	}
	// Wind down: cancel every long sleep, then wait for every other answer.
	c.sendDueCancels(time.Now().Add(time.Hour))
	c.flush()
	c.waitOpen(0)
}

// step sends one randomly chosen message.
func (c *chaosConn) step() {
	id := c.nextID()
	q := strconv.Quote(id)
	result := func(body string) string { return `{"jsonrpc":"2.0","id":` + q + `,"result":` + body + `}` }
	switch n := c.rng.IntN(100); {
	case n < 18:
		text := chaosCanary + id
		c.expectCall(id, echoResult(q, text), "-")
		c.send(call(q, "echo", `{"text":"`+text+`"}`))
	case n < 22:
		c.expectCall(id, result(`{"content":[{"type":"text","text":"{\"greeting\":\"Hello, `+id+`!\"}"}],"structuredContent":{"greeting":"Hello, `+id+`!"}}`), "-")
		c.send(call(q, "greet", `{"name":"`+id+`"}`))
	case n < 34:
		c.expectCall(id, result(`{"content":[{"type":"text","text":"slept"}]}`), "-")
		c.send(call(q, "sleep", fmt.Sprintf(`{"ms":%d}`, c.rng.IntN(30))))
	case n < 54: // a long sleep, cancelled long before its end
		c.expectCall(id, "", "-")
		if c.rng.IntN(10) == 0 {
			c.send(`{"jsonrpc":"2.0","id":` + q + `,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":` + q + `}}}`)
		} else {
			c.send(call(q, "sleep", longSleep))
		}
		heap.Push(&c.cancels, cancelAt{at: time.Now().Add(time.Duration(200+c.rng.IntN(2800)) * time.Millisecond), id: id})
	case n < 56: // a duplicate of a long sleep's id, while it is surely in flight
		if len(c.cancels) == 0 {
			return
		}
		dup := c.cancels[c.rng.IntN(len(c.cancels))].id
		c.mu.Lock()
		c.calls[dup].duplicates++
		c.open++
		c.counts.duplicates++
		c.mu.Unlock()
		c.send(call(strconv.Quote(dup), "echo", `{"text":"dup"}`))
	case n < 63:
		mode := []string{"error", "panic", "bad-output", "provider"}[c.rng.IntN(4)]
		c.expectCall(id, result(failedResult), "fail")
		c.send(call(q, "fail", `{"mode":"`+mode+`"}`))
	case n < 65:
		c.expectCall(id, result(`{"content":[{"type":"text","text":"public failure message"}],"isError":true}`), "-")
		c.send(call(q, "fail", `{"mode":"result"}`))
	case n < 72:
		mode := []string{"ok", "ok", "error", "panic"}[c.rng.IntN(4)]
		if mode == "ok" {
			c.expectCall(id, result(`{"content":[{"type":"text","text":"ok"}]}`), "-")
		} else {
			c.expectCall(id, result(failedResult), "flaky")
		}
		c.send(call(q, "flaky", `{"secret":"flaky-`+chaosCanary+id+`","mode":"`+mode+`"}`))
	case n < 73:
		c.expectCall(id, result(failedResult), "hang")
		c.send(call(q, "hang", `{"secret":"flaky-`+chaosCanary+id+`"}`))
	case n < 74:
		c.expectCall(id, `{"jsonrpc":"2.0","id":`+q+`,"error":{"code":-32603,"message":"Internal error"}}`, "")
		c.send(call(q, "probe", `{}`))
	case n < 79:
		c.expectCall(id, result(`{"content":[{"type":"text","text":"invalid arguments: ms: must be <= 600000"}],"isError":true}`), "-")
		c.send(call(q, "sleep", `{"ms":600001}`))
	case n < 81:
		c.expectCall(id, `{"jsonrpc":"2.0","id":`+q+`,"error":{"code":-32602,"message":"Invalid params: unknown tool \"nope\""}}`, "-")
		c.send(call(q, "nope", `{}`))
	case n < 85:
		c.expectCall(id, `{"jsonrpc":"2.0","id":`+q+`,"result":{}}`, "-")
		c.send(`{"jsonrpc":"2.0","id":` + q + `,"method":"ping"}`)
	case n < 90:
		c.sendBad(id, q)
	default:
		c.send(mcptest.CancelFor(strconv.Quote("unknown-" + id)))
	}
}

// sendBad sends a line the server must refuse.
func (c *chaosConn) sendBad(id, q string) {
	c.mu.Lock()
	c.counts.bad++
	c.mu.Unlock()
	nullError := func(line string) {
		c.mu.Lock()
		c.nullErrors++
		c.open++
		c.mu.Unlock()
		c.send(line)
	}
	switch c.rng.IntN(6) {
	case 0:
		nullError(`{"jsonrpc":"2.0","id":` + q + `,"method":`)
	case 1:
		nullError(`[{"jsonrpc":"2.0","id":` + q + `,"method":"ping"}]`)
	case 2:
		nullError("\x00" + id)
	case 3:
		nullError(call(q, "echo", `{"text":"`+strings.Repeat("x", chaosMaxLine)+`"}`))
	case 4:
		c.expectCall(id, `{"jsonrpc":"2.0","id":`+q+`,"error":{"code":-32600,"message":"Invalid Request: message is not valid UTF-8"}}`, "-")
		c.send(call(q, "echo", "{\"text\":\"\xff\"}"))
	case 5:
		c.expectCall(id, `{"jsonrpc":"2.0","id":`+q+`,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}`, "-")
		c.send(`{"jsonrpc":"1.0","id":` + q + `,"method":"ping"}`)
	}
}

func (c *chaosConn) sendDueCancels(now time.Time) {
	for len(c.cancels) > 0 && !c.cancels[0].at.After(now) {
		next := heap.Pop(&c.cancels).(cancelAt)
		c.mu.Lock()
		call := c.calls[next.id]
		call.cancelled = true
		c.open--
		c.counts.cancelled++
		c.mu.Unlock()
		c.send(mcptest.CancelFor(strconv.Quote(next.id)))
	}
}

// finish ends the input and waits for the server to end the connection; nothing may arrive
// after the last expected answer.
func (c *chaosConn) finish() {
	_ = c.in.Close()
	select {
	case err := <-c.done:
		if err != nil {
			c.violate("ServeStdio: %v", err)
		}
	case <-time.After(mcptest.Watchdog):
		c.violate("ServeStdio did not return after EOF")
	}
	<-c.read
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open != 0 || c.nullErrors != 0 {
		c.violations = append(c.violations, fmt.Sprintf("%s: %d answers and %d errors with id null missing at the end", c.name, c.open, c.nullErrors))
	}
}

type cancelAt struct {
	at time.Time
	id string
}

// cancelQueue is a min-heap of pending cancellations by time.
type cancelQueue []cancelAt

func (q cancelQueue) Len() int           { return len(q) }
func (q cancelQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q cancelQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *cancelQueue) Push(x any)        { *q = append(*q, x.(cancelAt)) }
func (q *cancelQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
