package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// pollTool logs "one" and "two", closes its stream's connection, then waits for release (or
// its cancellation), logs "three" and answers "done".
func pollTool(release <-chan struct{}) tools.Tool {
	return tools.Tool{
		Name:        "poll",
		Description: "Closes its stream mid-call.",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			for _, m := range []string{"one", "two"} {
				if err := client.Log(ctx, protocol.LevelInfo, "poll", m); err != nil {
					return nil, err
				}
			}
			if err := client.CloseStream(ctx); err != nil {
				return nil, err
			}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			if err := client.Log(ctx, protocol.LevelInfo, "poll", "three"); err != nil {
				return nil, err
			}
			return tools.TextResult("done"), nil
		}),
	}
}

func logEvent(m string) string {
	return `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"poll","data":"` + m + `"}}`
}

// rawStream is an SSE answer read event by event, ids and priming events included.
type rawStream struct {
	t      *testing.T
	resp   *http.Response
	events <-chan sseEvent
}

func (c *httpSession) openRaw(t *testing.T, method, body string, extra ...string) *rawStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := (&http.Client{}).Do(c.request(ctx, method, body, extra...))
	if err != nil {
		cancel()
		t.Fatalf("%s: %v", method, err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	s := &rawStream{t: t, resp: resp}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		s.events = readSSE(resp.Body)
	}
	return s
}

// all reads the stream to its end.
func (s *rawStream) all() []sseEvent {
	s.t.Helper()
	var evs []sseEvent
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-time.After(watchdog):
			s.t.Fatalf("stream did not end; so far %v", evs)
		}
	}
}

func (s *rawStream) next() sseEvent {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.t.Fatal("stream ended")
		}
		return ev
	case <-time.After(watchdog):
		s.t.Fatal("no event")
	}
	return sseEvent{}
}

// streamOf returns the part of an event id that names its stream.
func streamOf(id string) string { return id[:strings.LastIndexByte(id, '-')] }

// TestHTTPResumableStream: a POST SSE stream starts with a priming event carrying a retry field,
// numbers its events with ids unique in the session that name the stream, and survives the
// handler closing its connection: GET with Last-Event-ID gets exactly the events after that
// id, from that stream only, then the rest live and the response.
func TestHTTPResumableStream(t *testing.T) {
	release := make(chan struct{})
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{pollTool(release)}})
	c := e.client()
	c.initialize()
	get := c.open(http.MethodGet, "") // the standalone stream stays open alongside resumptions

	// Two calls on two streams; each closes its connection after "one" and "two".
	first := c.openRaw(t, http.MethodPost, call(`"a"`, "poll", `{}`))
	a := first.all()
	second := c.openRaw(t, http.MethodPost, call(`"b"`, "poll", `{}`))
	b := second.all()
	for name, evs := range map[string][]sseEvent{"a": a, "b": b} {
		if len(evs) != 3 {
			t.Fatalf("stream %s: %v, want the priming event, one and two", name, evs)
		}
		if p := evs[0]; p.id == "" || p.data != "" || p.retry != "1000" {
			t.Errorf("stream %s: first event %+v, want a priming event with an id, empty data and retry 1000", name, p)
		}
		for i, want := range []string{logEvent("one"), logEvent("two")} {
			if ev := evs[i+1]; ev.data != want || ev.id == "" || streamOf(ev.id) != streamOf(evs[0].id) {
				t.Errorf("stream %s: event %+v, want %s with an id of the stream", name, ev, want)
			}
		}
	}
	seen := map[string]bool{}
	for _, ev := range append(a, b...) {
		if seen[ev.id] {
			t.Errorf("event id %q used twice", ev.id)
		}
		seen[ev.id] = true
	}
	if streamOf(a[0].id) == streamOf(b[0].id) {
		t.Errorf("two streams with one identity: %q, %q", a[0].id, b[0].id)
	}

	// Resuming b after "one" gets "two" again, then the rest live and b's response only.
	rb := c.openRaw(t, http.MethodGet, "", "Last-Event-ID", b[1].id)
	if rb.resp.StatusCode != http.StatusOK || rb.events == nil {
		t.Fatalf("resume: %d %s", rb.resp.StatusCode, rb.resp.Header.Get("Content-Type"))
	}
	if ev := rb.next(); ev != b[2] {
		t.Errorf("resumed with %+v, want %+v", ev, b[2])
	}
	close(release)
	rest := rb.all()
	want := []string{logEvent("three"), `{"jsonrpc":"2.0","id":"b","result":{"content":[{"type":"text","text":"done"}]}}`}
	if len(rest) != len(want) {
		t.Fatalf("resumed stream b: %v, want %v", rest, want)
	}
	for i, ev := range rest {
		if ev.data != want[i] || streamOf(ev.id) != streamOf(b[0].id) || seen[ev.id] {
			t.Errorf("resumed event %+v, want %s with a new id of stream b", ev, want[i])
		}
	}

	// Stream a, resumed from its priming event, replays everything it kept: a's events only.
	ra := c.openRaw(t, http.MethodGet, "", "Last-Event-ID", a[0].id).all()
	wantA := []string{logEvent("one"), logEvent("two"), logEvent("three"), `{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"done"}]}}`}
	if len(ra) != len(wantA) {
		t.Fatalf("resumed stream a: %v, want %v", ra, wantA)
	}
	for i, ev := range ra {
		if ev.data != wantA[i] || streamOf(ev.id) != streamOf(a[0].id) {
			t.Errorf("resumed event %+v, want %s on stream a", ev, wantA[i])
		}
	}
	get.silent(50 * time.Millisecond) // nothing of the calls went to the standalone stream

	// Refusals: a complete stream (410), an id this session never issued (400), including
	// another session's.
	other := e.client()
	other.initialize()
	for _, tt := range []struct {
		c      *httpSession
		id     string
		status int
		msg    string
	}{
		{c, b[1].id, http.StatusGone, "Gone: the stream of that event id is complete or no longer kept"},
		{other, a[1].id, http.StatusBadRequest, "Bad Request: unknown event id"},
		{c, strings.SplitN(a[0].id, "-", 2)[0] + "-99-1", http.StatusBadRequest, "Bad Request: unknown event id"},
		{c, "nonsense", http.StatusBadRequest, "Bad Request: unknown event id"},
	} {
		r := tt.c.do(http.MethodGet, "", "Last-Event-ID", tt.id)
		body := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"` + tt.msg + `"}}`
		if r.status != tt.status || r.body != body {
			t.Errorf("resume from %q: %d %s, want %d %s", tt.id, r.status, r.body, tt.status, body)
		}
	}
	// A client that takes JSON only gets no stream to close: the handler learns it.
	r := c.post(call("7", "poll", `{}`), "Accept", "application/json")
	if want := `{"jsonrpc":"2.0","id":7,"result":` + failedResult + `}`; r.status != http.StatusOK || r.body != want {
		t.Errorf("JSON-only call: %d %s%v, want %s", r.status, r.body, r.events, want)
	}
	// A call whose answer is JSON is unchanged.
	c.expect(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, `{"jsonrpc":"2.0","id":9,"result":{}}`)
}

// TestHTTPResumedCancelledCall: a cancelled call's stream ends with no response when resumed,
// whether the cancellation comes while the resumed stream is open or before it is.
func TestHTTPResumedCancelledCall(t *testing.T) {
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{pollTool(make(chan struct{}))}})
	c := e.client()
	c.initialize()
	cancelCall := func(id string) {
		t.Helper()
		if r := c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `"}}`); r.status != http.StatusAccepted {
			t.Fatalf("cancel: %d %s", r.status, r.body)
		}
	}
	// Cancelled while resumed.
	evs := c.openRaw(t, http.MethodPost, call(`"live"`, "poll", `{}`)).all()
	if len(evs) != 3 {
		t.Fatalf("POST stream: %v", evs)
	}
	r := c.openRaw(t, http.MethodGet, "", "Last-Event-ID", evs[2].id)
	if r.resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d", r.resp.StatusCode)
	}
	cancelCall("live")
	if rest := r.all(); len(rest) != 0 {
		t.Errorf("resumed stream of a call cancelled while open: %v, want no event", rest)
	}

	// Cancelled before resuming: the replay ends with no response either.
	evs = c.openRaw(t, http.MethodPost, call(`"kept"`, "poll", `{}`)).all()
	if len(evs) != 3 {
		t.Fatalf("POST stream: %v", evs)
	}
	cancelCall("kept")
	// The connection actor handles the cancellation before this ping.
	c.expect(`{"jsonrpc":"2.0","id":0,"method":"ping"}`, `{"jsonrpc":"2.0","id":0,"result":{}}`)
	rest := c.openRaw(t, http.MethodGet, "", "Last-Event-ID", evs[0].id).all()
	for _, ev := range rest {
		if protocol.KindOf([]byte(ev.data)).IsResponse() {
			t.Errorf("resumed stream of a cancelled call carried a response: %s", ev.data)
		}
	}
	if len(rest) != 2 {
		t.Errorf("resumed stream of a cancelled call: %v, want one and two again", rest)
	}
}
