package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
)

// toolClient calls tools on a server over one transport in one protocol era, and gives each
// answer without the era's wrapping: the members of the result object, as
// `"content":[...],"isError":true`, so that one expectation holds in every era.
type toolClient interface {
	// call calls tool with args (a JSON object) and returns the members of its result.
	call(id int, tool, args string) string
	// list returns the tools/list result.
	list() string
	// start sends a call and returns a function that cancels it as the transport and era do
	// (notifications/cancelled, or a modern HTTP client closing its stream) and then asserts
	// that the call is answered with nothing during quiet.
	start(id int, tool, args string) (cancelAndExpectSilence func(quiet time.Duration))
}

// transportEra is one of the four ways a client reaches the server.
type transportEra struct {
	name    string
	connect func(t *testing.T, cfg toolgrain.Config) toolClient
}

// transportsAndEras are stdio and Streamable HTTP, each in the legacy (2025-11-25 session)
// and the modern (2026-07-28, per request) era.
var transportsAndEras = []transportEra{
	{"stdio/legacy", func(t *testing.T, cfg toolgrain.Config) toolClient {
		c := startStdio(t, cfg)
		c.initialize()
		return &stdioTools{c: c}
	}},
	{"stdio/modern", func(t *testing.T, cfg toolgrain.Config) toolClient {
		return &stdioTools{c: startStdio(t, cfg), modern: true}
	}},
	{"http/legacy", func(t *testing.T, cfg toolgrain.Config) toolClient {
		s := startHTTP(t, cfg).client()
		s.initialize()
		return &httpTools{t: t, s: s}
	}},
	{"http/modern", func(t *testing.T, cfg toolgrain.Config) toolClient {
		return &httpTools{t: t, s: startHTTP(t, cfg).client(), modern: true}
	}},
}

// forEachTransportAndEra runs fn as a subtest against a new server made from cfg() over every
// transport and era.
func forEachTransportAndEra(t *testing.T, cfg func() toolgrain.Config, fn func(t *testing.T, c toolClient)) {
	for _, te := range transportsAndEras {
		t.Run(te.name, func(t *testing.T) { fn(t, te.connect(t, cfg())) })
	}
}

func callLine(id int, tool, args string, modern bool) string {
	if modern {
		return modernCall(fmt.Sprint(id), tool, args, `{}`)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// unwrap returns the members of the result of the answer line to request id, or line itself
// when it is not one.
func unwrap(id int, line string, modern bool) string {
	prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{`, id)
	suffix := "}}"
	if modern {
		prefix += `"resultType":"complete",`
		suffix = "," + serverMeta + suffix
	}
	if strings.HasPrefix(line, prefix) && strings.HasSuffix(line, suffix) {
		return line[len(prefix) : len(line)-len(suffix)]
	}
	return line
}

type stdioTools struct {
	c      *stdioClient
	modern bool
}

func (s *stdioTools) call(id int, tool, args string) string {
	s.c.send(callLine(id, tool, args, s.modern))
	return unwrap(id, s.c.recv(), s.modern)
}

func (s *stdioTools) list() string {
	if s.modern {
		s.c.send(modernRequest("900", "tools/list", ""))
	} else {
		s.c.send(`{"jsonrpc":"2.0","id":900,"method":"tools/list"}`)
	}
	return s.c.recv()
}

func (s *stdioTools) start(id int, tool, args string) func(time.Duration) {
	s.c.send(callLine(id, tool, args, s.modern))
	return func(quiet time.Duration) {
		s.c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id))
		s.c.silent(quiet)
	}
}

type httpTools struct {
	t      *testing.T
	s      *httpSession
	modern bool
}

// answer is the JSON-RPC answer in r: its body, or its last event.
func (h *httpTools) answer(r reply) string {
	h.t.Helper()
	if r.status != http.StatusOK {
		h.t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	if r.isSSE() {
		if len(r.events) == 0 {
			return ""
		}
		return r.events[len(r.events)-1]
	}
	return r.body
}

func (h *httpTools) post(body string) reply {
	if h.modern {
		return h.s.modernPost(body)
	}
	return h.s.post(body)
}

func (h *httpTools) call(id int, tool, args string) string {
	h.t.Helper()
	return unwrap(id, h.answer(h.post(callLine(id, tool, args, h.modern))), h.modern)
}

func (h *httpTools) list() string {
	h.t.Helper()
	if h.modern {
		return h.answer(h.post(modernRequest("900", "tools/list", "")))
	}
	return h.answer(h.post(`{"jsonrpc":"2.0","id":900,"method":"tools/list"}`))
}

func (h *httpTools) start(id int, tool, args string) func(time.Duration) {
	body := callLine(id, tool, args, h.modern)
	var extra []string
	if h.modern {
		extra = modernHeaders(h.t, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan reply, 1)
	// Ends when the POST is answered or its context is cancelled (below, or at cleanup).
	go func() {
		resp, err := (&http.Client{}).Do(h.s.request(ctx, http.MethodPost, body, extra...))
		if err != nil {
			got <- reply{}
			return
		}
		defer resp.Body.Close()
		r := reply{status: resp.StatusCode, header: resp.Header}
		for ev := range readEvents(resp.Body) {
			r.events = append(r.events, ev)
		}
		got <- r
	}()
	h.t.Cleanup(func() { cancel(); <-got })
	return func(quiet time.Duration) {
		h.t.Helper()
		if h.modern {
			cancel() // a modern HTTP client cancels by closing its stream
		} else {
			if r := h.s.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id)); r.status != http.StatusAccepted {
				h.t.Fatalf("cancel: HTTP %d %s", r.status, r.body)
			}
		}
		select {
		case r := <-got:
			got <- r // for the cleanup
			if len(r.events) != 0 {
				h.t.Errorf("a cancelled call sent %q", r.events)
			}
		case <-time.After(watchdog):
			h.t.Fatal("the cancelled call's stream did not end")
		}
		time.Sleep(quiet) // room for a late report, which the caller checks is absent
	}
}
