package httpserve

import (
	"net/http"
	"strings"
	"time"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
)

// The modern era (MCP 2026-07-28) over Streamable HTTP: every request is a POST that carries its
// own envelope in params._meta, mirrored in headers; there are no sessions, no GET or DELETE, no
// event ids and no resumption. The engine's one stateless connection actor serves the modern
// requests of every client; the client closing its response stream cancels its request. The
// POST itself is modernPost's, beside the legacy post in handler.go; here are its header checks
// and the writing of its answer (relayModern).

// isModern reports whether a POSTed message belongs to the modern era: its
// MCP-Protocol-Version header names the modern revision, its params carry the envelope, or its
// method exists only in that revision. Modern markers win over an Mcp-Session-Id header, which
// a modern request ignores.
func isModern(r *http.Request, msg *protocol.Message) bool {
	if protocol.IsModernVersion(r.Header.Get(protocol.HeaderProtocolVersion)) {
		return true
	}
	return msg.Method != "" && (protocol.HasEnvelope(msg.Params) || protocol.IsModernOnlyMethod(msg.Method))
}

// checkHeaders checks the headers that mirror a modern request's body: MCP-Protocol-Version
// (the envelope's version), Mcp-Method (the method) and, for the methods that name a target,
// Mcp-Name (params.name, params.uri or params.taskId, decoded from its Base64 form).
func checkHeaders(r *http.Request, msg *protocol.Message, env *protocol.Envelope) *protocol.WireError {
	switch v := r.Header.Get(protocol.HeaderProtocolVersion); {
	case v == "":
		return protocol.ErrHeaderMismatch("the MCP-Protocol-Version header is required")
	case v != env.ProtocolVersion:
		return protocol.ErrHeaderMismatch("MCP-Protocol-Version header value '%s' does not match body value '%s'", v, env.ProtocolVersion)
	}
	switch m := r.Header.Values(protocol.HeaderMethod); {
	case len(m) == 0:
		return protocol.ErrHeaderMismatch("the Mcp-Method header is required")
	case len(m) > 1 || strings.TrimSpace(m[0]) != msg.Method:
		return protocol.ErrHeaderMismatch("Mcp-Method header value '%s' does not match body value '%s'", strings.Join(m, ", "), msg.Method)
	}
	member := ""
	switch {
	case msg.Method == protocol.MethodToolsCall || msg.Method == protocol.MethodPromptsGet:
		member = "name"
	case msg.Method == protocol.MethodResourcesRead:
		member = "uri"
	case msg.Method == protocol.MethodTasksGet || msg.Method == protocol.MethodTasksUpdate || msg.Method == protocol.MethodTasksCancel:
		member = "taskId" // the tasks extension's routing header; other tasks/* methods do not exist
	default:
		return nil
	}
	want, _ := protocol.ReadStringMember(msg.Params, member)
	names := r.Header.Values(protocol.HeaderName)
	if len(names) == 0 {
		return protocol.ErrHeaderMismatch("the Mcp-Name header is required for %s", msg.Method)
	}
	if len(names) > 1 {
		return protocol.ErrHeaderMismatch("one Mcp-Name header is allowed")
	}
	got, err := protocol.DecodeHeaderValue(names[0])
	if err != nil {
		return protocol.ErrHeaderMismatch("Mcp-Name: %s", err.Error())
	}
	if got != want {
		return protocol.ErrHeaderMismatch("Mcp-Name header value '%s' does not match body value '%s'", got, want)
	}
	return nil
}

// modernStatus is the HTTP status of a modern request answered with the JSON-RPC error code:
// 404 for a method the server does not have, 400 for the errors the revision names (an
// envelope or parameter the request got wrong, a header mismatch, a capability or a version it
// lacks), and 200 for the others, whose body says what happened.
func modernStatus(code int64) int {
	switch code {
	case protocol.CodeMethodNotFound:
		return http.StatusNotFound
	case protocol.CodeInvalidParams, protocol.CodeHeaderMismatch, protocol.CodeMissingClientCapability,
		protocol.CodeUnsupportedProtocolVersion, protocol.CodeInvalidRequest:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// stateless returns the engine's connection for modern requests, made on first use; nil once
// the handler is shut down or the engine closed.
func (h *Handler) stateless() *engine.Connection {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	if h.modern != nil {
		select {
		case <-h.modern.Done():
			// Stopped (the engine is shutting down): never replaced.
			return nil
		default:
			return h.modern
		}
	}
	conn, err := h.eng.ConnectStateless("http-stateless")
	if err != nil {
		return nil
	}
	h.modern = conn
	return conn
}

// relayModern writes what the actors queue on st as the answer to a modern request: one JSON
// body when the first frame is the response (with the status of [modernStatus] for an error),
// else an SSE stream of the request's notifications ending with its response, without event
// ids: a modern stream is not resumable. A client that takes JSON only gets the response
// alone. An open stream with nothing to say gets a comment line every [streamable.Config].KeepAlive.
//
// It returns when the response is written, the stream was closed without one (the request was
// cancelled, or the server shut down), the client went away, or the connection actor stopped.
//
// With detached set, an SSE stream that has written what it had is handed to a detached
// stream (detach.go) when the connection can be taken from net/http; relayModern then returns
// true, and detached is called once the stream is over.
func (h *Handler) relayModern(w http.ResponseWriter, r *http.Request, st *postStream, conn *engine.Connection, detached func(endReason)) bool {
	connDone := conn.Done()
	gen, wake := st.attach()
	handedOver := false
	defer func() {
		if !handedOver {
			st.drop()
		}
	}()
	rc := http.NewResponseController(w)
	jsonOK := protocol.Accepts(r.Header.Values("Accept"), protocol.MediaTypeJSON)
	sse := false
	var (
		cursor uint64
		event  []byte
		keep   *time.Ticker
		tick   <-chan time.Time
	)
	defer func() {
		if keep != nil {
			keep.Stop()
		}
	}()
	for {
		rd := st.read(gen, cursor)
		if rd.superseded || rd.lost {
			return false
		}
		for _, f := range rd.frames {
			cursor++
			kind := protocol.KindOf(f)
			if !sse {
				// An error answers with its status, so it is always a JSON body; a result is
				// one too unless the client takes an event stream only.
				if kind == protocol.FrameError || (kind.IsResponse() && (jsonOK || st.jsonOnly)) {
					writeFrame(w, answerStatus(kind, f), f)
					return false
				}
				if st.jsonOnly {
					continue // a client that takes JSON only gets the response alone
				}
				startSSE(w)
				sse = true
				if d := h.keepAlive(); d > 0 {
					keep = time.NewTicker(d)
					tick = keep.C
				}
			}
			event = protocol.AppendSSE(event[:0], f)
			if _, err := w.Write(event); err != nil {
				return false
			}
			if kind.IsResponse() {
				_ = rc.Flush()
				return false
			}
		}
		if sse && len(rd.frames) > 0 {
			if err := rc.Flush(); err != nil {
				return false
			}
		}
		if rd.closed {
			if !sse {
				// No response: the request was cancelled or the server is shutting down.
				w.WriteHeader(http.StatusNoContent)
			}
			return false
		}
		if sse && detached != nil {
			if ws, ok := h.streamHub().detach(w, r, conn.Ended, detached); ok {
				handedOver = st.handOver(gen, cursor, ws)
				if !handedOver {
					h.log.Debug("listen stream dropped before it could be handed over")
					ws.end()
				}
				return true
			}
			detached = nil // it stays here
		}
		select {
		case <-wake:
		case <-tick:
			if _, err := w.Write(keepAliveComment); err != nil {
				return false
			}
			if err := rc.Flush(); err != nil {
				return false
			}
		case <-r.Context().Done():
			return false
		case <-connDone:
			if !sse {
				writeError(w, http.StatusServiceUnavailable, protocol.ErrTransport("Service Unavailable", "server shutting down"))
			}
			return false
		}
	}
}

// keepAliveComment is an SSE comment: clients ignore it, intermediaries see the stream alive.
var keepAliveComment = []byte(": keep-alive\n\n")

func (h *Handler) keepAlive() time.Duration {
	switch d := h.cfg.KeepAlive; {
	case d < 0:
		return 0
	case d == 0:
		return streamable.DefaultKeepAlive
	default:
		return d
	}
}

// answerStatus is the status of a modern answer sent as one JSON body.
func answerStatus(kind protocol.FrameKind, frame []byte) int {
	if kind != protocol.FrameError {
		return http.StatusOK
	}
	return modernStatus(protocol.ErrorCodeOf(frame))
}
