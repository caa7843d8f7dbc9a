// Package fakemcp is a small in-process MCP server for testing the
// benchmark client and scenarios: it speaks newline-delimited JSON-RPC on
// any stream (Serve) and Streamable HTTP (Handler), offers echo, sleep and
// fail, and records what it received so tests can check the client's
// side of the protocol.
package fakemcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
}

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

	mu       sync.Mutex
	received []Request
	released int                 // held streams the client ended
	inflight map[string]*sleeper // by raw id
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
			s.handle(line, nil, send)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// handle processes one message; send writes a reply (possibly later, from
// another goroutine). It reports whether the message was a request that
// gets a reply.
func (s *Server) handle(line []byte, h http.Header, send func([]byte)) bool {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		send(errorReply(json.RawMessage("null"), -32600, "batches are not supported"))
		return true
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		send(errorReply(json.RawMessage("null"), -32700, "parse error"))
		return true
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
		return false
	}
	switch m.Method {
	case "initialize":
		send(result(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fakemcp","version":"1.0.0"}}`))
	case "ping":
		send(result(m.ID, `{}`))
	case "tools/call":
		s.call(m.ID, m.Params, send)
	default:
		send(errorReply(m.ID, -32601, "method not found"))
	}
	return true
}

func (s *Server) call(id json.RawMessage, params json.RawMessage, send func([]byte)) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	json.Unmarshal(params, &p)
	switch p.Name {
	case "echo":
		text, ok := p.Arguments["text"].(string)
		if !ok {
			send(toolResult(id, "text must be a string", true))
			return
		}
		send(toolResult(id, text, false))
	case "fail":
		if p.Arguments["mode"] == "result" {
			send(toolResult(id, "public failure message", true))
			return
		}
		send(toolResult(id, "boom: "+Marker, true)) // a leak, on purpose
	case "sleep":
		ms, _ := p.Arguments["ms"].(float64)
		s.sleep(id, time.Duration(ms)*time.Millisecond, send)
	default:
		send(errorReply(id, -32602, "unknown tool"))
	}
}

func (s *Server) sleep(id json.RawMessage, d time.Duration, send func([]byte)) {
	ctx, cancel := context.WithCancel(s.ctx)
	sl := &sleeper{cancel: cancel, answer: send}
	key := string(id)
	s.mu.Lock()
	s.inflight[key] = sl
	early := s.early[key]
	delete(s.early, key)
	s.mu.Unlock()
	if early {
		s.cancelCall(key)
		return
	}
	s.wg.Add(1)
	// Owned by the server: ends after d, on cancellation, or on Close,
	// which waits on wg.
	go func() {
		defer s.wg.Done()
		defer cancel()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
		answer := sl.answer
		sl.answer = nil
		delete(s.inflight, key)
		s.mu.Unlock()
		if answer != nil {
			answer(toolResult(id, "slept", false))
		}
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
	} else {
		s.early[key] = true
	}
	s.mu.Unlock()
	if sl == nil {
		return
	}
	sl.cancel()
	if answer != nil && s.opts.AnswerCancelled {
		answer(toolResult(json.RawMessage(key), "cancelled", true))
	} else if answer != nil {
		answer(nil) // end an HTTP stream without a response
	}
}

// Handler serves Streamable HTTP: every message is a POST; requests are
// answered with a JSON body or, with Options.SSE, an event stream; other
// messages get 202. Before initialize it assigns Options.Session, and it
// rejects later requests without that session or without
// MCP-Protocol-Version (400).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
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
		if !isInit && s.opts.Session != "" && r.Header.Get("Mcp-Session-Id") != s.opts.Session {
			http.Error(w, "missing or unknown session", http.StatusBadRequest)
			return
		}
		if !isInit && r.Header.Get("MCP-Protocol-Version") == "" {
			http.Error(w, "missing MCP-Protocol-Version", http.StatusBadRequest)
			return
		}
		if isInit && s.opts.Session != "" {
			w.Header().Set("Mcp-Session-Id", s.opts.Session)
		}
		replies := make(chan []byte, 1) // one reply per POST; buffered so a late sender never blocks
		var once sync.Once
		send := func(b []byte) { once.Do(func() { replies <- b }) }
		if !s.handle(body, r.Header.Clone(), send) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var reply []byte
		select {
		case reply = <-replies:
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
		if s.opts.SSE {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "id: 0\ndata:\n\n: priming event above\n\n")
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

func toolResult(id json.RawMessage, text string, isError bool) []byte {
	t, _ := json.Marshal(text)
	return result(id, `{"content":[{"type":"text","text":`+string(t)+`}],"isError":`+strconv.FormatBool(isError)+`}`)
}
