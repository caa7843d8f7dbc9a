package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPOptions configure [DialHTTP].
type HTTPOptions struct {
	// Client sends the requests; nil means one with a transport keeping
	// MaxIdle idle connections to the server.
	Client *http.Client
	// MaxIdle is the number of idle connections kept open to the server;
	// size it to the concurrency. Zero means 64.
	MaxIdle int
	// Header is added to every request (for example Authorization).
	Header http.Header
}

// StatusError is an HTTP answer with an unexpected status code.
type StatusError struct {
	Code int
	Body string // at most 4 KiB
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("http status %d", e.Code)
	}
	return fmt.Sprintf("http status %d: %s", e.Code, e.Body)
}

// DialHTTP returns a client for the Streamable HTTP endpoint at url. Every
// message is a POST; a request's response may come as a JSON body or in an
// SSE stream. After [Client.Initialize] (legacy era), the session id from the
// initialize response is sent on every later request, with
// MCP-Protocol-Version. After [Client.Discover] (modern era) there is no
// session; every request carries MCP-Protocol-Version: 2026-07-28, Mcp-Method
// and, where the spec asks for it, Mcp-Name. Nothing is sent before either.
func DialHTTP(url string, opts HTTPOptions) (*Client, error) {
	hc := opts.Client
	own := hc == nil
	if own {
		idle := opts.MaxIdle
		if idle <= 0 {
			idle = 64
		}
		hc = &http.Client{Transport: &http.Transport{
			// Generous: thousands of calls may open connections at once,
			// and a server's accept backlog makes them wait.
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        idle,
			MaxIdleConnsPerHost: idle,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}}
	}
	c := newClient()
	ctx, cancel := context.WithCancel(context.Background())
	c.tr = &httpTransport{
		c:       c,
		url:     url,
		hc:      hc,
		ownHC:   own,
		header:  opts.Header.Clone(),
		ctx:     ctx,
		cancel:  cancel,
		written: make(chan struct{}, 1),
	}
	return c, nil
}

type httpTransport struct {
	c      *Client
	url    string
	hc     *http.Client
	ownHC  bool
	header http.Header

	// ctx is the parent of every POST; close cancels it and waits on wg for
	// the goroutines that read responses.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	session string

	started  atomic.Int64  // request POSTs started
	wrote    atomic.Int64  // request POSTs whose body was written (or that failed)
	moved    atomic.Int64  // requests written plus notifications accepted
	written  chan struct{} // size 1: signals a change of wrote
	closeOne sync.Once
}

// newRequest builds an HTTP request of the given verb. method and name are
// the JSON-RPC method and the Mcp-Name value of the message in body, for the
// modern era's headers ("" when there is none).
func (t *httpTransport) newRequest(ctx context.Context, verb string, body []byte, method, name string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, verb, t.url, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.c.modern.Load() {
		req.Header.Set("MCP-Protocol-Version", ModernVersion)
		if method != "" {
			req.Header.Set("Mcp-Method", method)
		}
		if name != "" {
			req.Header.Set("Mcp-Name", encodeHeaderValue(name))
		}
		return req, nil
	}
	t.mu.Lock()
	if t.session != "" {
		req.Header.Set("Mcp-Session-Id", t.session)
	}
	t.mu.Unlock()
	if v := t.c.Negotiated(); v != "" {
		req.Header.Set("MCP-Protocol-Version", v)
	}
	return req, nil
}

func (t *httpTransport) keepSession(resp *http.Response) {
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" || t.c.modern.Load() {
		return // the modern era has no sessions
	}
	t.mu.Lock()
	if t.session == "" {
		t.session = id
	}
	t.mu.Unlock()
}

func (t *httpTransport) send(call *Call, body []byte) error {
	if err := t.ctx.Err(); err != nil {
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(t.ctx)
	t.c.mu.Lock()
	call.abort = cancel
	call.ended = make(chan struct{})
	t.c.mu.Unlock()
	t.started.Add(1)
	t.wg.Add(1)
	// Owned by the transport: the POST ends with its response stream, or
	// when the call is aborted or the transport closes (ctx); close waits
	// on wg.
	go func() {
		defer t.wg.Done()
		defer close(call.ended)
		defer cancel()
		t.roundTrip(ctx, call, body)
	}()
	return nil
}

// closeStreams cancels modern calls the way 2026-07-28 asks of a client over
// HTTP: by closing each call's response stream (aborting its POST); no
// notifications/cancelled is sent. It waits until every stream is closed, or
// ctx is done.
func (t *httpTransport) closeStreams(ctx context.Context, calls []*Call) error {
	t.c.mu.Lock()
	for _, call := range calls {
		call.closing = true
	}
	t.c.mu.Unlock()
	for _, call := range calls {
		call.abort()
	}
	for _, call := range calls {
		select {
		case <-call.ended:
			t.moved.Add(1)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (t *httpTransport) markWritten(call *Call, once *sync.Once) {
	call.markWritten()
	once.Do(func() {
		t.wrote.Add(1)
		t.moved.Add(1)
		select {
		case t.written <- struct{}{}:
		default:
		}
	})
}

// linger is how long an SSE stream may stay open after it carried its
// call's response; the spec says the server should end it, and a client
// reading it forever would pile up connections.
const linger = 2 * time.Second

func (t *httpTransport) roundTrip(ctx context.Context, call *Call, body []byte) {
	var once sync.Once
	defer t.markWritten(call, &once)
	req, err := t.newRequest(ctx, http.MethodPost, body, call.Method, call.name)
	if err != nil {
		t.c.failCall(call, err)
		return
	}
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { t.markWritten(call, &once) },
	}))
	resp, err := t.hc.Do(req)
	if err != nil {
		t.c.failCall(call, err)
		return
	}
	defer resp.Body.Close()
	t.keepSession(resp)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		// A JSON-RPC error in the body still answers the call.
		if msgs, batch, err := parseMessages(b); err == nil {
			for _, m := range msgs {
				t.c.deliver(m, b, batch)
			}
		}
		t.c.failCall(call, &StatusError{Code: resp.StatusCode, Body: string(bytes.TrimSpace(b))})
		return
	}
	if isEventStream(resp) {
		var stop *time.Timer
		defer func() {
			if stop != nil {
				stop.Stop()
			}
		}()
		err = readSSE(resp.Body, func(data []byte) bool {
			t.deliverData(data)
			// Read on until the server ends the stream: a response after a
			// cancellation is a late response, and ending the stream lets
			// the connection be reused. Once answered, wait only so long.
			if stop == nil && t.c.answered(call) {
				stop = time.AfterFunc(linger, func() { call.abort() })
			}
			return false
		})
	} else {
		var b []byte
		if b, err = io.ReadAll(resp.Body); err == nil {
			t.deliverData(b)
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		t.c.failCall(call, err)
		return
	}
	t.c.failCall(call, ErrNoResponse)
}

func (t *httpTransport) deliverData(data []byte) {
	if len(bytes.TrimSpace(data)) == 0 {
		return // an SSE priming event
	}
	msgs, batch, err := parseMessages(data)
	if err != nil {
		t.c.countGarbage()
		return
	}
	for _, m := range msgs {
		t.c.deliver(m, data, batch)
	}
}

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

func (t *httpTransport) notify(ctx context.Context, method string, body []byte) error {
	req, err := t.newRequest(ctx, http.MethodPost, body, method, "")
	if err != nil {
		return err
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	t.keepSession(resp)
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	t.moved.Add(1)
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case resp.StatusCode/100 == 2:
		t.c.mu.Lock()
		t.c.stats.NotifyNot202++
		t.c.mu.Unlock()
		return nil
	}
	return &StatusError{Code: resp.StatusCode, Body: string(bytes.TrimSpace(b))}
}

func (t *httpTransport) notifyMany(ctx context.Context, method string, bodies [][]byte, parallel int) error {
	var (
		next  atomic.Int64
		first error
		mu    sync.Mutex
		wg    sync.WaitGroup
	)
	for range min(parallel, len(bodies)) {
		wg.Add(1)
		// Owned by notifyMany, which waits for all of them; each ends when
		// the bodies run out or a POST fails.
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(bodies) {
					return
				}
				if err := t.notify(ctx, method, bodies[i]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func (t *httpTransport) flush(ctx context.Context) error {
	for t.wrote.Load() < t.started.Load() {
		select {
		case <-t.written:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (t *httpTransport) raw(ctx context.Context, body []byte, wait time.Duration) (*RawReply, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	// A probe's modern headers are what its body says, as far as it can be
	// read.
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(body, &m)
	req, err := t.newRequest(ctx, http.MethodPost, body, m.Method, headerName(m.Method, m.Params))
	if err != nil {
		return nil, err
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return &RawReply{Elapsed: time.Since(start)}, err
	}
	defer resp.Body.Close()
	reply := &RawReply{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
	keep := func(data []byte) bool {
		msgs, batch, err := parseMessages(data)
		if err != nil {
			return false
		}
		for _, m := range msgs {
			reply.Messages = append(reply.Messages, RawMessage{Msg: m, Raw: bytes.Clone(data), Batch: batch})
		}
		return len(msgs) > 0 && msgs[0].IsResponse()
	}
	if isEventStream(resp) && resp.StatusCode == http.StatusOK {
		err = readSSE(resp.Body, func(data []byte) bool {
			if len(bytes.TrimSpace(data)) == 0 {
				return false
			}
			return keep(data)
		})
	} else {
		var b []byte
		b, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if !keep(b) && len(reply.Messages) == 0 {
			reply.Body = b[:min(len(b), 4<<10)]
		}
	}
	reply.Elapsed = time.Since(start)
	if errors.Is(err, io.EOF) || len(reply.Messages) > 0 {
		err = nil // the reply came; how the stream ended does not matter
	}
	return reply, err
}

func (t *httpTransport) alive() error { return nil }

func (t *httpTransport) progress() int64 { return t.moved.Load() }

func (t *httpTransport) close() error {
	t.closeOne.Do(func() {
		t.mu.Lock()
		session := t.session
		t.mu.Unlock()
		if session != "" {
			// The spec asks clients to end their session; 405 is allowed.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if req, err := t.newRequest(ctx, http.MethodDelete, nil, "", ""); err == nil {
				if resp, err := t.hc.Do(req); err == nil {
					io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
					resp.Body.Close()
				}
			}
			cancel()
		}
		t.cancel()
		t.wg.Wait()
		if t.ownHC {
			t.hc.CloseIdleConnections()
		}
	})
	return nil
}

// readSSE reads a text/event-stream and calls fn with the data of each
// event until fn returns true, the stream ends (io.EOF) or fails.
func readSSE(r io.Reader, fn func(data []byte) bool) error {
	br := bufio.NewReaderSize(r, 4<<10) // small: thousands of streams may be open
	var data, long []byte
	have := false
	for {
		line, err := readLine(br, &long)
		if len(line) > 0 || err == nil {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if have && fn(data) {
					return nil
				}
				data, have = data[:0], false
			case line[0] == ':': // comment
			default:
				field, value, _ := bytes.Cut(line, []byte(":"))
				value = bytes.TrimPrefix(value, []byte(" "))
				if string(field) == "data" {
					if have {
						data = append(data, '\n')
					}
					data, have = append(data, value...), true
				}
			}
		}
		if err != nil {
			return err
		}
	}
}
