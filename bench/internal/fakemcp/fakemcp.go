// Package fakemcp is a small in-process MCP server for testing the
// benchmark client and scenarios: it speaks newline-delimited JSON-RPC on
// any stream (Serve) and Streamable HTTP (Handler), offers echo, sleep and
// fail, and records what it received so tests can check the client's
// side of the protocol.
//
// It serves both eras. A request whose params._meta names revision
// 2026-07-28 (over HTTP: whose MCP-Protocol-Version header does) is modern:
// server/discover answers, results carry resultType and the server's
// identity, and over HTTP there is no session, while Mcp-Method and Mcp-Name
// must match the body (400 and -32020 otherwise).
package fakemcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Marker is the private text in the fail tool's internal errors, which this
// server leaks on purpose.
const Marker = "SECRET-internal-detail"

// Options choose the fake's behaviour.
type Options struct {
	// AnswerCancelled makes a cancelled sleep call answer anyway (an
	// isError result "cancelled"), as some servers do: a late response.
	AnswerCancelled bool
	// SSE makes the HTTP handler answer requests with an event stream
	// instead of a JSON body.
	SSE bool
	// Session is the Mcp-Session-Id the HTTP handler assigns; empty means
	// no session.
	Session string
	// StopReadingAfter makes Serve stop reading after that many messages,
	// until Close, like a server whose reader got stuck; zero means never.
	StopReadingAfter int
	// HoldStreams keeps each SSE response stream open after its response
	// until the client goes away (or Close), against the spec's advice.
	HoldStreams bool
	// LegacyOnly makes the fake ignore the modern era, like a server written
	// before it: the envelope means nothing, server/discover is an unknown
	// method, and over HTTP a POST without the session is refused (400,
	// plain text).
	LegacyOnly bool
	// DiscoverVersions are the versions server/discover lists, and the
	// modern versions the fake serves; nil means 2026-07-28 and 2025-11-25.
	DiscoverVersions []string
	// RefuseModernCalls makes the fake answer server/discover as usual but
	// refuse every modern tools/call with -32022 (unsupported protocol
	// version).
	RefuseModernCalls bool
	// Foreign makes the fake a server without the demonstration tools: it
	// offers reverse {message}, long_operation {duration (seconds), steps}
	// and burn_cpu {millis} instead (see [ForeignTools]).
	Foreign bool
	// KeepSpinning makes the CPU-bound tool (spin, or burn_cpu) ignore
	// cancellation and spin for its whole duration, like a handler that
	// never looks at its context; its answer is dropped.
	KeepSpinning bool
	// ProgressEvery makes the sleep tool (or long_operation) send
	// notifications/progress at this interval when the call has a
	// progressToken, over stdio only; zero means never.
	ProgressEvery time.Duration
	// ProgressAfterCancel makes a cancelled sleep keep sending its progress
	// notifications, against the spec, until its duration ends.
	ProgressAfterCancel bool
	// FailEvery makes every k-th call of the quick tool (echo, or reverse)
	// fail, counted from the first: an isError result, then a JSON-RPC
	// error (-31000, a refusal), in turn; zero means never.
	FailEvery int
}

// DemoTools is the tools/list result of the fake with the demonstration
// tools.
const DemoTools = `[` +
	`{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},` +
	`{"name":"sleep","description":"Waits ms milliseconds.","inputSchema":{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"]}},` +
	`{"name":"spin","description":"Keeps a CPU busy for ms milliseconds.","inputSchema":{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"]}},` +
	`{"name":"fail","inputSchema":{"type":"object","properties":{"mode":{"enum":["result","error","panic","bad-output","provider"]}},"required":["mode"]}}]`

// ForeignTools is the tools/list result of the fake with Options.Foreign:
// other names and argument shapes than the demonstration tools'. reverse
// answers its message reversed (an isError result for an empty one),
// long_operation runs for duration seconds, honouring cancellation, and
// burn_cpu keeps a CPU busy for millis milliseconds.
const ForeignTools = `[` +
	`{"name":"reverse","description":"Reverses a message.","inputSchema":{"type":"object","properties":{"message":{"type":"string","minLength":1},"shout":{"type":"boolean"}},"required":["message"]}},` +
	`{"name":"long_operation","description":"Runs a long operation with progress.","inputSchema":{"type":"object","properties":{"duration":{"type":"number","description":"how long, in seconds","maximum":3600},"steps":{"type":"integer","minimum":1,"default":5}},"required":["steps"]}},` +
	`{"name":"burn_cpu","description":"Busy work.","inputSchema":{"type":"object","properties":{"millis":{"type":"integer","minimum":1}},"required":["millis"]}},` +
	`{"name":"delete_everything","description":"A tool no benchmark should call.","inputSchema":{"type":"object","properties":{}}}]`

// ModernVersion is the revision of the modern era.
const ModernVersion = "2026-07-28"

// Request is a message the server received.
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	// Header is the HTTP request's header (nil over a stream).
	Header http.Header
}

// Server is a fake MCP server. Close ends its sleep calls.
type Server struct {
	opts Options

	mu          sync.Mutex
	quick       int // calls of the quick tool, for FailEvery
	received    []Request
	released    int                 // held streams the client ended
	disconnects int                 // calls ended because the client closed their stream
	inflight    map[string]*sleeper // by raw id
	// early holds ids cancelled before their request arrived: over HTTP a
	// cancellation can overtake its request on another connection.
	early map[string]bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // sleep goroutines
}

type sleeper struct {
	cancel context.CancelFunc
	// answer sends the call's response; nil once sent.
	answer func([]byte)
}

// New returns a fake server.
func New(opts Options) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{opts: opts, inflight: map[string]*sleeper{}, early: map[string]bool{}, ctx: ctx, cancel: cancel}
}

// Close ends every sleep call (without answering) and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// Received returns the messages received so far.
func (s *Server) Received() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.received...)
}

// Released counts held SSE streams (Options.HoldStreams) that the client
// closed.
func (s *Server) Released() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released
}

// Disconnects counts HTTP calls in flight whose client closed the response
// stream (the modern era's cancellation); the fake stopped them without an
// answer.
func (s *Server) Disconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disconnects
}

// Serve reads newline-delimited messages from r and writes replies to w
// until r ends. Writes to w are serialised.
func (s *Server) Serve(r io.Reader, w io.Writer) error {
	var mu sync.Mutex
	send := func(b []byte) {
		if b == nil {
			return // a stream has no response to end
		}
		mu.Lock()
		defer mu.Unlock()
		w.Write(append(b, '\n'))
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 0; ; n++ {
		if n == s.opts.StopReadingAfter && n > 0 {
			<-s.ctx.Done()
			return nil
		}
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.handle(line, nil, false, send)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// message is the part of a received message the fake looks at.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// envelope reads the modern envelope's version from params._meta; empty
// when there is none.
func envelope(params json.RawMessage) string {
	var p struct {
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Meta.Version
}

func (s *Server) versions() []string {
	if s.opts.DiscoverVersions != nil {
		return s.opts.DiscoverVersions
	}
	return []string{ModernVersion, "2025-11-25"}
}

// handle processes one message; send writes a reply (possibly later, from
// another goroutine). It returns the request's id, or nil for a message
// that gets no reply. httpModern says an HTTP request's headers made it
// modern.
func (s *Server) handle(line []byte, h http.Header, httpModern bool, send func([]byte)) json.RawMessage {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		send(errorReply(json.RawMessage("null"), -32600, "batches are not supported"))
		return json.RawMessage("null")
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		send(errorReply(json.RawMessage("null"), -32700, "parse error"))
		return json.RawMessage("null")
	}
	s.mu.Lock()
	s.received = append(s.received, Request{ID: m.ID, Method: m.Method, Params: m.Params, Header: h})
	s.mu.Unlock()
	if m.ID == nil {
		if m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			json.Unmarshal(m.Params, &p)
			s.cancelCall(string(p.RequestID))
		}
		return nil
	}
	version := ""
	if !s.opts.LegacyOnly {
		version = envelope(m.Params)
	}
	modern := version != "" || httpModern
	if httpModern && version == "" {
		send(errorReply(m.ID, -32602, "Invalid params: params._meta must carry the envelope"))
		return m.ID
	}
	if modern && !slices.Contains(s.versions(), version) {
		send(errorReply(m.ID, -32022, "Unsupported protocol version: "+version))
		return m.ID
	}
	r := replier{id: m.ID, modern: modern, stream: h == nil}
	switch {
	case m.Method == "server/discover" && modern:
		v, _ := json.Marshal(s.versions())
		send(r.result(`{"supportedVersions":` + string(v) + `,"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}`))
	case m.Method == "initialize" && !modern:
		send(r.result(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fakemcp","version":"1.0.0"}}`))
	case m.Method == "ping" && !modern:
		send(r.result(`{}`))
	case m.Method == "tools/call" && modern && s.opts.RefuseModernCalls:
		send(errorReply(m.ID, -32022, "Unsupported protocol version: "+version))
	case m.Method == "tools/call":
		s.call(r, m.Params, send)
	case m.Method == "tools/list":
		list := DemoTools
		if s.opts.Foreign {
			list = ForeignTools
		}
		send(r.result(`{"tools":` + list + `}`))
	default:
		send(errorReply(m.ID, -32601, "method not found"))
	}
	return m.ID
}

// replier builds the replies to one request, in its era.
type replier struct {
	id     json.RawMessage
	modern bool
	// stream is set over a stream (stdio), where the fake may send
	// notifications besides the one reply.
	stream bool
}

// result wraps a result object; a modern result gets resultType and the
// server's identity.
func (r replier) result(res string) []byte {
	if r.modern {
		res = `{"resultType":"complete",` + res[1:len(res)-1] +
			`,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fakemcp","version":"1.0.0"}}}`
	}
	return result(r.id, res)
}

func (r replier) tool(text string, isError bool) []byte {
	t, _ := json.Marshal(text)
	return r.result(`{"content":[{"type":"text","text":` + string(t) + `}],"isError":` + strconv.FormatBool(isError) + `}`)
}

func (s *Server) call(r replier, params json.RawMessage, send func([]byte)) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	json.Unmarshal(params, &p)
	if (p.Name == "echo" || p.Name == "reverse") && s.opts.FailEvery > 0 {
		s.mu.Lock()
		s.quick++
		n := s.quick
		s.mu.Unlock()
		if n%s.opts.FailEvery == 0 {
			if (n/s.opts.FailEvery)%2 == 1 {
				send(r.tool("the quick tool failed on purpose", true))
			} else {
				send(errorReply(r.id, -31000, "server busy: too many calls in flight"))
			}
			return
		}
	}
	if s.opts.Foreign {
		s.foreignCall(r, p.Name, p.Arguments, p.Meta.ProgressToken, send)
		return
	}
	switch p.Name {
	case "echo":
		text, ok := p.Arguments["text"].(string)
		if !ok {
			send(r.tool("text must be a string", true))
			return
		}
		send(r.tool(text, false))
	case "fail":
		if p.Arguments["mode"] == "result" {
			send(r.tool("public failure message", true))
			return
		}
		send(r.tool("boom: "+Marker, true)) // a leak, on purpose
	case "sleep":
		ms, _ := p.Arguments["ms"].(float64)
		s.sleep(r, time.Duration(ms)*time.Millisecond, p.Meta.ProgressToken, send)
	case "spin":
		ms, _ := p.Arguments["ms"].(float64)
		s.spin(r, time.Duration(ms)*time.Millisecond, send)
	default:
		send(errorReply(r.id, -32602, "unknown tool"))
	}
}

func (s *Server) foreignCall(r replier, name string, args map[string]any, token json.RawMessage, send func([]byte)) {
	switch name {
	case "reverse":
		msg, _ := args["message"].(string)
		if msg == "" {
			send(r.tool("message must be a non-empty string", true))
			return
		}
		rs := []rune(msg)
		slices.Reverse(rs)
		send(r.tool(string(rs), false))
	case "long_operation":
		secs, ok := args["duration"].(float64)
		if !ok {
			secs = 10
		}
		s.sleep(r, time.Duration(secs*float64(time.Second)), token, send)
	case "burn_cpu":
		ms, _ := args["millis"].(float64)
		s.spin(r, time.Duration(ms)*time.Millisecond, send)
	default:
		send(errorReply(r.id, -32602, "unknown tool"))
	}
}

// spin keeps a CPU busy for d, checking for cancellation after every slice
// of work unless Options.KeepSpinning.
func (s *Server) spin(r replier, d time.Duration, send func([]byte)) {
	ctx, sl, key, early := s.track(r, send)
	if early {
		return
	}
	s.wg.Add(1)
	// Owned by the server: ends after d, on cancellation (unless
	// KeepSpinning), or on Close, which waits on wg.
	go func() {
		defer s.wg.Done()
		end := time.Now().Add(d)
		x := uint64(1)
		for time.Now().Before(end) {
			for range 20000 {
				x = x*6364136223846793005 + 1442695040888963407
			}
			if s.ctx.Err() != nil || !s.opts.KeepSpinning && ctx.Err() != nil {
				return
			}
		}
		spun.Add(x & 1)
		s.finish(r, sl, key, "spun")
	}()
}

// spun keeps the spin loop's result alive, so the compiler keeps the loop.
var spun atomic.Uint64

// track registers a call in flight, cancellable by its id; early reports
// that its cancellation arrived first (it is then over).
func (s *Server) track(r replier, send func([]byte)) (ctx context.Context, sl *sleeper, key string, early bool) {
	ctx, cancel := context.WithCancel(s.ctx)
	sl = &sleeper{cancel: cancel, answer: send}
	key = string(r.id)
	s.mu.Lock()
	s.inflight[key] = sl
	early = s.early[key]
	delete(s.early, key)
	s.mu.Unlock()
	if early {
		s.cancelCall(key)
	}
	return ctx, sl, key, early
}

// finish answers a call in flight with text, unless it was cancelled or
// answered meanwhile.
func (s *Server) finish(r replier, sl *sleeper, key, text string) {
	s.mu.Lock()
	answer := sl.answer
	sl.answer = nil
	if s.inflight[key] == sl {
		delete(s.inflight, key)
	}
	s.mu.Unlock()
	sl.cancel()
	if answer != nil {
		answer(r.tool(text, false))
	}
}

func (s *Server) sleep(r replier, d time.Duration, token json.RawMessage, send func([]byte)) {
	ctx, sl, key, early := s.track(r, send)
	if early {
		return
	}
	// Progress goes straight to the stream (over HTTP a POST carries one
	// reply, so the fake sends none there).
	if s.opts.ProgressEvery > 0 && len(token) > 0 && r.stream {
		s.wg.Add(1)
		// Owned by the server: ends with the call (or, with
		// ProgressAfterCancel, after d), or on Close.
		go func() {
			defer s.wg.Done()
			tick := time.NewTicker(s.opts.ProgressEvery)
			defer tick.Stop()
			end := time.NewTimer(d)
			defer end.Stop()
			done := ctx.Done()
			for n := 1; ; n++ {
				select {
				case <-tick.C:
					s.mu.Lock()
					if ctx.Err() == nil || s.opts.ProgressAfterCancel {
						send([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(token) + `,"progress":` + strconv.Itoa(n) + `}}`))
					}
					s.mu.Unlock()
				case <-done:
					if !s.opts.ProgressAfterCancel || s.ctx.Err() != nil {
						return
					}
					done = s.ctx.Done()
				case <-end.C:
					return
				}
			}
		}()
	}
	s.wg.Add(1)
	// Owned by the server: ends after d, on cancellation, or on Close,
	// which waits on wg.
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		s.finish(r, sl, key, "slept")
	}()
}

// cancelCall stops a sleep call. With AnswerCancelled it answers it at
// once, in the reader's order, so a client reading in order sees the late
// response before any later reply.
func (s *Server) cancelCall(key string) {
	s.mu.Lock()
	sl := s.inflight[key]
	delete(s.inflight, key)
	var answer func([]byte)
	if sl != nil {
		answer = sl.answer
		sl.answer = nil
		// Under s.mu, so that no progress of the call is sent once the
		// cancellation has been taken (see sleep).
		sl.cancel()
	} else {
		s.early[key] = true
	}
	s.mu.Unlock()
	if sl == nil {
		return
	}
	if answer != nil && s.opts.AnswerCancelled {
		answer(replier{id: json.RawMessage(key)}.tool("cancelled", true))
	} else if answer != nil {
		answer(nil) // end an HTTP stream without a response
	}
}

// dropCall stops a call whose client closed its stream, without an answer.
func (s *Server) dropCall(key string) {
	s.mu.Lock()
	sl := s.inflight[key]
	delete(s.inflight, key)
	if sl != nil {
		sl.answer = nil
		s.disconnects++
	}
	s.mu.Unlock()
	if sl != nil {
		sl.cancel()
	}
}

// checkModernHeaders compares a modern POST's Mcp-Method and Mcp-Name with
// its body, as 2026-07-28 asks; it returns the -32020 message, or "".
func checkModernHeaders(body []byte, h http.Header) string {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "" // the parse error is answered later
	}
	if got := h.Get("Mcp-Method"); got != m.Method {
		return fmt.Sprintf("Mcp-Method header value %q does not match body value %q", got, m.Method)
	}
	if m.Method != "tools/call" {
		return ""
	}
	name := strings.TrimSpace(h.Get("Mcp-Name"))
	if b64, ok := strings.CutPrefix(name, "=?base64?"); ok {
		dec, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(b64, "?="))
		if err != nil {
			return "Mcp-Name: malformed Base64 header value"
		}
		name = string(dec)
	}
	if name != m.Params.Name {
		return fmt.Sprintf("Mcp-Name header value %q does not match body value %q", name, m.Params.Name)
	}
	return ""
}

// modernStatus is the HTTP status of a modern reply: 400 or 404 for the
// errors 2026-07-28 gives a status, 200 otherwise.
func modernStatus(reply []byte) int {
	var m struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(reply, &m) != nil || m.Error == nil {
		return http.StatusOK
	}
	switch m.Error.Code {
	case -32601:
		return http.StatusNotFound
	case -32602, -32020, -32021, -32022:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// Handler serves Streamable HTTP: every message is a POST; requests are
// answered with a JSON body or, with Options.SSE, an event stream; other
// messages get 202. A legacy request before initialize is given
// Options.Session; later ones without that session or without
// MCP-Protocol-Version are refused (400). A modern request (header
// MCP-Protocol-Version: 2026-07-28) needs no session, gets none, and must
// carry Mcp-Method and, for tools/call, Mcp-Name matching its body. A call
// whose client closes its stream is stopped without an answer (see
// [Server.Disconnects]).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		modern := !s.opts.LegacyOnly && r.Header.Get("MCP-Protocol-Version") == ModernVersion
		switch r.Method {
		case http.MethodDelete:
			if modern {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		case http.MethodPost:
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			http.Error(w, "content type", http.StatusUnsupportedMediaType)
			return
		}
		accept := r.Header.Get("Accept")
		if !strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
			http.Error(w, "accept", http.StatusNotAcceptable)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		isInit := bytes.Contains(body, []byte(`"initialize"`))
		switch {
		case modern:
			if msg := checkModernHeaders(body, r.Header); msg != "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				var m message
				json.Unmarshal(body, &m)
				if m.ID == nil {
					m.ID = json.RawMessage("null")
				}
				w.Write(errorReply(m.ID, -32020, "Header mismatch: "+msg))
				return
			}
		case !isInit && s.opts.Session != "" && r.Header.Get("Mcp-Session-Id") != s.opts.Session:
			http.Error(w, "missing or unknown session", http.StatusBadRequest)
			return
		case !isInit && r.Header.Get("MCP-Protocol-Version") == "":
			http.Error(w, "missing MCP-Protocol-Version", http.StatusBadRequest)
			return
		case isInit && s.opts.Session != "":
			w.Header().Set("Mcp-Session-Id", s.opts.Session)
		}
		replies := make(chan []byte, 1) // one reply per POST; buffered so a late sender never blocks
		var once sync.Once
		send := func(b []byte) { once.Do(func() { replies <- b }) }
		id := s.handle(body, r.Header.Clone(), modern, send)
		if id == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var reply []byte
		select {
		case reply = <-replies:
		case <-r.Context().Done():
			s.dropCall(string(id))
			return
		case <-s.ctx.Done():
			return
		}
		if modern && reply != nil {
			if status := modernStatus(reply); status != http.StatusOK {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				w.Write(reply)
				return
			}
		}
		if s.opts.SSE {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			if !modern {
				io.WriteString(w, "id: 0\ndata:\n\n: priming event above\n\n")
			}
			if reply != nil {
				io.WriteString(w, "event: message\ndata: ")
				w.Write(reply)
				io.WriteString(w, "\n\n")
			}
			if s.opts.HoldStreams {
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					s.mu.Lock()
					s.released++
					s.mu.Unlock()
				case <-s.ctx.Done():
				}
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(reply) // nil: an empty body, the stream ends without a response
	})
}

func result(id json.RawMessage, res string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + res + `}`)
}

func errorReply(id json.RawMessage, code int, msg string) []byte {
	m, _ := json.Marshal(msg)
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(m) + `}}`)
}
