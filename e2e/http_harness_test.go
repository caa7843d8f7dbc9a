package e2e_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
)

// httpEnv is a server mounted at /mcp, /sse and /messages (with the metadata handler at its two
// well-known paths) on a real loopback listener.
type httpEnv struct {
	t   testing.TB
	srv *toolgrain.Server
	ts  *httptest.Server
	url string // the endpoint
	hc  *http.Client
}

// startHTTP builds a server from cfg and serves it over loopback HTTP. Cleanup closes the
// server first (ending sessions and streams), then the listener, then idle client connections.
func startHTTP(t testing.TB, cfg toolgrain.Config) *httpEnv {
	t.Helper()
	srv, err := toolgrain.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	mux.Handle("/mcp/t/", srv.Handler()) // toolsets: /mcp/t/TAG[,TAG...]
	mux.Handle("/sse", srv.Handler())
	mux.Handle("/messages", srv.Handler())
	mux.Handle("/.well-known/oauth-protected-resource", srv.ResourceMetadataHandler())
	mux.Handle("/.well-known/oauth-protected-resource/mcp", srv.ResourceMetadataHandler())
	mux.Handle("/.well-known/oauth-protected-resource/sse", srv.ResourceMetadataHandler())
	ts := httptest.NewServer(mux)
	e := &httpEnv{t: t, srv: srv, ts: ts, url: ts.URL + "/mcp", hc: &http.Client{Timeout: watchdog}}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		ts.Close()
		e.hc.CloseIdleConnections()
	})
	return e
}

// reply is a complete HTTP answer: a JSON body, or the data of every SSE event.
type reply struct {
	status int
	header http.Header
	body   string   // the body when it is not an event stream
	events []string // the data of each event of an event stream
}

func (r reply) isSSE() bool {
	return strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream")
}

// httpSession is a client of one MCP session over HTTP.
type httpSession struct {
	e       *httpEnv
	id      string // Mcp-Session-Id; empty before initialize
	version string // sent as MCP-Protocol-Version when not empty
	token   string // sent as a bearer token when not empty
}

func (e *httpEnv) client() *httpSession { return &httpSession{e: e} }

// request builds a request to the endpoint with the session's headers; extra holds header
// name/value pairs, an empty value removing the header.
func (c *httpSession) request(ctx context.Context, method, body string, extra ...string) *http.Request {
	c.e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.e.url, rd)
	if err != nil {
		c.e.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.id != "" {
		req.Header.Set("Mcp-Session-Id", c.id)
	}
	if c.version != "" {
		req.Header.Set("MCP-Protocol-Version", c.version)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
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

// do sends a request and reads its whole answer.
func (c *httpSession) do(method, body string, extra ...string) reply {
	c.e.t.Helper()
	resp, err := c.e.hc.Do(c.request(context.Background(), method, body, extra...))
	if err != nil {
		c.e.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	if r.isSSE() {
		ev := readEvents(resp.Body)
		for data := range ev {
			r.events = append(r.events, data)
		}
		return r
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.e.t.Fatalf("read body: %v", err)
	}
	r.body = string(b)
	return r
}

func (c *httpSession) post(body string, extra ...string) reply {
	c.e.t.Helper()
	return c.do(http.MethodPost, body, extra...)
}

// expect POSTs a request and asserts a 200 JSON answer with exactly want.
func (c *httpSession) expect(body, want string) {
	c.e.t.Helper()
	r := c.post(body)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" || r.body != want {
		c.e.t.Errorf("POST %s\n got: %d %s %s%v\nwant: 200 application/json %s", body, r.status, r.header.Get("Content-Type"), r.body, r.events, want)
	}
}

// initialize opens the session and sends notifications/initialized.
func (c *httpSession) initialize() {
	c.e.t.Helper()
	r := c.post(initRequest)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"protocolVersion":"2025-11-25"`) {
		c.e.t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	c.id = r.header.Get("Mcp-Session-Id")
	if c.id == "" {
		c.e.t.Fatal("initialize: no Mcp-Session-Id")
	}
	c.version = "2025-11-25"
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		c.e.t.Fatalf("initialized: %d %s", r.status, r.body)
	}
}

// stream is an answer being read as it arrives.
type stream struct {
	t      testing.TB
	resp   *http.Response
	events <-chan string
	cancel context.CancelFunc
}

// open sends a request and returns once the answer's headers arrived; its events are read as
// they come. Cleanup cancels it.
func (c *httpSession) open(method, body string, extra ...string) *stream {
	c.e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := (&http.Client{}).Do(c.request(ctx, method, body, extra...))
	if err != nil {
		cancel()
		c.e.t.Fatalf("%s: %v", method, err)
	}
	s := &stream{t: c.e.t, resp: resp, cancel: cancel}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		s.events = readEvents(resp.Body)
	}
	c.e.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

// next returns the data of the next event, or ok false when the stream ended.
func (s *stream) next() (data string, ok bool) {
	s.t.Helper()
	select {
	case data, ok = <-s.events:
		return data, ok
	case <-time.After(watchdog):
		s.t.Fatal("no event and no end of stream")
	}
	return "", false
}

// readEvents parses a text/event-stream into the data of each event that carries a message (a
// priming event, with empty data, is skipped); the channel is closed at the end of the stream.
func readEvents(body io.Reader) <-chan string {
	ch := make(chan string, 4096)
	raw := readSSE(body)
	go func() {
		defer close(ch)
		for ev := range raw {
			if ev.data != "" {
				ch <- ev.data
			}
		}
	}()
	return ch
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	event, id, retry, data string
}

// readSSE parses a text/event-stream into its events, priming events included; the channel is
// closed at the end of the stream. The goroutine ends with the body, which its caller closes;
// the channel holds more events than any test produces, so an unread stream never blocks it.
func readSSE(body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 4096)
	go func() {
		defer close(ch)
		br := bufio.NewReader(body)
		var ev sseEvent
		var data []string
		for {
			line, err := br.ReadString('\n')
			line = strings.TrimRight(line, "\r\n")
			field := func(name string) (string, bool) {
				v, ok := strings.CutPrefix(line, name+":")
				return strings.TrimPrefix(v, " "), ok
			}
			switch {
			case err != nil:
				return
			case line == "":
				if data != nil {
					ev.data = strings.Join(data, "\n")
					ch <- ev
				}
				ev, data = sseEvent{}, nil
			}
			if v, ok := field("data"); ok {
				data = append(data, v)
			} else if v, ok := field("id"); ok {
				ev.id = v
			} else if v, ok := field("retry"); ok {
				ev.retry = v
			} else if v, ok := field("event"); ok {
				ev.event = v
			}
		}
	}()
	return ch
}
