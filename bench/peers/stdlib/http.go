package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/toolgrain/toolgrain/bench/peers/internal/demo"
)

// maxBody is the largest request body accepted.
const maxBody = 16 << 20

// httpHandler serves Streamable HTTP at demo.EndpointPath: every message is a
// POST; the tool call runs on the request's own goroutine, and its answer is
// a JSON body, or an SSE stream once a progress notification was sent.
//
// A legacy request needs the session minted by initialize (400 without one,
// 404 for an unknown one); DELETE ends it and cancels its calls. A modern
// request (MCP-Protocol-Version: 2026-07-28) has no session; its headers must
// match its body, and its errors get the statuses 2026-07-28 gives them. A
// call is cancelled by notifications/cancelled on its session (legacy) or
// by its client closing the response stream (either era).
type httpHandler struct {
	s *server

	mu       sync.Mutex
	sessions map[string]*inflight
}

func newHTTPHandler(s *server) *httpHandler {
	return &httpHandler{s: s, sessions: map[string]*inflight{}}
}

// close ends every session, cancelling its calls.
func (h *httpHandler) close() {
	h.mu.Lock()
	sessions := h.sessions
	h.sessions = map[string]*inflight{}
	h.mu.Unlock()
	for _, calls := range sessions {
		calls.close(0)
	}
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != demo.EndpointPath {
		http.NotFound(w, r)
		return
	}
	modern := r.Header.Get("MCP-Protocol-Version") == modernVersion
	switch {
	case r.Method == http.MethodPost:
	case r.Method == http.MethodDelete && !modern:
		if !h.endSession(r.Header.Get("Mcp-Session-Id")) {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		allow := "POST, DELETE"
		if modern {
			allow = "POST"
		}
		w.Header().Set("Allow", allow)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		}
		return
	}
	m, errReply := parse(body)
	switch {
	case errReply != nil:
		writeJSON(w, http.StatusBadRequest, errReply)
	case m == nil:
		w.WriteHeader(http.StatusAccepted) // a notification without sense
	case m.Method == "" || m.ID == nil:
		h.notification(w, r, m, modern)
	case modern:
		h.modern(w, r, m)
	default:
		h.legacy(w, r, m)
	}
}

// notification takes a notification, or a response, from the client.
func (h *httpHandler) notification(w http.ResponseWriter, r *http.Request, m *message, modern bool) {
	if m.Method == "" && modern {
		http.Error(w, "a modern client sends no responses", http.StatusBadRequest)
		return
	}
	if !modern {
		calls, status := h.session(r)
		if calls == nil {
			http.Error(w, "missing or unknown session", status)
			return
		}
		if m.Method == "notifications/cancelled" {
			calls.cancel(string(m.Params.RequestID))
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

func (h *httpHandler) legacy(w http.ResponseWriter, r *http.Request, m *message) {
	req, errReply := newRequest(m)
	if errReply != nil {
		writeJSON(w, http.StatusOK, errReply)
		return
	}
	if req.method == "initialize" {
		w.Header().Set("Mcp-Session-Id", h.newSession())
		writeJSON(w, http.StatusOK, h.s.handle(r.Context(), req, nil))
		return
	}
	calls, status := h.session(r)
	if calls == nil {
		http.Error(w, "missing or unknown session", status)
		return
	}
	key := string(req.id)
	ctx, ok := calls.register(r.Context(), key)
	if !ok {
		writeJSON(w, http.StatusOK, errorResponse(req.id, codeInvalidRequest, "Invalid request: a call with this id is in flight", nil))
		return
	}
	out := &replyWriter{w: w, sse: accepts(r, "text/event-stream")}
	reply := h.s.handle(ctx, req, out.notify)
	if !calls.finish(key) || reply == nil {
		return // cancelled: the stream ends without an answer
	}
	out.final(http.StatusOK, reply)
}

func (h *httpHandler) modern(w http.ResponseWriter, r *http.Request, m *message) {
	req, errReply := newRequest(m)
	switch {
	case errReply != nil:
	case !req.modern:
		errReply = errorResponse(m.ID, codeInvalidParams, "Invalid params: a 2026-07-28 request needs the envelope in params._meta", nil)
	case *req.params.Meta.Version != r.Header.Get("MCP-Protocol-Version"):
		errReply = mismatch(m.ID, "MCP-Protocol-Version", r.Header.Get("MCP-Protocol-Version"), *req.params.Meta.Version)
	case r.Header.Get("Mcp-Method") != req.method:
		errReply = mismatch(m.ID, "Mcp-Method", r.Header.Get("Mcp-Method"), req.method)
	case req.method == "tools/call":
		if got := decodeHeaderValue(r.Header.Get("Mcp-Name")); got != req.params.Name {
			errReply = mismatch(m.ID, "Mcp-Name", got, req.params.Name)
		}
	}
	if errReply != nil {
		writeJSON(w, modernStatus(errReply), errReply)
		return
	}
	out := &replyWriter{w: w, sse: accepts(r, "text/event-stream")}
	reply := h.s.handle(r.Context(), req, out.notify)
	if reply == nil {
		return // the client closed the stream: cancelled
	}
	out.final(modernStatus(reply), reply)
}

func mismatch(id json.RawMessage, header, got, want string) []byte {
	return errorResponse(id, codeHeaderMismatch, fmt.Sprintf("Header mismatch: %s header value %q does not match body value %q", header, got, want), nil)
}

// decodeHeaderValue reads a custom header's value, in Base64 when it is
// written =?base64?...?=.
func decodeHeaderValue(v string) string {
	v = strings.TrimSpace(v)
	b64, ok := strings.CutPrefix(v, "=?base64?")
	if !ok || !strings.HasSuffix(b64, "?=") {
		return v
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(b64, "?="))
	if err != nil {
		return v
	}
	return string(dec)
}

// modernStatus is the HTTP status 2026-07-28 gives a reply: 404 for an
// unknown method, 400 for an envelope or header problem, 200 otherwise.
func modernStatus(reply []byte) int {
	var m struct {
		Error *rpcError `json:"error"`
	}
	if json.Unmarshal(reply, &m) != nil || m.Error == nil {
		return http.StatusOK
	}
	switch m.Error.Code {
	case codeMethodNotFound:
		return http.StatusNotFound
	case codeInvalidParams, codeHeaderMismatch, codeUnsupportedVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

func accepts(r *http.Request, mediaType string) bool {
	return strings.Contains(r.Header.Get("Accept"), mediaType)
}

func (h *httpHandler) newSession() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	id := hex.EncodeToString(b[:])
	h.mu.Lock()
	h.sessions[id] = newInflight()
	h.mu.Unlock()
	return id
}

// session finds the request's session; without one, it returns nil and the
// status to answer: 400 when there is no session id, 404 when it is unknown.
func (h *httpHandler) session(r *http.Request) (*inflight, int) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return nil, http.StatusBadRequest
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if calls := h.sessions[id]; calls != nil {
		return calls, 0
	}
	return nil, http.StatusNotFound
}

func (h *httpHandler) endSession(id string) bool {
	h.mu.Lock()
	calls := h.sessions[id]
	delete(h.sessions, id)
	h.mu.Unlock()
	if calls == nil {
		return false
	}
	calls.close(0)
	return true
}

// replyWriter answers one POST: with a JSON body, or, once a notification
// was sent (progress), with an SSE stream carrying the notifications and
// then the answer. It is used by the request's goroutine only.
type replyWriter struct {
	w         http.ResponseWriter
	sse       bool // the client accepts an event stream
	streaming bool // the event stream has begun
}

func (o *replyWriter) notify(b []byte) {
	if !o.sse {
		return // the client takes JSON only: no room for notifications
	}
	if !o.streaming {
		o.w.Header().Set("Content-Type", "text/event-stream")
		o.w.Header().Set("Cache-Control", "no-cache")
		o.w.WriteHeader(http.StatusOK)
		o.streaming = true
	}
	o.event(b)
	_ = http.NewResponseController(o.w).Flush()
}

func (o *replyWriter) event(b []byte) {
	_, _ = io.WriteString(o.w, "event: message\ndata: ")
	_, _ = o.w.Write(b)
	_, _ = io.WriteString(o.w, "\n\n")
}

func (o *replyWriter) final(status int, b []byte) {
	if o.streaming {
		o.event(b)
		return
	}
	writeJSON(o.w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
