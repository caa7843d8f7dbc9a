package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/mcptest"
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
		c.Initialize()
		return &stdioTools{c: c}
	}},
	{"stdio/modern", func(t *testing.T, cfg toolgrain.Config) toolClient {
		return &stdioTools{c: startStdio(t, cfg), modern: true}
	}},
	{"http/legacy", func(t *testing.T, cfg toolgrain.Config) toolClient {
		s := startHTTP(t, cfg).Session()
		s.Initialize()
		return &httpTools{t: t, s: s}
	}},
	{"http/modern", func(t *testing.T, cfg toolgrain.Config) toolClient {
		return &httpTools{t: t, s: startHTTP(t, cfg).Session(), modern: true}
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
	s.c.Send(callLine(id, tool, args, s.modern))
	return unwrap(id, s.c.Recv(), s.modern)
}

func (s *stdioTools) list() string {
	if s.modern {
		s.c.Send(modernRequest("900", "tools/list", ""))
	} else {
		s.c.Send(`{"jsonrpc":"2.0","id":900,"method":"tools/list"}`)
	}
	return s.c.Recv()
}

func (s *stdioTools) start(id int, tool, args string) func(time.Duration) {
	s.c.Send(callLine(id, tool, args, s.modern))
	return func(quiet time.Duration) {
		s.c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id))
		s.c.Silent(quiet, "the cancelled call's late answer would be out")
	}
}

type httpTools struct {
	t      *testing.T
	s      *mcptest.Session
	modern bool
}

// answer is the JSON-RPC answer in r: its body, or its last event.
func (h *httpTools) answer(r mcptest.Reply) string {
	h.t.Helper()
	if r.Status != http.StatusOK {
		h.t.Fatalf("HTTP %d: %s", r.Status, r.Body)
	}
	if r.IsSSE() {
		if len(r.Events) == 0 {
			return ""
		}
		return r.Events[len(r.Events)-1]
	}
	return r.Body
}

func (h *httpTools) post(body string) mcptest.Reply {
	if h.modern {
		return h.s.ModernPost(body)
	}
	return h.s.Post(body)
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
		extra = mcptest.ModernHeaders(h.t, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan mcptest.Reply, 1)
	// Ends when the POST is answered or its context is cancelled (below, or at cleanup).
	go func() {
		resp, err := (&http.Client{}).Do(h.s.Request(ctx, http.MethodPost, body, extra...))
		if err != nil {
			got <- mcptest.Reply{}
			return
		}
		defer resp.Body.Close()
		r := mcptest.Reply{Status: resp.StatusCode, Header: resp.Header}
		for ev := range mcptest.ReadData(resp.Body) {
			r.Events = append(r.Events, ev)
		}
		got <- r
	}()
	h.t.Cleanup(func() { cancel(); <-got })
	return func(quiet time.Duration) {
		h.t.Helper()
		if h.modern {
			cancel() // a modern HTTP client cancels by closing its stream
		} else {
			if r := h.s.Post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id)); r.Status != http.StatusAccepted {
				h.t.Fatalf("cancel: HTTP %d %s", r.Status, r.Body)
			}
		}
		select {
		case r := <-got:
			got <- r // for the cleanup
			if len(r.Events) != 0 {
				h.t.Errorf("a cancelled call sent %q", r.Events)
			}
		case <-time.After(mcptest.Watchdog):
			h.t.Fatal("the cancelled call's stream did not end")
		}
		time.Sleep(quiet) // room for a late report, which the caller checks is absent
	}
}
