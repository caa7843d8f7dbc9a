package httpserve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// passivationHandler serves an engine with one tool over httptest; sessions passivate after
// quiet.
func passivationHandler(t *testing.T, cfg streamable.Config) (*engine.Engine, *Handler, *httptest.Server) {
	t.Helper()
	eng, h, hs, _ := passivationHandlerWith(t, cfg)
	return eng, h, hs
}

// passivationHandlerWith also returns the channel that releases the tool step: it reports
// progress, then waits for a value on the channel before it answers.
func passivationHandlerWith(t *testing.T, cfg streamable.Config) (*engine.Engine, *Handler, *httptest.Server, chan struct{}) {
	t.Helper()
	release := make(chan struct{}, 16)
	set, err := tools.Compile([]tools.Tool{{
		Name:        "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Handler: tools.Func(func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (*tools.Result, error) {
			return tools.TextResult(in.Text), nil
		}),
	}, {
		Name:        "step",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: tools.Func(func(ctx context.Context, _ struct{}) (*tools.Result, error) {
			total := 2.0
			_ = tools.ReportProgress(ctx, 1, &total, "half")
			select {
			case <-release:
				return tools.TextResult("stepped"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Start(engine.Config{Tools: set})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(eng, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		close(release)
		h.Shutdown()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := eng.Shutdown(ctx); err != nil {
			t.Errorf("engine shutdown: %v", err)
		}
		h.Drain(ctx)
		hs.Close()
	})
	return eng, h, hs, release
}

// post sends one JSON-RPC message of session sid ("" for none) and returns the response's
// status, session header and body.
func post(t *testing.T, url, sid, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", protocol.MediaTypeJSON)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(protocol.HeaderSessionID, sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(protocol.HeaderSessionID), string(b)
}

func (h *Handler) session(sid string) *legacySession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[sid]
}

// TestSessionPassivates: a session with no request in progress lets its connection actor go
// after PassivateAfter, also while its GET stream is open; list changes and resource updates
// still reach that stream; the next request is served as if nothing happened, and the session
// passivates again afterwards. Idle expiry still ends it.
func TestSessionPassivates(t *testing.T) {
	eng, h, hs := passivationHandler(t, streamable.Config{PassivateAfter: 20 * time.Millisecond, SessionIdleTimeout: 2 * time.Second})
	status, sid, body := post(t, hs.URL, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q %s", status, sid, body)
	}
	if status, _, _ := post(t, hs.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d", status)
	}
	if _, _, body := post(t, hs.URL, sid, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"demo://a"}}`); !strings.Contains(body, `"result":{}`) {
		t.Fatalf("subscribe: %s", body)
	}
	s := h.session(sid)
	mcptest.Eventually(t, "passive after the last request", s.conn.Passive)

	// The GET stream opens on a passive session; the session passivates again with it open.
	req, _ := http.NewRequest(http.MethodGet, hs.URL, nil)
	req.Header.Set("Accept", protocol.MediaTypeEventStream)
	req.Header.Set(protocol.HeaderSessionID, sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp, err)
	}
	defer resp.Body.Close()
	mcptest.Eventually(t, "passive with the GET stream open", s.conn.Passive)
	lines := mcptest.ReadData(resp.Body)
	eng.ResourceUpdated("demo://a")
	if got := mcptest.Await(t, "the update on the GET stream", lines); got != `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"demo://a"}}` {
		t.Errorf("update: %s", got)
	}
	if !s.conn.Passive() {
		t.Error("an update brought the actor back")
	}

	// A call is served, the subscription kept; the session then passivates again.
	if _, _, body := post(t, hs.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`); !strings.Contains(body, `"text":"hi"`) {
		t.Fatalf("call after passivation: %s", body)
	}
	mcptest.Eventually(t, "passive again", s.conn.Passive)
	if _, _, body := post(t, hs.URL, sid, `{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"demo://a"}}`); !strings.Contains(body, `"result":{}`) {
		t.Fatalf("unsubscribe: %s", body)
	}
	eng.ResourceUpdated("demo://a")
	if n := h.Sessions(); n != 1 {
		t.Fatalf("%d sessions", n)
	}
	select {
	case l := <-lines:
		t.Errorf("an update after unsubscribe: %s", l)
	case <-time.After(100 * time.Millisecond): // room for an update that must not come
	}
}

const initializeBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestPassiveSessionKeepsItsGuarantees: a session that passivated keeps its resumable streams
// and their event ids, its place under the limit on sessions, and its idle expiry.
func TestPassiveSessionKeepsItsGuarantees(t *testing.T) {
	_, h, hs, release := passivationHandlerWith(t, streamable.Config{PassivateAfter: 20 * time.Millisecond,
		SessionIdleTimeout: 1500 * time.Millisecond, MaxSessions: 2})
	status, sid, body := post(t, hs.URL, "", initializeBody)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	s := h.session(sid)

	// A call answered as an SSE stream: the client reads its first event (progress) and leaves.
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"step","arguments":{},"_meta":{"progressToken":1}}}`))
	req.Header.Set("Content-Type", protocol.MediaTypeJSON)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(protocol.HeaderSessionID, sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events := mcptest.NewEventReader(resp.Body)
	var lastID string
	for lastID == "" || !strings.Contains(lastID, "-1") {
		ev, err := events.Next()
		if err != nil {
			t.Fatal(err)
		}
		lastID = ev.ID // the priming event's, then the progress event's
	}
	resp.Body.Close()
	mcptest.Eventually(t, "the client's leaving seen", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.requests() == 0
	})
	release <- struct{}{} // the call answers while no client reads its stream
	mcptest.Eventually(t, "passive with the answer kept for resumption", s.conn.Passive)

	// Another session fills the limit; a third is refused though both are passive.
	_, sid2, _ := post(t, hs.URL, "", initializeBody)
	mcptest.Eventually(t, "the second session passive", h.session(sid2).conn.Passive)
	if status, _, body := post(t, hs.URL, "", initializeBody); status != http.StatusServiceUnavailable {
		t.Fatalf("a third session over a limit of 2: %d %s", status, body)
	}

	// The stream resumes after its event id, from the passive session: the answer.
	req, _ = http.NewRequest(http.MethodGet, hs.URL, nil)
	req.Header.Set("Accept", protocol.MediaTypeEventStream)
	req.Header.Set(protocol.HeaderSessionID, sid)
	req.Header.Set(protocol.HeaderLastEventID, lastID)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %v %v", resp, err)
	}
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(rest), `"text":"stepped"`) {
		t.Fatalf("resumed stream: %s", rest)
	}

	// Idle, both expire on time, passive as they are.
	start := time.Now()
	mcptest.Eventually(t, "the passive sessions expired", func() bool { return h.Sessions() == 0 })
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("expired after %v, want about 1.5 s", d)
	}
	if status, _, _ := post(t, hs.URL, sid, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); status != http.StatusNotFound {
		t.Errorf("an expired session's request: %d", status)
	}
	if status, _, _ := post(t, hs.URL, "", initializeBody); status != http.StatusOK {
		t.Errorf("initialize after the expiry: %d", status)
	}
}
