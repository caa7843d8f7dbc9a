package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/toolgrain/toolgrain/protocol"
)

// HTTP is the transport to an upstream served over HTTP: Streamable HTTP (every message a POST
// whose answer is a JSON body or an SSE stream of the messages about it; an initialize session
// with its id, and its standalone GET stream; or stateless 2026-07-28 requests with their
// headers), or, with SSE, the 2024-11-05 HTTP+SSE transport (a GET stream that names the URL
// every message is POSTed to, and carries every answer).
type HTTP struct {
	// URL is the endpoint: the MCP endpoint of Streamable HTTP, the SSE stream's URL of the
	// old transport.
	URL string
	// SSE selects the 2024-11-05 HTTP+SSE transport.
	SSE bool
	// Client sends the requests; nil means http.DefaultClient's transport with no timeout
	// (streams stay open as long as their calls).
	Client *http.Client
	// Header returns the headers of every request: the upstream's own credentials. It is
	// called for each request, so that a token can be renewed; nil means none.
	Header func(ctx context.Context) (http.Header, error)
	// MaxMessageSize bounds one message read; 0 means protocol.DefaultMaxMessageSize.
	MaxMessageSize int
}

// Kind returns "http", or "sse" for the old transport.
func (t HTTP) Kind() string {
	if t.SSE {
		return "sse"
	}
	return "http"
}

// StatusError is an HTTP answer of the upstream with an unexpected status.
type StatusError struct {
	Code int
	Body string // at most 512 bytes
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP status %d", e.Code)
	}
	return fmt.Sprintf("HTTP status %d: %s", e.Code, e.Body)
}

// ErrSessionGone: the upstream answered 404 to a request of its session: the session ended.
var ErrSessionGone = errors.New("upstream: the HTTP session ended (404)")

// Open returns the connection. Streamable HTTP sends nothing before the first message; the old
// transport opens its stream and waits for the endpoint event.
func (t HTTP) Open(ctx context.Context, h Handler, wg *sync.WaitGroup) (Conn, error) {
	if _, err := url.Parse(t.URL); err != nil {
		return nil, err
	}
	hc := t.Client
	if hc == nil {
		hc = &http.Client{}
	}
	max := t.MaxMessageSize
	if max <= 0 {
		max = protocol.DefaultMaxMessageSize
	}
	life, cancel := context.WithCancel(context.Background())
	c := &httpConn{t: t, hc: hc, h: h, wg: wg, max: max, life: life, cancel: cancel, streams: map[string]context.CancelFunc{}}
	if t.SSE {
		if err := c.openSSE(ctx); err != nil {
			cancel()
			return nil, err
		}
	}
	return c, nil
}

type httpConn struct {
	t      HTTP
	hc     *http.Client
	h      Handler
	wg     *sync.WaitGroup
	max    int
	life   context.Context // ends with the connection
	cancel context.CancelFunc

	mu       sync.Mutex
	session  string
	version  string
	streams  map[string]context.CancelFunc // the streams of requests in flight, by id key
	getOpen  bool
	endpoint string // the old transport's POST URL
	failed   bool
	closed   bool
}

func (c *httpConn) SetSession(id string) {
	c.mu.Lock()
	c.session = id
	c.mu.Unlock()
}

// fail ends the connection on its own: Handler.Closed, once.
func (c *httpConn) fail(err error) {
	c.mu.Lock()
	done := c.failed || c.closed
	c.failed = true
	c.mu.Unlock()
	if done {
		return
	}
	c.cancel()
	c.h.Closed(err)
}

func (c *httpConn) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	failed := c.failed
	session, version := c.session, c.version
	c.mu.Unlock()
	c.cancel()
	c.wg.Add(1)
	// Owned by the connection: it ends the session (a legacy one) with DELETE, bounded by a
	// second, then says the connection is over.
	go func() {
		defer c.wg.Done()
		if session != "" && !c.t.SSE {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.t.URL, nil)
			if err == nil {
				c.headers(ctx, req, session, version)
				if resp, err := c.hc.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
					resp.Body.Close()
				}
			}
			cancel()
		}
		if !failed {
			c.h.Closed(ErrClosed)
		}
	}()
}

// headers sets the upstream's own headers (credentials) and the protocol's.
func (c *httpConn) headers(ctx context.Context, req *http.Request, session, version string) error {
	if c.t.Header != nil {
		hdr, err := c.t.Header(ctx)
		if err != nil {
			return err
		}
		for k, vs := range hdr {
			req.Header[k] = vs
		}
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	return nil
}

func (c *httpConn) Send(out *Outgoing) {
	if c.t.SSE {
		c.postSSE(out)
		return
	}
	c.mu.Lock()
	if c.closed || c.failed {
		c.mu.Unlock()
		return
	}
	var ctx context.Context
	var cancel context.CancelFunc
	isRequest := !out.ID.IsZero() && !out.Response
	if isRequest {
		ctx, cancel = context.WithCancel(c.life)
		c.streams[out.ID.Key()] = cancel
	} else {
		ctx, cancel = context.WithTimeout(c.life, 30*time.Second)
	}
	c.mu.Unlock()
	c.wg.Add(1)
	// Owned by the connection: one per message; it ends with its answer, its stream's end,
	// EndStream or Close.
	go func() {
		defer c.wg.Done()
		defer cancel()
		err := c.post(ctx, out)
		if isRequest {
			c.mu.Lock()
			delete(c.streams, out.ID.Key())
			c.mu.Unlock()
		}
		if err == nil || ctx.Err() != nil {
			return
		}
		var se *StatusError
		switch {
		case errors.Is(err, ErrSessionGone):
			c.fail(err)
		case errors.As(err, &se):
			if isRequest {
				// The request failed; the connection goes on.
				c.h.Message(&protocol.Message{ID: out.ID, Error: protocol.NewError(protocol.CodeInternalError, "%s", err.Error())}, out.ID)
			}
		default:
			// The upstream cannot be reached: the connection is lost.
			c.fail(err)
		}
	}()
	if out.Method == protocol.MethodInitialized && !out.Modern {
		c.openGet()
	}
}

// post sends one message and reads its answer.
func (c *httpConn) post(ctx context.Context, out *Outgoing) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.t.URL, bytes.NewReader(out.Bytes()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.mu.Lock()
	if !out.Modern && out.Version != "" {
		c.version = out.Version // the version the session negotiated, for the GET stream too
	}
	session, version := c.session, out.Version
	c.mu.Unlock()
	if out.Modern {
		session, version = "", protocol.LatestModernVersion
		req.Header.Set(protocol.HeaderMethod, out.Method)
		if out.Name != "" {
			req.Header.Set(protocol.HeaderName, protocol.EncodeHeaderValue(out.Name))
		}
		for name, v := range out.Params {
			req.Header.Set(protocol.HeaderParamPrefix+name, v)
		}
	} else if out.Method == protocol.MethodInitialize {
		session, version = "", ""
	}
	if err := c.headers(ctx, req, session, version); err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out.Method == protocol.MethodInitialize && resp.StatusCode == http.StatusOK {
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			c.mu.Lock()
			c.session = id
			c.mu.Unlock()
		}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case resp.StatusCode == http.StatusNotFound && session != "":
		return ErrSessionGone
	case resp.StatusCode == http.StatusOK && ct == "text/event-stream":
		return readSSE(resp.Body, c.max, func(_ string, data []byte) {
			c.deliver(data, out.ID)
		})
	case ct == "application/json" && (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound):
		// A JSON answer; a modern error comes with 400 or 404 and its JSON-RPC body.
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.max)+1))
		if err != nil {
			return err
		}
		if m, werr := protocol.Decode(body); werr == nil && m != nil && (m.IsResponse() || resp.StatusCode == http.StatusOK) {
			if m.IsResponse() && m.ID.IsZero() && !out.ID.IsZero() && !out.Response {
				// An error with id null, answering this POST's request (an upstream that
				// refuses a request without a session this way): it is this request's.
				m.ID = out.ID
			}
			c.h.Message(m, out.ID)
			return nil
		}
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		return &StatusError{Code: resp.StatusCode, Body: clip(body)}
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &StatusError{Code: resp.StatusCode, Body: clip(body)}
	}
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}

// deliver decodes one message of a stream and hands it on, related to the request whose
// stream carried it.
func (c *httpConn) deliver(data []byte, related protocol.ID) {
	m, werr := protocol.Decode(data)
	if werr != nil || m == nil {
		return
	}
	c.h.Message(m, related)
}

// openGet opens the standalone stream of a legacy session, once: the upstream's messages
// unrelated to any request (list changes, resource updates) come on it. An upstream that does
// not offer it (405) is fine; one whose stream ends is asked again after a second.
func (c *httpConn) openGet() {
	c.mu.Lock()
	if c.getOpen || c.closed || c.failed {
		c.mu.Unlock()
		return
	}
	c.getOpen = true
	c.mu.Unlock()
	c.wg.Add(1)
	// Owned by the connection: it ends with it (Close or a failure cancels life).
	go func() {
		defer c.wg.Done()
		for c.life.Err() == nil {
			req, err := http.NewRequestWithContext(c.life, http.MethodGet, c.t.URL, nil)
			if err != nil {
				return
			}
			req.Header.Set("Accept", "text/event-stream")
			c.mu.Lock()
			session, version := c.session, c.version
			c.mu.Unlock()
			if err := c.headers(c.life, req, session, version); err != nil {
				return
			}
			resp, err := c.hc.Do(req)
			if err == nil {
				ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
				switch {
				case resp.StatusCode == http.StatusOK && ct == "text/event-stream":
					_ = readSSE(resp.Body, c.max, func(_ string, data []byte) { c.deliver(data, protocol.ID{}) })
				case resp.StatusCode == http.StatusNotFound && session != "":
					resp.Body.Close()
					c.fail(ErrSessionGone)
					return
				default:
					resp.Body.Close()
					return // no standalone stream (405, or anything else)
				}
				resp.Body.Close()
			}
			select {
			case <-c.life.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

func (c *httpConn) EndStream(id protocol.ID) {
	c.mu.Lock()
	cancel := c.streams[id.Key()]
	delete(c.streams, id.Key())
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// openSSE opens the old transport's stream and waits for its endpoint event.
func (c *httpConn) openSSE(ctx context.Context) error {
	req, err := http.NewRequestWithContext(c.life, http.MethodGet, c.t.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if err := c.headers(ctx, req, "", ""); err != nil {
		return err
	}
	type result struct {
		endpoint string
		err      error
	}
	first := make(chan result, 1)
	c.wg.Add(1)
	// Owned by the connection: it reads the stream until it ends or the connection closes.
	go func() {
		defer c.wg.Done()
		resp, err := c.hc.Do(req)
		if err != nil {
			first <- result{err: err}
			return
		}
		defer resp.Body.Close()
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			first <- result{err: &StatusError{Code: resp.StatusCode, Body: clip(body)}}
			return
		}
		got := false
		err = readSSE(resp.Body, c.max, func(event string, data []byte) {
			switch {
			case event == "endpoint" && !got:
				got = true
				ep, err := url.Parse(strings.TrimSpace(string(data)))
				if err != nil {
					first <- result{err: fmt.Errorf("endpoint event: %w", err)}
					return
				}
				base, _ := url.Parse(c.t.URL)
				first <- result{endpoint: base.ResolveReference(ep).String()}
			case event == "" || event == "message":
				c.deliver(data, protocol.ID{})
			}
		})
		if !got {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			first <- result{err: fmt.Errorf("the stream ended before its endpoint event: %w", err)}
			return
		}
		if err == nil {
			err = io.EOF
		}
		c.fail(fmt.Errorf("the SSE stream ended: %w", err))
	}()
	select {
	case r := <-first:
		if r.err != nil {
			return r.err
		}
		c.mu.Lock()
		c.endpoint = r.endpoint
		c.mu.Unlock()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// postSSE sends a message of the old transport: a POST whose answer says nothing (every answer
// comes on the stream).
func (c *httpConn) postSSE(out *Outgoing) {
	c.mu.Lock()
	if c.closed || c.failed {
		c.mu.Unlock()
		return
	}
	endpoint := c.endpoint
	c.mu.Unlock()
	c.wg.Add(1)
	// Owned by the connection: it ends with the POST's answer, bounded by 30 s.
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.life, 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(out.Bytes()))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if err := c.headers(ctx, req, "", ""); err != nil {
			return
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			if c.life.Err() == nil {
				c.fail(err)
			}
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode >= 300 && !out.ID.IsZero() && !out.Response {
			c.h.Message(&protocol.Message{ID: out.ID, Error: protocol.NewError(protocol.CodeInternalError, "HTTP status %d", resp.StatusCode)}, protocol.ID{})
		}
	}()
}

// readSSE reads a text/event-stream and calls fn with each event's type and data until the
// stream ends (nil) or fails. An event over max bytes is skipped.
func readSSE(r io.Reader, max int, fn func(event string, data []byte)) error {
	br := bufio.NewReaderSize(r, 16<<10)
	var data []byte
	event := ""
	have, tooLong := false, false
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				if len(long) <= max {
					long = append(long, line...)
				}
			}
			line = long
		}
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if have && !tooLong {
					fn(event, data)
				}
				data, event, have, tooLong = data[:0], "", false, false
			case line[0] == ':':
			default:
				field, value, _ := bytes.Cut(line, []byte(":"))
				value = bytes.TrimPrefix(value, []byte(" "))
				switch string(field) {
				case "data":
					if have {
						data = append(data, '\n')
					}
					data, have = append(data, value...), true
					tooLong = tooLong || len(data) > max
				case "event":
					event = string(value)
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
