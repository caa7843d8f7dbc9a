package mcptest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
)

// HTTP is a client of one MCP endpoint over HTTP.
type HTTP struct {
	T      testing.TB
	URL    string       // the endpoint
	Client *http.Client // its Timeout is the watchdog; streams opened with Open use a client without one
}

// NewHTTP returns a client of the endpoint at url. Cleanup closes its idle connections.
func NewHTTP(t testing.TB, url string) *HTTP {
	h := &HTTP{T: t, URL: url, Client: &http.Client{Timeout: Watchdog}}
	t.Cleanup(h.Client.CloseIdleConnections)
	return h
}

// Session returns a client with no session yet: Initialize opens one, and a modern client
// never does.
func (h *HTTP) Session() *Session { return &Session{HTTP: h} }

// Session is a client of the endpoint: of one MCP session once initialized (the era up to
// 2025-11-25), or of none (2026-07-28 requests, each standing alone).
type Session struct {
	*HTTP
	ID      string // Mcp-Session-Id; empty before Initialize
	Version string // sent as MCP-Protocol-Version when not empty
	Token   string // sent as a bearer token when not empty
}

// For returns the client reporting its failures to t, for a subtest that goes on with its
// parent's session.
func (c *Session) For(t testing.TB) *Session {
	h := *c.HTTP
	h.T = t
	d := *c
	d.HTTP = &h
	return &d
}

// Reply is a complete HTTP answer: a JSON body, or the data of every SSE event.
type Reply struct {
	Status int
	Header http.Header
	Body   string   // the body when it is not an event stream
	Events []string // the data of each event of an event stream that carries a message
}

// IsSSE reports whether the answer is an event stream.
func (r Reply) IsSSE() bool {
	return strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream")
}

// Request builds a request to the endpoint with the session's headers; extra holds header
// name/value pairs, an empty value removing the header, "Host" setting the request's host.
func (c *Session) Request(ctx context.Context, method, body string, extra ...string) *http.Request {
	c.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL, rd)
	if err != nil {
		c.T.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.ID != "" {
		req.Header.Set("Mcp-Session-Id", c.ID)
	}
	if c.Version != "" {
		req.Header.Set("MCP-Protocol-Version", c.Version)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if strings.EqualFold(extra[i], "Host") {
			req.Host = extra[i+1]
			continue
		}
		if extra[i+1] == "" {
			req.Header.Del(extra[i])
			continue
		}
		req.Header.Set(extra[i], extra[i+1])
	}
	return req
}

// Do sends a request and reads its whole answer.
func (c *Session) Do(method, body string, extra ...string) Reply {
	c.T.Helper()
	resp, err := c.Client.Do(c.Request(context.Background(), method, body, extra...))
	if err != nil {
		c.T.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	r := Reply{Status: resp.StatusCode, Header: resp.Header}
	if r.IsSSE() {
		for data := range ReadData(resp.Body) {
			r.Events = append(r.Events, data)
		}
		return r
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.T.Fatalf("read body: %v", err)
	}
	r.Body = string(b)
	return r
}

// Post sends body and reads its whole answer.
func (c *Session) Post(body string, extra ...string) Reply {
	c.T.Helper()
	return c.Do(http.MethodPost, body, extra...)
}

// Expect POSTs a request and asserts a 200 JSON answer with exactly want.
func (c *Session) Expect(body, want string) {
	c.T.Helper()
	r := c.Post(body)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" || r.Body != want {
		c.T.Errorf("POST %s\n got: %d %s %s%v\nwant: 200 application/json %s", body, r.Status, r.Header.Get("Content-Type"), r.Body, r.Events, want)
	}
}

// Initialize opens a session at 2025-11-25 and sends notifications/initialized.
func (c *Session) Initialize() {
	c.T.Helper()
	c.InitializeWith("{}")
}

// InitializeWith opens a session at 2025-11-25 declaring the client capabilities caps (a JSON
// object) and sends notifications/initialized.
func (c *Session) InitializeWith(caps string) {
	c.T.Helper()
	c.InitializeAt(LegacyVersion, caps)
	if c.ID == "" {
		c.T.Fatal("initialize: no Mcp-Session-Id")
	}
}

// InitializeAt opens a session at version declaring caps and sends notifications/initialized;
// from 2025-06-18, the revision that added the header, later requests carry
// MCP-Protocol-Version.
func (c *Session) InitializeAt(version, caps string) {
	c.T.Helper()
	r := c.Post(InitializeAt(version, caps))
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `"protocolVersion":"`+version+`"`) {
		c.T.Fatalf("initialize at %s: %d %s", version, r.Status, r.Body)
	}
	c.ID = r.Header.Get("Mcp-Session-Id")
	if version != "2025-03-26" && version != "2024-11-05" {
		c.Version = version
	}
	if r := c.Post(Initialized); r.Status != http.StatusAccepted {
		c.T.Fatalf("initialized: %d %s", r.Status, r.Body)
	}
}

// ModernHeaders returns the headers a 2026-07-28 client sends with body: MCP-Protocol-Version,
// Mcp-Method and, for the methods that name a target, Mcp-Name.
func ModernHeaders(t testing.TB, body string) []string {
	t.Helper()
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("test request %s: %v", body, err)
	}
	h := []string{"MCP-Protocol-Version", ModernVersion, "Mcp-Method", m.Method}
	switch m.Method {
	case "tools/call", "prompts/get":
		h = append(h, "Mcp-Name", protocol.EncodeHeaderValue(m.Params.Name))
	case "resources/read":
		h = append(h, "Mcp-Name", protocol.EncodeHeaderValue(m.Params.URI))
	}
	return h
}

// ModernPost POSTs a 2026-07-28 request with its headers, then extra ones (which may override
// or, empty, remove them).
func (c *Session) ModernPost(body string, extra ...string) Reply {
	c.T.Helper()
	return c.Post(body, append(ModernHeaders(c.T, body), extra...)...)
}

// ExpectModern POSTs a 2026-07-28 request and asserts its exact JSON answer and status, and
// that no session id comes with it.
func (c *Session) ExpectModern(body string, status int, want string, extra ...string) {
	c.T.Helper()
	r := c.ModernPost(body, extra...)
	if r.Status != status || r.Header.Get("Content-Type") != "application/json" || r.Body != want {
		c.T.Errorf("POST %s\n got: %d %s %s%v\nwant: %d %s", body, r.Status, r.Header.Get("Content-Type"), r.Body, r.Events, status, want)
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		c.T.Errorf("a modern answer carries a session id: %s", r.Header.Get("Mcp-Session-Id"))
	}
}

// Stream is an answer being read as it arrives.
type Stream struct {
	t      testing.TB
	Resp   *http.Response
	events <-chan Event // nil when the answer is not an event stream
	cancel context.CancelFunc
}

// Open sends a request and returns once the answer's headers arrived; its events are read as
// they come. Cleanup cancels it.
func (c *Session) Open(method, body string, extra ...string) *Stream {
	c.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := (&http.Client{}).Do(c.Request(ctx, method, body, extra...))
	if err != nil {
		cancel()
		c.T.Fatalf("%s: %v", method, err)
	}
	s := &Stream{t: c.T, Resp: resp, cancel: cancel}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		s.events = ReadEvents(resp.Body)
	}
	c.T.Cleanup(s.Close)
	return s
}

// IsSSE reports whether the answer is an event stream, whose events the stream reads.
func (s *Stream) IsSSE() bool { return s.events != nil }

// Close gives the stream up, as a client that leaves.
func (s *Stream) Close() {
	s.cancel()
	s.Resp.Body.Close()
}

// NextEvent returns the next event, priming events included (ok false when the stream ended).
func (s *Stream) NextEvent() (ev Event, ok bool) {
	s.t.Helper()
	timer := time.NewTimer(Watchdog)
	defer timer.Stop()
	select {
	case ev, ok = <-s.events:
		return ev, ok
	case <-timer.C:
		s.t.Fatalf("no event and no end of stream within %v (the harness's watchdog)", Watchdog)
	}
	return Event{}, false
}

// Next returns the data of the next event that carries a message (ok false when the stream
// ended).
func (s *Stream) Next() (data string, ok bool) {
	s.t.Helper()
	for {
		ev, ok := s.NextEvent()
		if !ok || ev.Data != "" {
			return ev.Data, ok
		}
	}
}

// All reads the stream to its end and returns its events, priming events included.
func (s *Stream) All() []Event {
	s.t.Helper()
	var evs []Event
	for {
		ev, ok := s.NextEvent()
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

// ExpectEvent asserts the data of the next message event.
func (s *Stream) ExpectEvent(want string) {
	s.t.Helper()
	got, ok := s.Next()
	if !ok {
		s.t.Fatalf("stream ended, want %s", want)
	}
	if got != want {
		s.t.Errorf("\n got event: %s\nwant event: %s", got, want)
	}
}

// ExpectEnd asserts that the stream ends without another message event.
func (s *Stream) ExpectEnd() {
	s.t.Helper()
	if got, ok := s.Next(); ok {
		s.t.Errorf("unexpected event %s, want the end of the stream", got)
	}
}

// Silent asserts that no message event arrives during d; why says what d leaves room for, and
// is printed if one arrives.
func (s *Stream) Silent(d time.Duration, why string) {
	s.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return
			}
			if ev.Data != "" {
				s.t.Errorf("unexpected event within %v (%s): %s", d, why, ev.Data)
				return
			}
		case <-timer.C:
			return
		}
	}
}
