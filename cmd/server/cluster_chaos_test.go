package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/demo"
)

var (
	clusterChaosSeed     = flag.Uint64("chaos.seed", 0, "seed of TestClusterChaos; 0 takes $TOOLGRAIN_CHAOS_SEED, or else a new one")
	clusterChaosDuration = flag.Duration("chaos.duration", 0, "how long TestClusterChaos drives the cluster; 0 means 5 s, or 10 s with TOOLGRAIN_LONG=1")
)

const (
	// Drivers and the calls each keeps in flight: 4 legacy sessions and 4 modern clients, about
	// 48 calls in flight through the proxy.
	clusterChaosLegacy   = 4
	clusterChaosModern   = 4
	clusterChaosInFlight = 6
	clusterChaosCanary   = "ARG-CANARY-"
	// clusterChaosWait bounds one call, a cancelled stream's end and the settling afterwards.
	clusterChaosWait = 30 * time.Second
	// clusterChaosCancelEnd bounds the end of a cancelled legacy call's stream.
	clusterChaosCancelEnd = 10 * time.Second
)

// TestClusterChaos is TestChaos across a cluster: 3 members of the real (race-built) server
// behind the round-robin proxy, so that every request lands on the next member. Legacy
// sessions (homed on every member, their requests forwarded to the home) and modern requests
// (served where they land) are driven concurrently with a seeded mix of echo (the exact text
// back), sleep with progress (progress before the result, increasing), every mode of the fail
// tool (the public result exactly; unexpected failures only as "Tool execution failed"),
// invalid arguments (the validation feedback exactly, never the value) and cancellations (a
// legacy call cancelled by notifications/cancelled posted to another member than the one
// holding its stream: no response on that stream ever; a modern call cancelled by closing its
// stream). Afterwards: every uncancelled call was answered exactly once, nothing but progress
// came after a cancellation, no private text or argument canary reached a response, the shared
// diagnostics file holds exactly one report per unexpected failure and no arguments, no member
// logged a race in Toolgrain code, and no member has a forward in progress.
//
// The run lasts 5 s (10 s with TOOLGRAIN_LONG=1, as .ci/run sets): on a 2-core machine the
// three race-built members and the test share the cores, and 5 s gives each kind of call and
// cancellation a dozen times or more, with every member forwarding and serving forwarded
// requests, while keeping the package's test time (each cluster test starts its own members)
// short. A failure prints its seed;
// replay it with
//
//	go test -race -run TestClusterChaos -chaos.seed=N ./cmd/server
func TestClusterChaos(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("chaos test across a cluster: 5 s after the members start")
	}
	duration := *clusterChaosDuration
	if duration == 0 {
		duration = 5 * time.Second
		if longTests() {
			duration = 10 * time.Second
		}
	}
	seed := *clusterChaosSeed
	if seed == 0 {
		seed, _ = strconv.ParseUint(os.Getenv("TOOLGRAIN_CHAOS_SEED"), 10, 64)
	}
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("cluster chaos seed %d, %s, %d legacy sessions and %d modern clients, %d calls in flight each",
		seed, duration, clusterChaosLegacy, clusterChaosModern, clusterChaosInFlight)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("TestClusterChaos failed with seed %d; replay: go test -race -run TestClusterChaos -chaos.seed=%d ./cmd/server", seed, seed)
		}
	})

	diag := t.TempDir() + "/diag.jsonl"
	c := startCluster(t, 3, "--diagnostics-file", diag)
	r := &chaosRun{c: c, reports: map[string]bool{}}

	var drivers []*chaosDriver
	homes := map[string]bool{}
	for i := 0; i < clusterChaosLegacy; i++ {
		sid, _ := c.initialize(c.proxy.URL)
		homes[homeOf(sid)] = true
		drivers = append(drivers, &chaosDriver{r: r, name: "L" + strconv.Itoa(i), session: sid, rng: rand.New(rand.NewPCG(seed, uint64(i)))})
	}
	if len(homes) != 3 {
		t.Fatalf("the legacy sessions are homed on %d members, want 3", len(homes))
	}
	for i := 0; i < clusterChaosModern; i++ {
		drivers = append(drivers, &chaosDriver{r: r, name: "M" + strconv.Itoa(i), rng: rand.New(rand.NewPCG(seed, uint64(100+i)))})
	}

	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for _, d := range drivers {
		wg.Add(1)
		// Owned by the test, which waits for it; it stops at the deadline.
		go func() { defer wg.Done(); d.drive(deadline) }()
	}
	wg.Wait()

	r.mu.Lock()
	t.Logf("%+v", r.counts)
	for _, v := range r.violations {
		t.Error(v)
	}
	r.mu.Unlock()
	if r.counts.answered == 0 || r.counts.cancelled == 0 || r.counts.progressed == 0 || len(r.reports) == 0 {
		t.Errorf("the mix missed a kind of call: %+v", r.counts)
	}

	// The reports are written by each home's diagnostics actor after the answer: wait for them.
	want := len(r.reports)
	var lines []string
	for wait := time.Now().Add(clusterChaosWait); ; time.Sleep(100 * time.Millisecond) {
		data, _ := os.ReadFile(diag)
		lines = strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(data) == 0 {
			lines = nil
		}
		if len(lines) >= want || time.Now().After(wait) {
			break
		}
	}
	time.Sleep(200 * time.Millisecond) // a report too many would come now
	data, _ := os.ReadFile(diag)
	if s := strings.TrimSpace(string(data)); s != "" {
		lines = strings.Split(s, "\n")
	}
	seen := map[string]int{}
	allowed := map[string]bool{"time": true, "error": true, "tool": true, "request_id": true, "method": true}
	for _, line := range lines {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("diagnostics line %q: %v", line, err)
			continue
		}
		for k := range rec {
			if !allowed[k] {
				t.Errorf("diagnostics line has %q: %s", k, line)
			}
		}
		if strings.Contains(line, clusterChaosCanary) || strings.Contains(line, `"mode"`) || strings.Contains(line, "arguments") {
			t.Errorf("diagnostics line carries arguments: %s", line)
		}
		var id, errText string
		_ = json.Unmarshal(rec["request_id"], &id)
		_ = json.Unmarshal(rec["error"], &errText)
		if string(rec["tool"]) != `"fail"` || !r.reports[id] || errText == "" {
			t.Errorf("diagnostics line is not the report of an unexpected failure of this run: %s", line)
		}
		seen[id]++
	}
	for id := range r.reports {
		if seen[id] != 1 {
			t.Errorf("call %s failed unexpectedly: %d reports, want 1", id, seen[id])
		}
	}
	t.Logf("%d unexpected failures, %d reports in the diagnostics file", want, len(lines))

	for _, d := range drivers {
		if d.session != "" {
			c.expect(c.proxy.URL, request{method: http.MethodDelete, session: d.session}, 204, "")
		}
	}
	// No forward is left in progress on any member: the streams of cancelled calls ended too.
	for _, m := range c.members {
		for wait := time.Now().Add(clusterChaosWait); ; time.Sleep(100 * time.Millisecond) {
			v := memberView(t, m)
			if v.Streams == 0 && v.Homes == 0 {
				t.Logf("member %d: forwarded %d, served %d forwarded requests", m.i, v.Forwarded, v.Served)
				break
			}
			if time.Now().After(wait) {
				t.Errorf("member %d: %d forwards and %d forwarded requests still in progress %v after the run", m.i, v.Streams, v.Homes, clusterChaosWait)
				break
			}
		}
	}
	// The members' race reports are checked by startCluster's cleanup (ourRaces).
}

// chaosRun is what the drivers of TestClusterChaos share.
type chaosRun struct {
	c *testCluster

	mu         sync.Mutex
	violations []string
	reports    map[string]bool // ids of the calls that failed unexpectedly: one report each
	counts     struct {
		answered, progressed, publicFailures, unexpected, invalid, cancelled int
	}
}

func (r *chaosRun) violate(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.violations) < 30 {
		r.violations = append(r.violations, fmt.Sprintf(format, args...))
	}
}

// checkWire reports a private text or an argument canary in anything a client received.
func (r *chaosRun) checkWire(id, s string) {
	if strings.Contains(s, demo.Marker) || strings.Contains(s, clusterChaosCanary) {
		r.violate("call %s: a secret on the wire: %.300s", id, s)
	}
}

func (r *chaosRun) count(f func(*chaosRun)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// chaosDriver drives one legacy session (session != "") or one modern client.
type chaosDriver struct {
	r       *chaosRun
	name    string
	session string
	rng     *rand.Rand
	seq     int
}

func (d *chaosDriver) drive(deadline time.Time) {
	sem := make(chan struct{}, clusterChaosInFlight)
	var wg sync.WaitGroup
	for time.Now().Before(deadline) {
		sem <- struct{}{}
		op := d.next()
		wg.Add(1)
		// Owned by drive, which waits for it; clusterChaosWait bounds it.
		go func() { defer wg.Done(); defer func() { <-sem }(); op() }()
	}
	wg.Wait()
}

const (
	chaosModernEnv  = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	chaosModernMeta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"toolgrain-demo","version":"0.1.0"}}`
)

// body is a tools/call of tool with args; progress, if not "", is its progressToken.
func (d *chaosDriver) body(q, tool, args, progress string) string {
	var meta []string
	if progress != "" {
		meta = append(meta, `"progressToken":`+progress)
	}
	if d.session == "" {
		meta = append(meta, chaosModernEnv)
	}
	m := ""
	if len(meta) > 0 {
		m = `,"_meta":{` + strings.Join(meta, ",") + `}`
	}
	return `{"jsonrpc":"2.0","id":` + q + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + m + `}}`
}

// result is the exact answer with id q and a result of the given members.
func (d *chaosDriver) result(q, members string) string {
	if d.session == "" {
		return `{"jsonrpc":"2.0","id":` + q + `,"result":{"resultType":"complete",` + members + `,` + chaosModernMeta + `}}`
	}
	return `{"jsonrpc":"2.0","id":` + q + `,"result":{` + members + `}}`
}

func (d *chaosDriver) request(tool, body string) request {
	if d.session == "" {
		return request{modern: "tools/call", name: tool, body: body}
	}
	return request{session: d.session, body: body}
}

// next picks one call, with every random choice made here, on the driving goroutine.
func (d *chaosDriver) next() func() {
	d.seq++
	id := d.name + "-" + strconv.Itoa(d.seq)
	q := strconv.Quote(id)
	text := func(s string, isError bool) string {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as the server writes text: "<=" stays as it is
		_ = enc.Encode(s)
		m := `"content":[{"type":"text","text":` + strings.TrimSuffix(b.String(), "\n") + `}]`
		if isError {
			m += `,"isError":true`
		}
		return m
	}
	switch n := d.rng.IntN(100); {
	case n < 25:
		s := fmt.Sprintf("héllo \"%s\" %d", id, d.rng.IntN(1000))
		args, _ := json.Marshal(map[string]string{"text": s})
		return func() { d.expect(id, "echo", d.body(q, "echo", string(args), ""), d.result(q, text(s, false))) }
	case n < 40:
		ms := 400 + d.rng.IntN(400)
		return func() { d.progressed(id, q, ms) }
	case n < 45:
		return func() {
			d.expect(id, "fail", d.body(q, "fail", `{"mode":"result"}`, ""), d.result(q, text("public failure message", true)))
			d.r.count(func(r *chaosRun) { r.counts.publicFailures++ })
		}
	case n < 65:
		mode := []string{"error", "panic", "bad-output", "provider"}[d.rng.IntN(4)]
		d.r.count(func(r *chaosRun) { r.reports[id] = true })
		return func() {
			d.expect(id, "fail", d.body(q, "fail", `{"mode":"`+mode+`"}`, ""), d.result(q, text("Tool execution failed", true)))
			d.r.count(func(r *chaosRun) { r.counts.unexpected++ })
		}
	case n < 80:
		canary := clusterChaosCanary + id
		v := []struct{ tool, args, feedback string }{
			{"fail", `{"mode":"` + canary + `"}`, `mode: must be one of "result", "error", "panic", "bad-output", "provider"`},
			{"echo", `{"text":"x","secret":"` + canary + `"}`, `secret: unexpected property`},
			{"sleep", `{"ms":"` + canary + `"}`, `ms: must be integer, got string`},
			{"sleep", `{"ms":600001}`, `ms: must be <= 600000`},
		}[d.rng.IntN(4)]
		return func() {
			d.expect(id, v.tool, d.body(q, v.tool, v.args, ""), d.result(q, text("invalid arguments: "+v.feedback, true)))
			d.r.count(func(r *chaosRun) { r.counts.invalid++ })
		}
	default:
		return func() { d.cancelled(id, q) }
	}
}

// expect sends a call through the proxy and checks its exact answer.
func (d *chaosDriver) expect(id, tool, body, want string) {
	ctx, cancel := context.WithTimeout(context.Background(), clusterChaosWait)
	defer cancel()
	resp, err := d.r.c.do(ctx, d.r.c.proxy.URL, d.request(tool, body))
	if err != nil {
		d.r.violate("call %s: %v", id, err)
		return
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d.r.checkWire(id, string(data))
	if err != nil || resp.StatusCode != 200 || string(data) != want {
		d.r.violate("call %s (member %s): %.200s\n got: %d %.400s %v\nwant: 200 %.400s", id, resp.Header.Get("X-Test-Backend"), body, resp.StatusCode, data, err, want)
		return
	}
	d.r.count(func(r *chaosRun) { r.counts.answered++ })
}

// stream opens a call's SSE stream through the proxy; stop closes it.
func (d *chaosDriver) stream(id, tool, body string) (events <-chan event, backend string, stop func(), ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), clusterChaosWait)
	resp, err := d.r.c.do(ctx, d.r.c.proxy.URL, d.request(tool, body))
	if err != nil {
		cancel()
		d.r.violate("call %s: %v", id, err)
		return nil, "", nil, false
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		d.r.checkWire(id, string(data))
		d.r.violate("call %s: want an event stream, got %d %.300s", id, resp.StatusCode, data)
		return nil, "", nil, false
	}
	out := make(chan event, 64)
	done := make(chan struct{})
	// Owned by the caller through stop, which ends the body and waits for it.
	go func() { defer close(done); readEvents(resp.Body, out) }()
	stop = func() {
		cancel()
		<-done
		resp.Body.Close()
	}
	return out, resp.Header.Get("X-Test-Backend"), stop, true
}

// progress checks one progress notification of the call with token q and returns its value.
func (d *chaosDriver) progress(id, q, data string, last float64) (float64, bool) {
	var n struct {
		Method string `json:"method"`
		Params struct {
			Token    json.RawMessage `json:"progressToken"`
			Progress float64         `json:"progress"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(data), &n) != nil || n.Method != "notifications/progress" {
		return 0, false
	}
	if string(n.Params.Token) != q || n.Params.Progress <= last {
		d.r.violate("call %s: progress %.300s after %v", id, data, last)
	}
	return n.Params.Progress, true
}

// progressed runs a sleep with progress: increasing progress, then the result, then the end.
func (d *chaosDriver) progressed(id, q string, ms int) {
	events, backend, stop, ok := d.stream(id, "sleep", d.body(q, "sleep", `{"ms":`+strconv.Itoa(ms)+`}`, q))
	if !ok {
		return
	}
	defer stop()
	want := d.result(q, `"content":[{"type":"text","text":"slept"}]`)
	progress, last, results := 0, -1.0, 0
	for ev := range events {
		if ev.Data == "" {
			continue // a priming event
		}
		d.r.checkWire(id, ev.Data)
		if p, ok := d.progress(id, q, ev.Data, last); ok {
			if results > 0 {
				d.r.violate("call %s (member %s): progress after the result: %.300s", id, backend, ev.Data)
			}
			progress, last = progress+1, p
			continue
		}
		results++
		if ev.Data != want || results > 1 {
			d.r.violate("call %s (member %s): got %.300s (answer %d), want %s once", id, backend, ev.Data, results, want)
		}
	}
	if results != 1 || progress == 0 {
		d.r.violate("call %s (member %s, %d ms): %d answers and %d progress notifications, want 1 and some", id, backend, ms, results, progress)
		return
	}
	d.r.count(func(r *chaosRun) { r.counts.answered++; r.counts.progressed++ })
}

// cancelled starts a long sleep, waits for its first progress (so it surely runs) and cancels
// it: a legacy call with notifications/cancelled posted to another member than the one holding
// its stream, whose stream must then end with nothing but progress; a modern one by closing
// its stream.
func (d *chaosDriver) cancelled(id, q string) {
	events, backend, stop, ok := d.stream(id, "sleep", d.body(q, "sleep", `{"ms":600000}`, q))
	if !ok {
		return
	}
	defer stop()
	last := -1.0
	for started := false; !started; {
		ev, open := <-events
		if !open {
			d.r.violate("call %s (member %s): the stream ended before the first progress", id, backend)
			return
		}
		if ev.Data == "" {
			continue
		}
		d.r.checkWire(id, ev.Data)
		p, ok := d.progress(id, q, ev.Data, last)
		if !ok {
			d.r.violate("call %s (member %s): %.300s before any progress", id, backend, ev.Data)
			return
		}
		last, started = p, true
	}
	if d.session == "" {
		stop() // closing the stream cancels a modern request
		for ev := range events {
			if ev.Data != "" {
				d.r.checkWire(id, ev.Data)
				if _, ok := d.progress(id, q, ev.Data, -1); !ok {
					d.r.violate("call %s (member %s): the cancelled call sent %.300s", id, backend, ev.Data)
				}
			}
		}
		d.r.count(func(r *chaosRun) { r.counts.cancelled++ })
		return
	}
	other := d.r.c.members[(atoi(backend)+1)%3].base
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + q + `,"reason":"chaos"}}`
	if status, _, body := d.r.c.callSoft(other, request{session: d.session, body: cancel}); status != 202 || body != "" {
		d.r.violate("cancel %s on member %d: %d %.300s", id, (atoi(backend)+1)%3, status, body)
		return
	}
	// The call's stream ends with nothing but progress: the home ended the cancelled call.
	bound := time.After(clusterChaosCancelEnd)
	for {
		select {
		case ev, open := <-events:
			if !open {
				d.r.count(func(r *chaosRun) { r.counts.cancelled++ })
				return
			}
			if ev.Data == "" {
				continue
			}
			d.r.checkWire(id, ev.Data)
			if _, ok := d.progress(id, q, ev.Data, -1); !ok {
				d.r.violate("call %s (member %s): the cancelled call sent %.300s", id, backend, ev.Data)
			}
		case <-bound:
			d.r.violate("call %s (member %s): its stream still open %v after the cancellation", id, backend, clusterChaosCancelEnd)
			return
		}
	}
}

// callSoft is call without failing the test from another goroutine: status 0 for an error.
func (c *testCluster) callSoft(base string, r request) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), clusterChaosWait)
	defer cancel()
	resp, err := c.do(ctx, base, r)
	if err != nil {
		return 0, "", err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Test-Backend"), string(data)
}
