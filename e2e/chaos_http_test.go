package e2e_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// The HTTP side of TestChaos: sessions of the Streamable HTTP transport on the same server,
// each call on its own POST from its own goroutine.

const chaosHTTPInFlight = 100 // per session

// chaosHTTP is the HTTP endpoint of the chaos test's server.
type chaosHTTP struct {
	ts  *httptest.Server
	url string
	hc  *http.Client
	tr  *http.Transport
}

func newChaosHTTP(srv *toolgrain.Server) *chaosHTTP {
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	ts := httptest.NewServer(mux)
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * chaosHTTPInFlight}
	return &chaosHTTP{ts: ts, url: ts.URL + "/mcp", tr: tr, hc: &http.Client{Transport: tr, Timeout: mcptest.Watchdog}}
}

func (h *chaosHTTP) close() {
	h.ts.Close()
	h.tr.CloseIdleConnections()
}

// chaosSession drives one HTTP session.
type chaosSession struct {
	name string
	rng  *rand.Rand
	diag *chaosDiagnostics
	h    *chaosHTTP
	id   string

	mu         sync.Mutex
	violations []string
	counts     chaosCounts
	seq        int
}

func newChaosSession(h *chaosHTTP, i int, seed uint64, diag *chaosDiagnostics) *chaosSession {
	s := &chaosSession{name: fmt.Sprintf("h%d", i), rng: rand.New(rand.NewPCG(seed, uint64(100+i))), diag: diag, h: h}
	status, header, body, err := s.post(context.Background(), mcptest.InitRequest)
	if err != nil || status != http.StatusOK || !strings.Contains(body, `"protocolVersion"`) {
		s.violate("initialize: %d %s %v", status, body, err)
		return s
	}
	s.id = header.Get("Mcp-Session-Id")
	if status, _, _, err := s.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted || err != nil {
		s.violate("initialized: %d %v", status, err)
	}
	return s
}

func (s *chaosSession) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.violations) < 20 {
		s.violations = append(s.violations, s.name+": "+fmt.Sprintf(format, args...))
	}
}

func (s *chaosSession) request(ctx context.Context, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.h.url, strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	return req
}

// post sends one message and reads its whole answer, as a body (JSON) or the events joined by
// newlines (SSE).
func (s *chaosSession) post(ctx context.Context, body string) (int, http.Header, string, error) {
	resp, err := s.h.hc.Do(s.request(ctx, body))
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	s.checkWire(string(b))
	return resp.StatusCode, resp.Header, string(b), err
}

func (s *chaosSession) checkWire(b string) {
	if strings.Contains(b, demo.Marker) || strings.Contains(b, "flaky-"+chaosCanary) {
		s.violate("a secret on the wire: %.300s", b)
	}
}

// expect posts body and checks the exact answer.
func (s *chaosSession) expect(body string, status int, want string) {
	got, header, b, err := s.post(context.Background(), body)
	switch {
	case err != nil:
		s.violate("POST %.100s: %v", body, err)
	case got != status || b != want:
		s.violate("POST %.200s\n got: %d %s %.300s\nwant: %d %.300s", body, got, header.Get("Content-Type"), b, status, want)
	default:
		s.mu.Lock()
		s.counts.answered++
		s.mu.Unlock()
	}
}

func (s *chaosSession) drive(deadline time.Time) {
	if s.id == "" {
		return
	}
	sem := make(chan struct{}, chaosHTTPInFlight)
	var wg sync.WaitGroup
	for time.Now().Before(deadline) {
		sem <- struct{}{}
		s.mu.Lock()
		s.counts.peakOpen = max(s.counts.peakOpen, len(sem))
		s.mu.Unlock()
		op := s.next()
		wg.Add(1)
		go func() { // owned by drive, which waits for it
			defer wg.Done()
			defer func() { <-sem }()
			op()
		}()
	}
	wg.Wait()
}

// next picks one operation, with every random choice made here, on the driving goroutine.
func (s *chaosSession) next() func() {
	s.seq++
	id := fmt.Sprintf("%s-%d", s.name, s.seq)
	q := strconv.Quote(id)
	result := func(body string) string { return `{"jsonrpc":"2.0","id":` + q + `,"result":` + body + `}` }
	count := func(f func()) func() {
		s.mu.Lock()
		s.counts.calls++
		s.mu.Unlock()
		return f
	}
	switch n := s.rng.IntN(100); {
	case n < 20:
		text := chaosCanary + id
		return count(func() { s.expect(call(q, "echo", `{"text":"`+text+`"}`), 200, echoResult(q, text)) })
	case n < 30:
		ms := s.rng.IntN(30)
		return count(func() {
			s.expect(call(q, "sleep", fmt.Sprintf(`{"ms":%d}`, ms)), 200, result(`{"content":[{"type":"text","text":"slept"}]}`))
		})
	case n < 50:
		wait := time.Duration(200+s.rng.IntN(1800)) * time.Millisecond
		dup := s.rng.IntN(4) == 0
		return count(func() { s.cancelledSleep(id, q, wait, dup) })
	case n < 58:
		mode := []string{"error", "panic", "bad-output", "provider"}[s.rng.IntN(4)]
		s.diag.expect(id, "fail")
		return count(func() { s.expect(call(q, "fail", `{"mode":"`+mode+`"}`), 200, result(failedResult)) })
	case n < 66:
		mode := []string{"ok", "error", "panic"}[s.rng.IntN(3)]
		want := result(`{"content":[{"type":"text","text":"ok"}]}`)
		if mode != "ok" {
			want = result(failedResult)
			s.diag.expect(id, "flaky")
		}
		return count(func() {
			s.expect(call(q, "flaky", `{"secret":"flaky-`+chaosCanary+id+`","mode":"`+mode+`"}`), 200, want)
		})
	case n < 68:
		s.diag.expect(id, "hang")
		return count(func() { s.expect(call(q, "hang", `{"secret":"flaky-`+chaosCanary+id+`"}`), 200, result(failedResult)) })
	case n < 69:
		s.diag.expect(id, "")
		return count(func() {
			s.expect(call(q, "probe", `{}`), 200, `{"jsonrpc":"2.0","id":`+q+`,"error":{"code":-32603,"message":"Internal error"}}`)
		})
	case n < 74:
		return count(func() {
			s.expect(call(q, "sleep", `{"ms":600001}`), 200, result(`{"content":[{"type":"text","text":"invalid arguments: ms: must be <= 600000"}],"isError":true}`))
		})
	case n < 78:
		return count(func() {
			s.expect(`{"jsonrpc":"2.0","id":`+q+`,"method":"ping"}`, 200, `{"jsonrpc":"2.0","id":`+q+`,"result":{}}`)
		})
	case n < 86:
		s.mu.Lock()
		s.counts.bad++
		s.mu.Unlock()
		switch s.rng.IntN(4) {
		case 0:
			return func() {
				s.expect(`{"jsonrpc":"2.0","id":`+q+`,"method":`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset `+strconv.Itoa(len(q)+32)+`"}}`)
			}
		case 1:
			return func() {
				s.expect(`[{"jsonrpc":"2.0","id":`+q+`,"method":"ping"}]`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batches are not supported"}}`)
			}
		case 2:
			return func() {
				s.expect(call(q, "echo", "{\"text\":\"\xff\"}"), 400, `{"jsonrpc":"2.0","id":`+q+`,"error":{"code":-32600,"message":"Invalid Request: message is not valid UTF-8"}}`)
			}
		default:
			return func() {
				s.expect(call(q, "echo", `{"text":"`+strings.Repeat("x", chaosMaxLine)+`"}`), 413,
					`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message exceeds the limit of `+strconv.Itoa(chaosMaxLine)+` bytes"}}`)
			}
		}
	default:
		return func() { s.expect(mcptest.CancelFor(strconv.Quote("unknown-"+id)), 202, "") }
	}
}

// cancelledSleep starts a long sleep, waits for its first progress event (so it surely runs),
// maybe sends a duplicate of its id, cancels it after wait, and checks that its stream ends
// with no answer.
func (s *chaosSession) cancelledSleep(id, q string, wait time.Duration, dup bool) {
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	resp, err := s.h.hc.Do(s.request(ctx, `{"jsonrpc":"2.0","id":`+q+`,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":`+q+`}}}`))
	if err != nil {
		s.violate("sleep %s: %v", id, err)
		return
	}
	defer resp.Body.Close()
	events := mcptest.NewEventReader(resp.Body)
	first, err := events.NextData()
	if err != nil || !strings.Contains(first, "notifications/progress") {
		s.violate("sleep %s: first event %q, %v", id, first, err)
		return
	}
	if dup {
		s.expect(call(q, "echo", `{"text":"dup"}`), 200, duplicateError(id))
		s.mu.Lock()
		s.counts.duplicates++
		s.mu.Unlock()
	}
	time.Sleep(wait)
	if status, _, _, err := s.post(context.Background(), mcptest.CancelFor(q)); status != http.StatusAccepted || err != nil {
		s.violate("cancel %s: %d %v", id, status, err)
		return
	}
	if err := events.Each(func(ev string) {
		s.checkWire(ev)
		if !strings.Contains(ev, "notifications/progress") {
			s.violate("the cancelled call %s sent %.300s", id, ev)
		}
	}); err != nil {
		s.violate("sleep %s: %v", id, err)
		return
	}
	s.mu.Lock()
	s.counts.cancelled++
	s.mu.Unlock()
}
