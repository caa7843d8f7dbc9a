package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/bench/client"
	"github.com/toolgrain/toolgrain/bench/internal/fakemcp"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// transports are the ways a test can reach a fake server.
var transports = []struct {
	name string
	dial func(testing.TB, fakemcp.Options) (*client.Client, *fakemcp.Server)
}{
	{"stdio", pipeClient},
	{"http_json", httpClient},
	{"http_sse", func(tb testing.TB, o fakemcp.Options) (*client.Client, *fakemcp.Server) {
		o.SSE = true
		return httpClient(tb, o)
	}},
}

// pipeClient connects a client to a fake served over io.Pipe.
func pipeClient(tb testing.TB, opts fakemcp.Options) (*client.Client, *fakemcp.Server) {
	tb.Helper()
	srv := fakemcp.New(opts)
	toSrvR, toSrvW := io.Pipe()
	fromSrvR, fromSrvW := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(toSrvR, fromSrvW)
		fromSrvW.Close()
	}()
	c := client.Connect(fromSrvR, toSrvW)
	tb.Cleanup(func() {
		c.Close()
		<-served
		srv.Close()
	})
	return c, srv
}

// httpClient connects a client to a fake behind httptest.
func httpClient(tb testing.TB, opts fakemcp.Options) (*client.Client, *fakemcp.Server) {
	tb.Helper()
	if opts.Session == "" {
		opts.Session = "sess-1"
	}
	srv := fakemcp.New(opts)
	hs := httptest.NewServer(srv.Handler())
	c, err := client.DialHTTP(hs.URL, client.HTTPOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Close()
		srv.Close()
		hs.Close()
	})
	return c, srv
}

func initialize(tb testing.TB, c *client.Client) {
	tb.Helper()
	if err := c.Initialize(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

func TestHandshake(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, srv := tr.dial(t, fakemcp.Options{})
			initialize(t, c)
			if got := c.Negotiated(); got != "2025-11-25" {
				t.Errorf("Negotiated() = %q, want 2025-11-25", got)
			}
			var info struct{ Name string }
			if err := json.Unmarshal(c.ServerInfo(), &info); err != nil || info.Name != "fakemcp" {
				t.Errorf("ServerInfo() = %s, want the fake's", c.ServerInfo())
			}
			// Over a pipe, a write returns once the server's reader has the
			// bytes, maybe before it has handled them.
			mcptest.Eventually(t, "the server handled both messages", func() bool { return len(srv.Received()) >= 2 })
			got := srv.Received()
			if len(got) != 2 {
				t.Fatalf("server received %d messages, want initialize and initialized", len(got))
			}
			var p struct {
				ProtocolVersion string         `json:"protocolVersion"`
				ClientInfo      map[string]any `json:"clientInfo"`
				Capabilities    map[string]any `json:"capabilities"`
			}
			if err := json.Unmarshal(got[0].Params, &p); err != nil {
				t.Fatal(err)
			}
			if got[0].Method != "initialize" || string(got[0].ID) != "0" || p.ProtocolVersion != "2025-11-25" ||
				p.ClientInfo["name"] == nil || p.Capabilities == nil {
				t.Errorf("first message = %s id %s params %s, want initialize, id 0, protocolVersion 2025-11-25",
					got[0].Method, got[0].ID, got[0].Params)
			}
			if got[1].Method != "notifications/initialized" || got[1].ID != nil {
				t.Errorf("second message = %s id %s, want notifications/initialized without id", got[1].Method, got[1].ID)
			}
			if h := got[0].Header; h != nil {
				if a := h.Get("Accept"); !strings.Contains(a, "application/json") || !strings.Contains(a, "text/event-stream") {
					t.Errorf("Accept = %q, want both application/json and text/event-stream", a)
				}
				if h.Get("Mcp-Session-Id") != "" || h.Get("MCP-Protocol-Version") != "" {
					t.Errorf("initialize carried session headers: %v", h)
				}
				h1 := got[1].Header
				if h1.Get("Mcp-Session-Id") != "sess-1" || h1.Get("MCP-Protocol-Version") != "2025-11-25" {
					t.Errorf("initialized headers = %v, want the session id and the protocol version", h1)
				}
			}
		})
	}
}

func TestDispatchByID(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, _ := tr.dial(t, fakemcp.Options{})
			initialize(t, c)
			// Sleeps of decreasing length are answered in reverse order.
			var calls []*client.Call
			for i := range 5 {
				call, err := c.Start("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 50 - 10*i}})
				if err != nil {
					t.Fatal(err)
				}
				calls = append(calls, call)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 40)
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					want := fmt.Sprintf("text-%d", i)
					res, err := c.CallTool(context.Background(), "echo", map[string]any{"text": want})
					if err != nil {
						errs <- err
					} else if res.Text() != want {
						errs <- fmt.Errorf("echo %q answered %q", want, res.Text())
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			for _, call := range calls {
				msg, err := call.Result()
				if err != nil {
					t.Fatal(err)
				}
				if string(msg.ID) != fmt.Sprint(call.ID) {
					t.Errorf("call %d got the response for id %s", call.ID, msg.ID)
				}
			}
			seen := map[int64]bool{}
			for _, call := range calls {
				if seen[call.ID] {
					t.Errorf("id %d used twice", call.ID)
				}
				seen[call.ID] = true
			}
		})
	}
}

// startSleep starts a long sleep call and waits until the server has it.
func startSleep(t *testing.T, c *client.Client, srv *fakemcp.Server) *client.Call {
	t.Helper()
	call, err := c.Start("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 600000}})
	if err != nil {
		t.Fatal(err)
	}
	mcptest.Eventually(t, "the server received the call", func() bool {
		for _, r := range srv.Received() {
			if string(r.ID) == fmt.Sprint(call.ID) {
				return true
			}
		}
		return false
	})
	return call
}

func TestLateResponseCounted(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, srv := tr.dial(t, fakemcp.Options{AnswerCancelled: true})
			initialize(t, c)
			call := startSleep(t, c, srv)
			sent, err := c.Cancel(context.Background(), call, "test")
			if err != nil || !sent {
				t.Fatalf("Cancel = %v, %v; want true, nil", sent, err)
			}
			if _, err := call.Result(); !errors.Is(err, client.ErrCancelled) {
				t.Errorf("cancelled call ended with %v, want ErrCancelled", err)
			}
			mcptest.Eventually(t, "the late response is counted", func() bool { return c.Stats().Late == 1 })
			st := c.Stats()
			if st.LateOK != 0 || st.Unknown != 0 {
				t.Errorf("stats = %+v, want one late error response and nothing else", st)
			}
			if st.Open != 0 {
				t.Errorf("Open = %d after the late response, want 0", st.Open)
			}
			// A second cancellation of the same call sends nothing.
			if sent, _ := c.Cancel(context.Background(), call, ""); sent {
				t.Error("a second Cancel of the same call sent a notification")
			}
		})
	}
}

func TestSilentCancellation(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, srv := tr.dial(t, fakemcp.Options{})
			initialize(t, c)
			call := startSleep(t, c, srv)
			if sent, err := c.Cancel(context.Background(), call, "test"); err != nil || !sent {
				t.Fatalf("Cancel = %v, %v", sent, err)
			}
			if strings.HasPrefix(tr.name, "http") {
				// The fake ends the POST's stream without a response.
				mcptest.Eventually(t, "the stream closes quietly", func() bool { return c.Stats().QuietCloses == 1 })
			} else {
				// Over stdio the fake reads in order: once a later ping is
				// answered, a late response would have arrived before it.
				if _, err := c.Call(context.Background(), "ping", nil); err != nil {
					t.Fatal(err)
				}
				if n := c.Stats().Open; n != 1 {
					t.Errorf("Open = %d, want 1 (cancelled, never answered)", n)
				}
			}
			if st := c.Stats(); st.Late != 0 {
				t.Errorf("Late = %d for a server that stays silent, want 0", st.Late)
			}
		})
	}
}

func TestCancelMany(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, srv := tr.dial(t, fakemcp.Options{AnswerCancelled: true})
			initialize(t, c)
			var calls []*client.Call
			for range 50 {
				call, err := c.Start("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 600000}})
				if err != nil {
					t.Fatal(err)
				}
				calls = append(calls, call)
			}
			if err := c.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			mcptest.Eventually(t, "the server has every call", func() bool { return len(srv.Received()) >= 2+len(calls) })
			n, err := c.CancelMany(context.Background(), calls, "test", 8)
			if err != nil || n != len(calls) {
				t.Fatalf("CancelMany = %d, %v; want %d, nil", n, err, len(calls))
			}
			mcptest.Eventually(t, "every late response is counted", func() bool { return c.Stats().Late == int64(len(calls)) })
		})
	}
}

func TestRawProbe(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, _ := tr.dial(t, fakemcp.Options{})
			initialize(t, c)
			reply, err := c.Raw(context.Background(), []byte(`{"jsonrpc":"2.0","id":7,"method":"ping"`), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(reply.Messages) != 1 {
				t.Fatalf("got %d messages (body %q), want one", len(reply.Messages), reply.Body)
			}
			m := reply.Messages[0].Msg
			if m == nil || m.Error == nil || m.Error.Code != -32700 || string(m.ID) != "null" {
				t.Errorf("reply = %s, want error -32700 with id null", reply.Messages[0].Raw)
			}
			reply, err = c.Raw(context.Background(), []byte(`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`), 10*time.Second)
			if err != nil || len(reply.Messages) == 0 || reply.Messages[0].Msg.Error == nil {
				t.Errorf("batch: reply %+v, %v; want an error", reply, err)
			}
			if _, err := c.Call(context.Background(), "ping", nil); err != nil {
				t.Errorf("session lost after probes: %v", err)
			}
		})
	}
}

func TestRawNotificationHTTP(t *testing.T) {
	c, _ := httpClient(t, fakemcp.Options{})
	initialize(t, c)
	reply, err := c.Raw(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`), 10*time.Second)
	if err != nil || reply.Status != 202 || len(reply.Messages) != 0 {
		t.Errorf("reply = %+v, %v; want 202 and nothing else", reply, err)
	}
}

func TestLongMessages(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c, _ := tr.dial(t, fakemcp.Options{})
			initialize(t, c)
			text := strings.Repeat("ab", 1<<19) // 1 MiB, far past any read buffer
			res, err := c.CallTool(context.Background(), "echo", map[string]any{"text": text})
			if err != nil {
				t.Fatal(err)
			}
			if res.Text() != text {
				t.Errorf("echo of %d bytes came back as %d bytes", len(text), len(res.Text()))
			}
		})
	}
}

func TestConnectionLost(t *testing.T) {
	srv := fakemcp.New(fakemcp.Options{})
	defer srv.Close()
	toSrvR, toSrvW := io.Pipe()
	fromSrvR, fromSrvW := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(toSrvR, fromSrvW)
	}()
	c := client.Connect(fromSrvR, toSrvW)
	defer func() {
		c.Close()
		<-served
	}()
	initialize(t, c)
	call, err := c.Start("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 600000}})
	if err != nil {
		t.Fatal(err)
	}
	fromSrvW.Close() // the server's output ends
	if _, err := call.Result(); !errors.Is(err, client.ErrClosed) {
		t.Errorf("pending call ended with %v, want ErrClosed", err)
	}
	if c.Lost() == nil {
		t.Error("Lost() = nil after the server's output ended")
	}
	if _, err := c.Start("ping", nil); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Start after the loss = %v, want ErrClosed", err)
	}
}

func TestDialStdio(t *testing.T) {
	c, err := client.DialStdio([]string{os.Args[0]}, client.StdioOptions{
		Env: append(os.Environ(), childEnv+"=serve"), Stderr: os.Stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	if c.PID() <= 0 {
		t.Errorf("PID() = %d, want the child's pid", c.PID())
	}
	if _, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close() = %v for a server that exits on stdin EOF", err)
	}
	if c.Alive() == nil {
		t.Error("Alive() = nil after Close")
	}
}

func TestDialStdioKillsStubbornServer(t *testing.T) {
	c, err := client.DialStdio([]string{os.Args[0]}, client.StdioOptions{
		Env: append(os.Environ(), childEnv+"=stubborn"), CloseGrace: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	err = c.Close()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close() = %v, want a report that the server was killed", err)
	}
}

func TestDialStdioMissingCommand(t *testing.T) {
	if _, err := client.DialStdio([]string{"/nonexistent/mcp-server"}, client.StdioOptions{}); err == nil {
		t.Error("DialStdio of a missing command succeeded")
	}
	if _, err := client.DialStdio(nil, client.StdioOptions{}); err == nil {
		t.Error("DialStdio of an empty command succeeded")
	}
}

// TestHeldStreamIsReleased: a server that keeps an SSE stream open after the
// response gets the connection closed by the client after a while, so
// streams do not pile up under load.
func TestHeldStreamIsReleased(t *testing.T) {
	c, srv := httpClient(t, fakemcp.Options{SSE: true, HoldStreams: true})
	initialize(t, c)
	if _, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	mcptest.Eventually(t, "the client lets the held stream go", func() bool { return srv.Released() >= 1 })
}
