// Package client is a minimal MCP client for load generation: it speaks raw
// JSON-RPC 2.0 over stdio (newline-delimited JSON to a child process) or over
// Streamable HTTP, using only the standard library so that it favours no MCP
// framework.
//
// It speaks either era of the protocol, chosen by the handshake that opens
// the connection. [Client.Initialize] opens a legacy session (revision
// 2025-11-25): initialize, then notifications/initialized; over HTTP the
// Mcp-Session-Id it is given goes on every later request. [Client.Discover]
// switches to the modern era (revision 2026-07-28): no initialize, no session;
// every request carries the envelope in params._meta, and over HTTP the
// MCP-Protocol-Version, Mcp-Method and Mcp-Name headers. A modern call is
// cancelled with notifications/cancelled over stdio, and over HTTP by closing
// its response stream.
//
// A [Client] sends requests with integer ids, starting at 0, and matches
// responses to waiters by id. It keeps the ids of calls it has cancelled, so a
// response that arrives for one of them later is counted as a late response
// ([Stats.Late]) instead of being mistaken for an unknown one. Raw exchanges
// ([Client.Raw]) send arbitrary bytes, for probing how a server handles bad
// input.
//
// All methods are safe for concurrent use.
package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ProtocolVersion is the MCP revision the client asks for in initialize.
const ProtocolVersion = "2025-11-25"

// ModernVersion is the MCP revision of the modern era, which [Client.Discover]
// switches to.
const ModernVersion = "2026-07-28"

// Era is a generation of the protocol: how a client opens a connection and
// what every request carries.
type Era string

// The eras.
const (
	// Legacy is revision 2025-11-25: an initialize handshake opens a session.
	Legacy Era = "legacy"
	// Modern is revision 2026-07-28: no handshake and no session; every
	// request carries its envelope.
	Modern Era = "modern"
)

// ParseEra reads "legacy" or "modern"; the empty string is Legacy.
func ParseEra(s string) (Era, error) {
	switch Era(s) {
	case "", Legacy:
		return Legacy, nil
	case Modern:
		return Modern, nil
	}
	return "", fmt.Errorf("unknown era %q (want legacy or modern)", s)
}

// envelopeMembers are the members of a modern request's params._meta: the
// revision and the client's capabilities (none optional).
const envelopeMembers = `"io.modelcontextprotocol/protocolVersion":"` + ModernVersion +
	`","io.modelcontextprotocol/clientCapabilities":{}`

// Errors a call can end with besides a transport error.
var (
	// ErrCancelled ends a call that the caller cancelled with [Client.Cancel].
	ErrCancelled = errors.New("call cancelled")
	// ErrClosed ends calls still waiting when the client closes or the
	// connection to the server is lost.
	ErrClosed = errors.New("connection closed")
	// ErrNoResponse ends an HTTP call whose response stream ended without a
	// response for it.
	ErrNoResponse = errors.New("stream ended without a response")
	// ErrNotModern is what [Client.Discover] ends with when the server does
	// not serve the modern era: it refused server/discover, or does not list
	// revision 2026-07-28 among its supported versions.
	ErrNotModern = errors.New("the server does not serve MCP " + ModernVersion)
)

// Message is one JSON-RPC 2.0 message as it arrived.
type Message struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *WireError      `json:"error,omitempty"`
}

// IsResponse reports whether m answers a request (it has a result or an
// error and no method).
func (m *Message) IsResponse() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

// WireError is the error member of a JSON-RPC response.
type WireError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *WireError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// ToolResult is the part of a tools/call result the benchmarks look at.
type ToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text,omitempty"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// Text joins the text of all text content blocks.
func (r *ToolResult) Text() string {
	var b bytes.Buffer
	for _, c := range r.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// Stats are counters a client keeps over its lifetime.
type Stats struct {
	// Late counts responses for calls received after the client sent their
	// cancellation. The spec says a server should not send them.
	Late int64
	// LateOK counts the late responses that were successful results: the
	// call finished as the cancellation crossed it, or the server ignored the
	// cancellation. The rest answered the cancellation itself with an error.
	LateOK int64
	// Unknown counts responses whose id matched no call.
	Unknown int64
	// Notifications counts notifications from the server.
	Notifications int64
	// ServerRequests counts requests from the server (left unanswered).
	ServerRequests int64
	// Garbage counts stdout lines that were not JSON-RPC messages (stdio).
	Garbage int64
	// QuietCloses counts HTTP response streams of cancelled calls that the
	// server ended without a response: the well-behaved outcome of a legacy
	// cancellation.
	QuietCloses int64
	// ClosedByClient counts HTTP response streams the client closed to
	// cancel their call (the modern era's cancellation).
	ClosedByClient int64
	// NotifyNot202 counts HTTP notification POSTs answered with a 2xx status
	// other than the 202 the spec requires.
	NotifyNot202 int64
	// Progress counts notifications/progress received, for any call.
	Progress int64
	// LateProgress counts notifications/progress received for calls started
	// with [Client.StartWithProgress] after the client sent their
	// cancellation. The spec says a server sends no progress for a cancelled
	// request.
	LateProgress int64
	// Open counts cancelled calls that could still get a late response:
	// over stdio, those not answered; over HTTP, those whose response stream
	// is still open. Every cancellation sent is counted in exactly one of
	// Late, QuietCloses, ClosedByClient and Open.
	Open int64
}

// Call is one request in flight or finished.
type Call struct {
	ID     int64
	Method string
	// Sent is when the call was started.
	Sent time.Time

	done     chan struct{}
	written  chan struct{}
	wOnce    sync.Once
	resp     *Message
	err      error
	finished time.Time

	// name is the value of the Mcp-Name header of a modern HTTP request.
	name string
	// Set by the HTTP transport: abort ends the call's POST, and ended is
	// closed once its goroutine has finished with the response stream.
	abort context.CancelFunc
	ended chan struct{}
	// closing is set, under Client.mu, when the client closes the call's
	// stream to cancel it.
	closing bool
	// progress is set for a call whose request carries its id as
	// progressToken.
	progress bool
}

// Done is closed when the call has a response, failed or was cancelled.
func (c *Call) Done() <-chan struct{} { return c.done }

// Written is closed once the request has left the client: queued for the
// server's stdin, or its HTTP body written (or the POST failed).
func (c *Call) Written() <-chan struct{} { return c.written }

func (c *Call) markWritten() { c.wOnce.Do(func() { close(c.written) }) }

// Result returns the response or the error that ended the call. It blocks
// until Done is closed.
func (c *Call) Result() (*Message, error) {
	<-c.done
	return c.resp, c.err
}

// Finished is when the call ended; valid after Done is closed.
func (c *Call) Finished() time.Time {
	<-c.done
	return c.finished
}

// Latency is Finished minus Sent; valid after Done is closed.
func (c *Call) Latency() time.Duration { return c.Finished().Sub(c.Sent) }

// transport moves bytes; the Client owns ids, waiters and counters.
type transport interface {
	// send transmits a request for call; the transport reports the outcome
	// through Client.deliver or Client.fail.
	send(call *Call, body []byte) error
	// notify transmits a notification of the given method.
	notify(ctx context.Context, method string, body []byte) error
	// flush waits until everything sent so far has left the client.
	flush(ctx context.Context) error
	// raw transmits body as is and collects what comes back within wait.
	raw(ctx context.Context, body []byte, wait time.Duration) (*RawReply, error)
	// alive reports why the server is gone, or nil.
	alive() error
	// progress grows whenever something leaves the client.
	progress() int64
	// close ends the connection and every goroutine the transport started.
	close() error
}

// Client is a connection to one MCP server.
type Client struct {
	tr  transport
	pid int

	nextID atomic.Int64

	mu        sync.Mutex
	pending   map[int64]*Call
	cancelled map[int64]*Call // cancelled calls: a response for one is late
	// quiet holds the ids of cancelled calls that asked for progress: a
	// progress notification for one is late. Never pruned: a server may
	// send progress after a late response or after closing the stream.
	quiet     map[int64]struct{}
	lost      error // set once the connection is gone
	stats     Stats
	unmatched []RawMessage  // responses that matched no call (stdio probes)
	arrived   chan struct{} // size 1: signals a new unmatched message

	// modern is set by Discover: requests carry the envelope.
	modern atomic.Bool

	// Filled by Initialize or Discover, before any other goroutine reads
	// them.
	server      json.RawMessage
	negotiated  string
	initialized atomic.Bool
}

// Era is the era the client speaks: [Modern] once [Client.Discover] was
// called, [Legacy] otherwise.
func (c *Client) Era() Era {
	if c.modern.Load() {
		return Modern
	}
	return Legacy
}

// ServerInfo returns the serverInfo object of the initialize result (modern:
// the io.modelcontextprotocol/serverInfo of the discover result's _meta), once
// the handshake succeeded.
func (c *Client) ServerInfo() json.RawMessage {
	if !c.initialized.Load() {
		return nil
	}
	return c.server
}

// Negotiated returns the protocol version the server answered in
// initialize, once Initialize succeeded; [ModernVersion] once Discover
// succeeded.
func (c *Client) Negotiated() string {
	if !c.initialized.Load() {
		return ""
	}
	return c.negotiated
}

func newClient() *Client {
	return &Client{
		pending:   make(map[int64]*Call),
		cancelled: make(map[int64]*Call),
		quiet:     make(map[int64]struct{}),
		arrived:   make(chan struct{}, 1),
	}
}

// PID is the server's process id for a stdio client, 0 otherwise.
func (c *Client) PID() int { return c.pid }

// Stats returns a consistent snapshot of the client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Open = int64(len(c.cancelled))
	return s
}

// Lost returns the error that ended the connection, or nil while it is up.
func (c *Client) Lost() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// Initialize performs the MCP handshake: initialize with [ProtocolVersion],
// then notifications/initialized.
func (c *Client) Initialize(ctx context.Context) error {
	params := map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "mcpbench", "version": "1.0.0"},
	}
	msg, err := c.Call(ctx, "initialize", params)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if msg.Error != nil {
		return fmt.Errorf("initialize: %w", msg.Error)
	}
	var res struct {
		ProtocolVersion string          `json:"protocolVersion"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
	}
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		return fmt.Errorf("initialize: result: %w", err)
	}
	if res.ProtocolVersion == "" {
		return errors.New("initialize: result has no protocolVersion")
	}
	c.server, c.negotiated = res.ServerInfo, res.ProtocolVersion
	c.initialized.Store(true)
	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	return nil
}

// Discover switches the client to the modern era (revision 2026-07-28) and
// probes the server with server/discover, as the spec asks clients to. Call
// it instead of [Client.Initialize], before any other request. From then on
// every request carries the envelope in params._meta; over HTTP every request
// also carries MCP-Protocol-Version, Mcp-Method and, for tools/call,
// prompts/get and resources/read, Mcp-Name, and no session id.
//
// It fails with an error wrapping [ErrNotModern] when the server answers but
// does not serve the modern era: a JSON-RPC error, an HTTP status without
// one, or a result whose supportedVersions lack 2026-07-28. A transport error
// (a refused connection, a server that exited) is returned as it is.
func (c *Client) Discover(ctx context.Context) error {
	c.modern.Store(true)
	msg, err := c.Call(ctx, "server/discover", nil)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) {
			return fmt.Errorf("%w: server/discover: %v", ErrNotModern, se)
		}
		return fmt.Errorf("server/discover: %w", err)
	}
	if msg.Error != nil {
		return fmt.Errorf("%w: server/discover: %v", ErrNotModern, msg.Error)
	}
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
		Meta              struct {
			ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		return fmt.Errorf("%w: server/discover result: %v", ErrNotModern, err)
	}
	if !slices.Contains(res.SupportedVersions, ModernVersion) {
		return fmt.Errorf("%w: server/discover lists versions %q", ErrNotModern, res.SupportedVersions)
	}
	c.server, c.negotiated = res.Meta.ServerInfo, ModernVersion
	c.initialized.Store(true)
	return nil
}

// PingMethod is the request that checks the server still answers: ping in
// the legacy era, server/discover in the modern era, which has no ping.
func (c *Client) PingMethod() string {
	if c.modern.Load() {
		return "server/discover"
	}
	return "ping"
}

// Start sends a request and returns without waiting for its response.
// params is encoded with encoding/json, except a json.RawMessage, which is
// sent as is. In the modern era the envelope is added to params._meta.
func (c *Client) Start(method string, params any) (*Call, error) {
	return c.start(method, params, false)
}

// StartWithProgress is [Client.Start] for a request that asks for progress:
// its params._meta.progressToken is the request's id. Progress
// notifications for it that arrive after its cancellation was sent are
// counted in [Stats.LateProgress].
func (c *Client) StartWithProgress(method string, params any) (*Call, error) {
	return c.start(method, params, true)
}

func (c *Client) start(method string, params any, progress bool) (*Call, error) {
	id := c.nextID.Add(1) - 1
	modern := c.modern.Load()
	if progress {
		p, err := encodeParams(method, params, false)
		if err != nil {
			return nil, err
		}
		if params, err = withProgressToken(p, id); err != nil {
			return nil, fmt.Errorf("%s params: %w", method, err)
		}
	}
	p, err := encodeParams(method, params, modern)
	if err != nil {
		return nil, err
	}
	body := encode(id, method, p)
	call := &Call{ID: id, Method: method, Sent: time.Now(), done: make(chan struct{}), written: make(chan struct{}), progress: progress}
	if modern {
		call.name = headerName(method, p)
	}
	c.mu.Lock()
	if c.lost != nil {
		err := c.lost
		c.mu.Unlock()
		return nil, err
	}
	c.pending[id] = call
	c.mu.Unlock()
	if err := c.tr.send(call, body); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		call.markWritten()
		return nil, err
	}
	return call, nil
}

// Call sends a request and waits for its response or for ctx. A JSON-RPC
// error response is returned as a message, not as an error.
func (c *Client) Call(ctx context.Context, method string, params any) (*Message, error) {
	call, err := c.Start(method, params)
	if err != nil {
		return nil, err
	}
	select {
	case <-call.done:
		return call.resp, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// CallTool calls tools/call and decodes the result. A JSON-RPC error comes
// back as a *WireError.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*ToolResult, error) {
	msg, err := c.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	return DecodeToolResult(msg)
}

// DecodeToolResult decodes a tools/call response.
func DecodeToolResult(msg *Message) (*ToolResult, error) {
	if msg.Error != nil {
		return nil, msg.Error
	}
	var r ToolResult
	if err := json.Unmarshal(msg.Result, &r); err != nil {
		return nil, fmt.Errorf("tools/call result: %w", err)
	}
	return &r, nil
}

// Notify sends a notification. Notifications carry no envelope in either
// era.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	p, err := encodeParams(method, params, false)
	if err != nil {
		return err
	}
	return c.tr.notify(ctx, method, encode(-1, method, p))
}

// streamCloser is a transport that, in the modern era, cancels a call by
// closing its response stream instead of sending notifications/cancelled.
type streamCloser interface {
	// closeStreams closes the calls' response streams and waits until they
	// are closed, or ctx is done.
	closeStreams(ctx context.Context, calls []*Call) error
}

// closer returns the transport as a streamCloser when cancellations close
// streams: over HTTP in the modern era.
func (c *Client) closer() (streamCloser, bool) {
	sc, ok := c.tr.(streamCloser)
	return sc, ok && c.modern.Load()
}

// Cancel ends call on the client side and cancels it on the server: over
// stdio, and over legacy HTTP, with notifications/cancelled; over modern HTTP
// by closing the call's response stream, which it waits for. It reports
// false, and does nothing, if the call had already ended. From now on a
// response for the call counts as late.
func (c *Client) Cancel(ctx context.Context, call *Call, reason string) (bool, error) {
	if !c.markCancelled(call) {
		return false, nil
	}
	if sc, ok := c.closer(); ok {
		return true, sc.closeStreams(ctx, []*Call{call})
	}
	return true, c.Notify(ctx, "notifications/cancelled", cancelParams(call.ID, reason))
}

// CancelMany cancels calls like [Client.Cancel], as fast as the transport
// allows (stdio: notifications queued and written in batches; legacy HTTP:
// up to parallel POSTs at once; modern HTTP: every stream closed at once). It
// returns how many cancellations were sent; calls that had already ended are
// skipped.
func (c *Client) CancelMany(ctx context.Context, calls []*Call, reason string, parallel int) (int, error) {
	var marked []*Call
	for _, call := range calls {
		if c.markCancelled(call) {
			marked = append(marked, call)
		}
	}
	if sc, ok := c.closer(); ok {
		return len(marked), sc.closeStreams(ctx, marked)
	}
	const method = "notifications/cancelled"
	bodies := make([][]byte, 0, len(marked))
	for _, call := range marked {
		p, err := encodeParams(method, cancelParams(call.ID, reason), false)
		if err != nil {
			return 0, err
		}
		bodies = append(bodies, encode(-1, method, p))
	}
	if parallel < 1 {
		parallel = 1
	}
	if mt, ok := c.tr.(interface {
		notifyMany(context.Context, string, [][]byte, int) error
	}); ok {
		return len(bodies), mt.notifyMany(ctx, method, bodies, parallel)
	}
	for _, b := range bodies {
		if err := c.tr.notify(ctx, method, b); err != nil {
			return 0, err
		}
	}
	return len(bodies), nil
}

// Progress is a counter that grows whenever something leaves the client:
// bytes written to the server's stdin, or HTTP requests written and
// notifications accepted. A caller waiting on [Client.Flush] or
// [Client.CancelMany] can watch it to tell a slow server from one that
// stopped reading.
func (c *Client) Progress() int64 { return c.tr.progress() }

// Flush waits until every request and notification sent so far has been
// written to the server (stdio: into its stdin; HTTP: the POSTs' bodies).
func (c *Client) Flush(ctx context.Context) error { return c.tr.flush(ctx) }

// Alive reports why the server is gone (a stdio server exited), or nil.
func (c *Client) Alive() error {
	if err := c.tr.alive(); err != nil {
		return err
	}
	return c.Lost()
}

// AbortCancelled closes the HTTP response streams of cancelled calls that are
// still open. It does nothing over stdio.
func (c *Client) AbortCancelled() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.cancelled {
		if call.abort != nil {
			call.abort()
		}
	}
}

// Close ends the connection: over stdio it closes the server's stdin and
// waits for the process to exit (sending SIGTERM, then SIGKILL, if it does
// not); over HTTP it deletes the session. Calls still waiting end with
// [ErrClosed].
func (c *Client) Close() error {
	err := c.tr.close()
	c.fail(ErrClosed)
	return err
}

func (c *Client) markCancelled(call *Call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[call.ID] != call {
		return false
	}
	delete(c.pending, call.ID)
	c.cancelled[call.ID] = call
	if call.progress {
		c.quiet[call.ID] = struct{}{}
	}
	call.err = ErrCancelled
	call.finished = time.Now()
	close(call.done)
	return true
}

// deliver dispatches one received message. raw is the message (or the
// batch holding it) as received.
func (c *Client) deliver(msg *Message, raw []byte, batch bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case msg.Method == "notifications/progress" && msg.ID == nil:
		c.stats.Notifications++
		c.stats.Progress++
		if id, ok := progressID(msg.Params); ok {
			if _, late := c.quiet[id]; late {
				c.stats.LateProgress++
			}
		}
		return
	case msg.Method != "" && msg.ID == nil:
		c.stats.Notifications++
		return
	case msg.Method != "":
		c.stats.ServerRequests++
		return
	}
	if id, ok := intID(msg.ID); ok {
		if call := c.pending[id]; call != nil {
			delete(c.pending, id)
			call.resp, call.finished = msg, time.Now()
			close(call.done)
			return
		}
		if _, ok := c.cancelled[id]; ok {
			delete(c.cancelled, id)
			c.stats.Late++
			if isSuccess(msg) {
				c.stats.LateOK++
			}
			return
		}
	}
	c.stats.Unknown++
	c.keepUnmatched(RawMessage{Msg: msg, Raw: bytes.Clone(raw), Batch: batch})
}

// keepUnmatched stores a message for Raw; c.mu is held.
func (c *Client) keepUnmatched(m RawMessage) {
	const keep = 64 // enough for any probe; older ones are dropped
	if len(c.unmatched) == keep {
		c.unmatched = c.unmatched[1:]
	}
	c.unmatched = append(c.unmatched, m)
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

// fail ends every waiting call with err, once the connection is gone.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost == nil {
		c.lost = err
	}
	now := time.Now()
	for id, call := range c.pending {
		delete(c.pending, id)
		call.err, call.finished = err, now
		close(call.done)
	}
}

// failCall ends one call with err if it is still waiting (HTTP). If it was
// cancelled, its stream ended quietly.
func (c *Client) failCall(call *Call, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[call.ID] == call {
		delete(c.pending, call.ID)
		call.err, call.finished = err, time.Now()
		close(call.done)
		return
	}
	if c.cancelled[call.ID] == call {
		delete(c.cancelled, call.ID)
		if call.closing {
			c.stats.ClosedByClient++
		} else {
			c.stats.QuietCloses++
		}
	}
}

// answered reports whether call got its response.
func (c *Client) answered(call *Call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return call.resp != nil
}

func (c *Client) countGarbage() {
	c.mu.Lock()
	c.stats.Garbage++
	c.mu.Unlock()
}

// isSuccess reports whether a response is a result that is not a tool error.
func isSuccess(msg *Message) bool {
	if msg.Error != nil {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(msg.Result, &r)
	return !r.IsError
}

func intID(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || raw[0] == '"' {
		return 0, false
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, false
	}
	return id, true
}

// encodeParams encodes a message's params: a json.RawMessage as is
// (pre-encoded by the caller, as load loops do to keep the client lean),
// anything else with encoding/json; nil means no params. With envelope, the
// modern envelope is added to params._meta (and params made if there were
// none).
func encodeParams(method string, params any, envelope bool) ([]byte, error) {
	var p []byte
	if raw, ok := params.(json.RawMessage); ok {
		p = raw
	} else if params != nil {
		var err error
		if p, err = json.Marshal(params); err != nil {
			return nil, fmt.Errorf("%s params: %w", method, err)
		}
	}
	if !envelope {
		return p, nil
	}
	p, err := WithEnvelope(p)
	if err != nil {
		return nil, fmt.Errorf("%s params: %w", method, err)
	}
	return p, nil
}

// encode builds a request (id >= 0) or a notification (id < 0) with the
// encoded params (nil: none).
func encode(id int64, method string, params []byte) []byte {
	m, _ := json.Marshal(method) // a string always encodes
	b := make([]byte, 0, 48+len(m)+len(params))
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id >= 0 {
		b = append(b, `"id":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = append(b, m...)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// WithEnvelope returns the params of a modern request: params (a JSON object,
// or nil or null for none) with the envelope of revision 2026-07-28 in its
// _meta, beside any member _meta already had:
//
//	{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}, ...}
//
// An object without a "_meta" anywhere gets the envelope spliced in front of
// its members, byte for byte; otherwise it is decoded and encoded again.
func WithEnvelope(params []byte) ([]byte, error) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return []byte(`{"_meta":{` + envelopeMembers + `}}`), nil
	}
	if p[0] != '{' {
		return nil, errors.New("params must be a JSON object")
	}
	if !bytes.Contains(p, []byte(`"_meta"`)) {
		rest := bytes.TrimSpace(p[1:])
		if len(rest) == 0 {
			return nil, errors.New("params: unexpected end of JSON input")
		}
		out := make([]byte, 0, len(p)+len(envelopeMembers)+12)
		out = append(out, `{"_meta":{`...)
		out = append(out, envelopeMembers...)
		out = append(out, '}')
		if rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, rest...), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p, &obj); err != nil {
		return nil, err
	}
	meta := map[string]json.RawMessage{}
	if m := bytes.TrimSpace(obj["_meta"]); len(m) > 0 && string(m) != "null" {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal([]byte("{"+envelopeMembers+"}"), &env); err != nil {
		return nil, err
	}
	maps.Copy(meta, env)
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = m
	return json.Marshal(obj)
}

// withProgressToken returns params (a JSON object, or nil for none) with
// _meta.progressToken set to id.
func withProgressToken(params []byte, id int64) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if p := bytes.TrimSpace(params); len(p) > 0 && string(p) != "null" {
		if err := json.Unmarshal(p, &obj); err != nil {
			return nil, err
		}
	}
	meta := map[string]json.RawMessage{}
	if m := bytes.TrimSpace(obj["_meta"]); len(m) > 0 && string(m) != "null" {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
	}
	meta["progressToken"] = json.RawMessage(strconv.FormatInt(id, 10))
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = m
	return json.Marshal(obj)
}

// progressID reads the integer progressToken of a progress notification's
// params.
func progressID(params json.RawMessage) (int64, bool) {
	var p struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil {
		return 0, false
	}
	return intID(p.Token)
}

// headerName is the value of a modern HTTP request's Mcp-Name header: the
// name of the tool or prompt called, or the URI of the resource read; empty
// for other methods or when params do not say.
func headerName(method string, params []byte) string {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	switch method {
	case "tools/call", "prompts/get":
		_ = json.Unmarshal(params, &p)
		return p.Name
	case "resources/read":
		_ = json.Unmarshal(params, &p)
		return p.URI
	}
	return ""
}

// encodeHeaderValue writes v as the spec's custom headers want it: as it is
// when it is printable ASCII without leading or trailing space, otherwise as
// =?base64?<standard Base64 of its UTF-8 bytes>?=.
func encodeHeaderValue(v string) string {
	const prefix, suffix = "=?base64?", "?="
	plain := v == "" || (v[0] != ' ' && v[len(v)-1] != ' ' && !strings.HasPrefix(v, prefix))
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] <= 0x7E
	}
	if plain {
		return v
	}
	return prefix + base64.StdEncoding.EncodeToString([]byte(v)) + suffix
}

func cancelParams(id int64, reason string) map[string]any {
	p := map[string]any{"requestId": id}
	if reason != "" {
		p["reason"] = reason
	}
	return p
}

// parseMessages decodes one received line or SSE data block. A JSON array
// (a batch answer) is unpacked into its elements and reported as a batch.
func parseMessages(data []byte) (msgs []*Message, batch bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &msgs); err != nil {
			return nil, true, err
		}
		return msgs, true, nil
	}
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, false, err
	}
	return []*Message{&m}, false, nil
}

// RawMessage is a received message that matched no call, as it arrived.
type RawMessage struct {
	Msg *Message
	// Raw holds the bytes received: the message, or the whole batch array
	// that held it.
	Raw []byte
	// Batch is true if the message came inside a JSON array.
	Batch bool
}

// RawReply is what came back for bytes sent with [Client.Raw].
type RawReply struct {
	// Status is the HTTP status code; 0 over stdio.
	Status      int
	ContentType string
	// Messages are the JSON-RPC messages received in reply.
	Messages []RawMessage
	// Body is the HTTP response body when it held no JSON-RPC message
	// (at most 4 KiB).
	Body []byte
	// Elapsed is the time until the first reply (or until wait ran out).
	Elapsed time.Duration
}

// Raw sends body exactly as given (over stdio, followed by a newline) and
// collects the messages that come back for it within wait: over stdio, the
// responses that match no call; over HTTP, the response to the POST. Use it
// for probes only, one at a time: over stdio it cannot tell whose reply an
// unmatched message is.
func (c *Client) Raw(ctx context.Context, body []byte, wait time.Duration) (*RawReply, error) {
	return c.tr.raw(ctx, body, wait)
}

// takeUnmatched removes and returns the unmatched messages received so far.
func (c *Client) takeUnmatched() []RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.unmatched
	c.unmatched = nil
	return m
}
