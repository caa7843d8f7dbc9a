package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/internal/mcptest"
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

// streamOf returns the part of an event id that names its stream.
func streamOf(id string) string { return id[:strings.LastIndexByte(id, '-')] }

// TestHTTPResumableStream: a POST SSE stream starts with a priming event carrying a retry field,
// numbers its events with ids unique in the session that name the stream, and survives the
// handler closing its connection: GET with Last-Event-ID gets exactly the events after that
// id, from that stream only, then the rest live and the response.
func TestHTTPResumableStream(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{pollTool(release)}})
	c := e.Session()
	c.Initialize()
	get := c.Open(http.MethodGet, "") // the standalone stream stays open alongside resumptions

	// Two calls on two streams; each closes its connection after "one" and "two".
	first := c.Open(http.MethodPost, call(`"a"`, "poll", `{}`))
	a := first.All()
	second := c.Open(http.MethodPost, call(`"b"`, "poll", `{}`))
	b := second.All()
	for name, evs := range map[string][]mcptest.Event{"a": a, "b": b} {
		if len(evs) != 3 {
			t.Fatalf("stream %s: %v, want the priming event, one and two", name, evs)
		}
		if p := evs[0]; p.ID == "" || p.Data != "" || p.Retry != "1000" {
			t.Errorf("stream %s: first event %+v, want a priming event with an id, empty data and retry 1000", name, p)
		}
		for i, want := range []string{logEvent("one"), logEvent("two")} {
			if ev := evs[i+1]; ev.Data != want || ev.ID == "" || streamOf(ev.ID) != streamOf(evs[0].ID) {
				t.Errorf("stream %s: event %+v, want %s with an id of the stream", name, ev, want)
			}
		}
	}
	seen := map[string]bool{}
	for _, ev := range append(a, b...) {
		if seen[ev.ID] {
			t.Errorf("event id %q used twice", ev.ID)
		}
		seen[ev.ID] = true
	}
	if streamOf(a[0].ID) == streamOf(b[0].ID) {
		t.Errorf("two streams with one identity: %q, %q", a[0].ID, b[0].ID)
	}

	// Resuming b after "one" gets "two" again, then the rest live and b's response only.
	rb := c.Open(http.MethodGet, "", "Last-Event-ID", b[1].ID)
	if rb.Resp.StatusCode != http.StatusOK || !rb.IsSSE() {
		t.Fatalf("resume: %d %s", rb.Resp.StatusCode, rb.Resp.Header.Get("Content-Type"))
	}
	if ev, _ := rb.NextEvent(); ev != b[2] {
		t.Errorf("resumed with %+v, want %+v", ev, b[2])
	}
	close(release)
	rest := rb.All()
	want := []string{logEvent("three"), `{"jsonrpc":"2.0","id":"b","result":{"content":[{"type":"text","text":"done"}]}}`}
	if len(rest) != len(want) {
		t.Fatalf("resumed stream b: %v, want %v", rest, want)
	}
	for i, ev := range rest {
		if ev.Data != want[i] || streamOf(ev.ID) != streamOf(b[0].ID) || seen[ev.ID] {
			t.Errorf("resumed event %+v, want %s with a new id of stream b", ev, want[i])
		}
	}

	// Stream a, resumed from its priming event, replays everything it kept: a's events only.
	ra := c.Open(http.MethodGet, "", "Last-Event-ID", a[0].ID).All()
	wantA := []string{logEvent("one"), logEvent("two"), logEvent("three"), `{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"done"}]}}`}
	if len(ra) != len(wantA) {
		t.Fatalf("resumed stream a: %v, want %v", ra, wantA)
	}
	for i, ev := range ra {
		if ev.Data != wantA[i] || streamOf(ev.ID) != streamOf(a[0].ID) {
			t.Errorf("resumed event %+v, want %s on stream a", ev, wantA[i])
		}
	}
	get.Silent(50*time.Millisecond, "nothing of the calls goes to the standalone stream")

	// Refusals: a complete stream (410), an id this session never issued (400), including
	// another session's.
	other := e.Session()
	other.Initialize()
	for _, tt := range []struct {
		c      *mcptest.Session
		id     string
		status int
		msg    string
	}{
		{c, b[1].ID, http.StatusGone, "Gone: the stream of that event id is complete or no longer kept"},
		{other, a[1].ID, http.StatusBadRequest, "Bad Request: unknown event id"},
		{c, strings.SplitN(a[0].ID, "-", 2)[0] + "-99-1", http.StatusBadRequest, "Bad Request: unknown event id"},
		{c, "nonsense", http.StatusBadRequest, "Bad Request: unknown event id"},
	} {
		r := tt.c.Do(http.MethodGet, "", "Last-Event-ID", tt.id)
		body := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"` + tt.msg + `"}}`
		if r.Status != tt.status || r.Body != body {
			t.Errorf("resume from %q: %d %s, want %d %s", tt.id, r.Status, r.Body, tt.status, body)
		}
	}
	// A client that takes JSON only gets no stream to close: the handler learns it.
	r := c.Post(call("7", "poll", `{}`), "Accept", "application/json")
	if want := `{"jsonrpc":"2.0","id":7,"result":` + failedResult + `}`; r.Status != http.StatusOK || r.Body != want {
		t.Errorf("JSON-only call: %d %s%v, want %s", r.Status, r.Body, r.Events, want)
	}
	// A call whose answer is JSON is unchanged.
	c.Expect(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, `{"jsonrpc":"2.0","id":9,"result":{}}`)
}

// TestHTTPResumedCancelledCall: a cancelled call's stream ends with no response when resumed,
// whether the cancellation comes while the resumed stream is open or before it is.
func TestHTTPResumedCancelledCall(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{pollTool(make(chan struct{}))}})
	c := e.Session()
	c.Initialize()
	cancelCall := func(id string) {
		t.Helper()
		if r := c.Post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `"}}`); r.Status != http.StatusAccepted {
			t.Fatalf("cancel: %d %s", r.Status, r.Body)
		}
	}
	// Cancelled while resumed.
	evs := c.Open(http.MethodPost, call(`"live"`, "poll", `{}`)).All()
	if len(evs) != 3 {
		t.Fatalf("POST stream: %v", evs)
	}
	r := c.Open(http.MethodGet, "", "Last-Event-ID", evs[2].ID)
	if r.Resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d", r.Resp.StatusCode)
	}
	cancelCall("live")
	if rest := r.All(); len(rest) != 0 {
		t.Errorf("resumed stream of a call cancelled while open: %v, want no event", rest)
	}

	// Cancelled before resuming: the replay ends with no response either.
	evs = c.Open(http.MethodPost, call(`"kept"`, "poll", `{}`)).All()
	if len(evs) != 3 {
		t.Fatalf("POST stream: %v", evs)
	}
	cancelCall("kept")
	// The connection actor handles the cancellation before this ping.
	c.Expect(`{"jsonrpc":"2.0","id":0,"method":"ping"}`, `{"jsonrpc":"2.0","id":0,"result":{}}`)
	rest := c.Open(http.MethodGet, "", "Last-Event-ID", evs[0].ID).All()
	for _, ev := range rest {
		if protocol.KindOf([]byte(ev.Data)).IsResponse() {
			t.Errorf("resumed stream of a cancelled call carried a response: %s", ev.Data)
		}
	}
	if len(rest) != 2 {
		t.Errorf("resumed stream of a cancelled call: %v, want one and two again", rest)
	}
}
