package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/upstream"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// toolHandler is the handler of a mounted tool: it forwards each call to the upstream's actor.
type toolHandler struct {
	m         *mount
	name      string // the upstream's name
	served    string // the name the server serves it under
	plan      *argPlan
	hasOutput bool
	head      []byte            // {"name":"<name>","arguments":
	nameOnly  json.RawMessage   // {"name":"<name>"}
	headers   map[string]string // the arguments its input schema annotates with x-mcp-header, to their header's Name
}

func newToolHandler(m *mount, name, served string, plan *argPlan, hasOutput bool, headers map[string]string) *toolHandler {
	head := []byte(`{"name":`)
	q, _ := json.Marshal(name)
	head = append(head, q...)
	nameOnly := append(append([]byte(nil), head...), '}')
	head = append(head, `,"arguments":`...)
	return &toolHandler{m: m, name: name, served: served, plan: plan, hasOutput: hasOutput, head: head, nameOnly: nameOnly, headers: headers}
}

// headerParams returns the Mcp-Param-{Name} values of args (MCP 2026-07-28 over HTTP): the
// annotated arguments present and not null, strings in the header value encoding, integers and
// booleans as their JSON text.
func (h *toolHandler) headerParams(args json.RawMessage) map[string]string {
	if len(h.headers) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	out := make(map[string]string, len(h.headers))
	for arg, header := range h.headers {
		v, ok := m[arg]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[header] = protocol.EncodeHeaderValue(s)
		} else {
			out[header] = string(bytes.TrimSpace(v))
		}
	}
	return out
}

// headerArgs reads the x-mcp-header annotations of an input schema's top-level properties.
func headerArgs(schema json.RawMessage) map[string]string {
	if !bytes.Contains(schema, []byte(`"x-mcp-header"`)) {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := map[string]string{}
	for arg, p := range s.Properties {
		if p.Header != "" {
			out[arg] = p.Header
		}
	}
	return out
}

// callResult is a tools/call result as an upstream sends it, in either era.
type callResult struct {
	Content           []protocol.Content         `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
	Meta              json.RawMessage            `json:"_meta"`
	ResultType        string                     `json:"resultType"`
	InputRequests     map[string]json.RawMessage `json:"inputRequests"`
	RequestState      string                     `json:"requestState"`
}

// rounds is the state a call to a modern upstream carries from one input round of its client
// to the next: the upstream's requestState and the requests it made.
type rounds struct {
	Round    int                        `json:"r"`
	State    string                     `json:"s,omitempty"`
	Requests map[string]json.RawMessage `json:"q"`
}

// Handle forwards the call, on the handler's goroutine: for a call StartCall leaves to it (a
// modern client's retry after an input round), and under middleware.
func (h *toolHandler) Handle(ctx context.Context, req *tools.Request) (*tools.Result, error) {
	args, err := h.plan.apply(req.Arguments)
	if err != nil {
		return nil, h.m.errorf(protocol.MethodToolsCall, h.name, err)
	}
	ctx, cancel := h.m.callContext(ctx)
	defer cancel()

	var responses json.RawMessage
	var st rounds
	if raw := client.State(ctx); raw != nil {
		// A modern client's retry: the answers to the upstream's requests of the last round.
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, h.m.errorf(protocol.MethodToolsCall, h.name, fmt.Errorf("request state: %w", err))
		}
		if responses, err = askClient(ctx, &st); err != nil {
			return nil, err
		}
	}
	return h.rounds(ctx, args, req.Meta, responses, st.State, st.Round)
}

// rounds calls the upstream until it answers with a result, asking the client for the input
// it requires between the calls.
func (h *toolHandler) rounds(ctx context.Context, args, meta, responses json.RawMessage, state string, round int) (*tools.Result, error) {
	for {
		raw, err := h.m.do(ctx, protocol.MethodToolsCall, h.params(args, responses, state), h.name, h.headerParams(args), meta)
		if err != nil {
			return nil, err
		}
		out, st, err := h.outcome(ctx, raw, round)
		if st == nil {
			return out, err
		}
		if responses, err = askClient(ctx, st); err != nil {
			return nil, err
		}
		state, round = st.State, st.Round
	}
}

// outcome reads the upstream's answer to a call: the result, or the next input round (the
// upstream needs input from the client: asked in this request for a legacy session, in a
// round of the client's own in the modern era).
func (h *toolHandler) outcome(ctx context.Context, raw json.RawMessage, round int) (*tools.Result, *rounds, error) {
	var res callResult
	if err := decodeResult(raw, &res); err != nil {
		return nil, nil, h.m.errorf(protocol.MethodToolsCall, h.name, fmt.Errorf("malformed result: %w", err))
	}
	if res.ResultType == "input_required" {
		st := &rounds{Round: round + 1, State: res.RequestState, Requests: res.InputRequests}
		if blob, err := json.Marshal(st); err == nil {
			_ = client.SetState(ctx, blob)
		}
		return nil, st, nil
	}
	// raw may be in the reader's buffer: what the result keeps of it is copied (the scanner
	// copies the text).
	out := &tools.Result{Content: res.Content, IsError: res.IsError, Meta: clone(stripMeta(res.Meta))}
	if sc := bytes.TrimSpace(res.StructuredContent); len(sc) > 0 && !bytes.Equal(sc, []byte("null")) {
		out.StructuredContent = json.RawMessage(bytes.Clone(res.StructuredContent))
	}
	h.m.mountLinks(out.Content)
	if h.hasOutput && !out.IsError {
		// Checked here to name the upstream in the report; the engine's own check then passes.
		if c, ok := h.m.g.engine().Tool(h.served); ok {
			if _, err := c.Complete(out); err != nil {
				return nil, nil, h.m.errorf(protocol.MethodToolsCall, h.name, err)
			}
		}
	}
	return out, nil, nil
}

// StartCall starts a call without a goroutine (engine.CallStarter): the request actor sends the
// request itself, and the connection's reader turns the answer into the handler's outcome; the
// request actor abandons it when its context ends. A modern client's retry after an input
// round is left to Handle; a call that needs input rounds goes on to them on a goroutine of
// its own.
func (h *toolHandler) StartCall(ctx context.Context, req *tools.Request, done engine.CallDone) engine.StartedCall {
	if client.State(ctx) != nil {
		return nil
	}
	tc := &toolCall{h: h, meta: req.Meta, done: done}
	tc.then = tc
	args, err := h.plan.apply(req.Arguments)
	if err != nil {
		done.CallDone(nil, h.m.errorf(protocol.MethodToolsCall, h.name, err))
		return tc
	}
	tc.args = args
	ctx, tc.cancel = h.m.callContext(ctx)
	// Only the mount's own timeout needs a watch of ctx: the engine tells of the rest.
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	tc.Args = args // after params {"name":...}: no copy of them
	h.m.call(ctx, &tc.proxyCall, h.m.timeout > 0, protocol.MethodToolsCall, h.nameOnly, h.name, h.headerParams(args), req.Meta)
	return tc
}

// toolCall is one call StartCall started.
type toolCall struct {
	proxyCall
	h      *toolHandler
	args   json.RawMessage
	meta   json.RawMessage
	cancel context.CancelFunc
	done   engine.CallDone
}

func (tc *toolCall) finished(raw json.RawMessage, err error) {
	if err != nil {
		tc.end(nil, err)
		return
	}
	out, st, err := tc.h.outcome(tc.ctx, raw, 0)
	if st == nil {
		tc.end(out, err)
		return
	}
	// Owned by the call: the engine waits for its outcome, which it delivers when the rounds
	// end (the call's context bounds them).
	go func() {
		responses, err := askClient(tc.ctx, st)
		if err != nil {
			tc.end(nil, err)
			return
		}
		tc.end(tc.h.rounds(tc.ctx, tc.args, tc.meta, responses, st.State, st.Round))
	}()
}

func (tc *toolCall) end(out *tools.Result, err error) {
	tc.cancel()
	tc.done.CallDone(out, err)
}

// Abandon gives the call up: the engine says that its context ended (engine.StartedCall).
func (tc *toolCall) Abandon(cause error) {
	if tc.m != nil {
		tc.m.up.Abandon(&tc.Call, cause)
	}
}

// mountLinks gives the resource links and embedded resources of a result the URIs the mount
// serves them under, so that the client can read them through the gateway: each one whose
// mounted URI is one of the mount's resources or matches one of its templates. Others (a web
// page, a resource of another server) keep theirs.
func (m *mount) mountLinks(content []protocol.Content) {
	for i := range content {
		m.mountLink(&content[i])
	}
}

// mountLink is mountLinks for one content block (of a result, or of a prompt's message).
func (m *mount) mountLink(c *protocol.Content) {
	if m.prefix == "" {
		return // the URIs are the upstream's
	}
	switch {
	case c.Type == protocol.ContentResourceLink:
		c.URI = m.servedURI(c.URI)
	case c.Type == protocol.ContentResource && c.Resource != nil:
		c.Resource.URI = m.servedURI(c.Resource.URI)
	}
}

// servedURI returns the URI the mount serves the upstream's uri under, or uri when the mount
// does not serve it.
func (m *mount) servedURI(uri string) string {
	served, ok := MountURI(m.prefix, uri)
	if !ok {
		return uri
	}
	if r, ok := m.g.engine().ResolveResource(served); ok {
		if rr, ok := r.(*resourceReader); ok && rr.m == m {
			return served
		}
	}
	return uri
}

// clone copies raw, keeping nil.
func clone(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return bytes.Clone(raw)
}

// params encodes the params of the call to the upstream.
func (h *toolHandler) params(args, responses json.RawMessage, state string) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	b := make([]byte, 0, len(h.head)+len(args)+len(responses)+len(state)+40)
	b = append(b, h.head...)
	b = append(b, args...)
	if len(responses) > 0 {
		b = append(b, `,"inputResponses":`...)
		b = append(b, responses...)
	}
	if state != "" {
		b = append(b, `,"requestState":`...)
		b = strconv.AppendQuote(b, state)
	}
	return append(b, '}')
}

// askClient asks the client of the call for the upstream's input requests of a round, under
// keys of the round ("r1/name"), and returns the answers under the upstream's keys.
func askClient(ctx context.Context, st *rounds) (json.RawMessage, error) {
	reqs := make(map[string]client.InputRequest, len(st.Requests))
	for key, raw := range st.Requests {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("gateway: malformed input request %q from the upstream: %w", key, err)
		}
		var params any
		if len(r.Params) > 0 {
			params = r.Params
		}
		reqs[roundKey(st.Round, key)] = client.InputRequest{Method: r.Method, Params: params}
	}
	got, err := client.Input(ctx, reqs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(got))
	for key := range st.Requests {
		out[key] = got[roundKey(st.Round, key)].Result
	}
	return json.Marshal(out)
}

func roundKey(round int, key string) string { return "r" + strconv.Itoa(round) + "/" + key }

// proxyCall is one call of a caller through the mount: the upstream's Call, and the caller's
// side of it (upstream.Caller): its progress and log messages relayed to the client of the
// call, the upstream's requests to that client served, and the outcome handed to then.
type proxyCall struct {
	upstream.Call
	m       *mount
	ctx     context.Context // the caller's, the mount's timeout included
	spanCtx context.Context // ctx with the hop's span
	peer    client.Peer     // the client of the call; nil for none
	hop     *hop
	then    finisher

	mu   sync.Mutex
	over bool        // Done was called
	stop func() bool // ends the watch of ctx
}

// finisher receives a call's outcome, mapped to what its caller returns. It must not block.
type finisher interface {
	finished(raw json.RawMessage, err error)
}

// call sends p's call on the mount and returns at once, with the caller's _meta passed on;
// its outcome goes to p.then. With watch, the call is given up when ctx ends first; without,
// the caller gives it up itself (upstream.Abandon).
func (m *mount) call(ctx context.Context, p *proxyCall, watch bool, method string, params json.RawMessage, name string, headers map[string]string, meta json.RawMessage) {
	p.m, p.ctx = m, ctx
	p.Method, p.Params, p.Name, p.HeaderParams = method, params, name, headers
	p.Meta, p.Progress = forwardMeta(meta)
	if peer, ok := client.PeerFrom(ctx); ok && peer != nil {
		p.peer = peer
		p.Caps = peer.ClientCapabilities()
	}
	var carrier map[string]string
	p.hop, p.spanCtx, carrier = m.g.tel.begin(ctx, m, &p.Call)
	if len(carrier) > 0 {
		p.Meta = withTraceContext(p.Meta, carrier)
	}
	if ctx.Err() != nil {
		p.Done(nil, context.Cause(ctx))
		return
	}
	m.up.Start(&p.Call, p)
	if !watch {
		return
	}
	stop := context.AfterFunc(ctx, p.abandon)
	p.mu.Lock()
	if p.over {
		p.mu.Unlock()
		stop() // answered already
		return
	}
	p.stop = stop
	p.mu.Unlock()
}

func (p *proxyCall) abandon() { p.m.up.Abandon(&p.Call, context.Cause(p.ctx)) }

// OnProgress relays a progress notification under the client's own token.
func (p *proxyCall) OnProgress(pp *protocol.ProgressParams) {
	_ = tools.ReportProgress(p.ctx, pp.Progress, pp.Total, pp.Message)
}

// OnLog relays a log message at or above the client's level.
func (p *proxyCall) OnLog(params json.RawMessage) {
	if p.peer == nil {
		return
	}
	var lp protocol.LogMessageParams
	if json.Unmarshal(params, &lp) != nil {
		return
	}
	if _, ok := protocol.LogSeverity(lp.Level); !ok {
		return
	}
	if len(lp.Data) == 0 {
		lp.Data = json.RawMessage(`null`)
	}
	_ = p.peer.Log(lp.Level, lp.Logger, lp.Data)
}

// Serve answers a request of the upstream to the client of the call, on its own goroutine.
func (p *proxyCall) Serve(r *upstream.Request) {
	if p.peer == nil {
		r.Answer(nil, protocol.NewError(protocol.CodeMethodNotFound, "%s refused: the call has no client to ask", r.Method))
		return
	}
	p.m.serve(p.spanCtx, p.peer, r)
}

// Done ends the hop and hands the outcome on: the result, or the error the caller returns.
func (p *proxyCall) Done(raw json.RawMessage, err error) {
	p.mu.Lock()
	p.over = true
	stop := p.stop
	p.mu.Unlock()
	if stop != nil {
		stop()
	}
	p.hop.end(err, err == nil && p.Method == protocol.MethodToolsCall && bytes.Contains(raw, []byte(`"isError":true`)))
	if err != nil {
		err = p.m.callError(p.ctx, &p.Call, err)
	}
	p.then.finished(raw, err)
}

// callError is the error a caller returns for a call that failed with err.
func (m *mount) callError(ctx context.Context, c *upstream.Call, err error) error {
	if errors.Is(err, client.ErrInputRequired) {
		return err // the engine answered the client's round; this run is over
	}
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errMountTimeout) {
			return m.errorf(c.Method, c.Name, fmt.Errorf("%w after %s", engine.ErrTimeout, m.timeout))
		}
		return context.Cause(ctx) // cancelled: the engine sends nothing
	}
	var werr *protocol.WireError
	if errors.As(err, &werr) && werr.Code == protocol.CodeMissingClientCapability {
		// A modern upstream that needs a capability the client did not declare: a modern
		// client is told so (-32021), with what is missing.
		return capabilityError(werr)
	}
	return err
}

// do sends one call on the mount and waits for its outcome.
func (m *mount) do(ctx context.Context, method string, params json.RawMessage, name string, headers map[string]string, meta json.RawMessage) (json.RawMessage, error) {
	w := &waiter{ch: make(chan struct{})}
	w.then = w
	m.call(ctx, &w.proxyCall, true, method, params, name, headers, meta)
	<-w.ch // the call's context bounds it
	return w.raw, w.err
}

// waiter is a call that do waits for.
type waiter struct {
	proxyCall
	ch  chan struct{}
	raw json.RawMessage
	err error
}

func (w *waiter) finished(raw json.RawMessage, err error) {
	w.raw, w.err = bytes.Clone(raw), err // raw may be in the reader's buffer
	close(w.ch)
}

// serve answers one request of the upstream to the client of the call: with the client's
// answer, its own error as it gave it, or an error that says why the client cannot be asked.
// When the request ends first (the call is over, or the upstream withdrew it), the upstream's
// actor answers it, or not, as it ends it.
func (m *mount) serve(ctx context.Context, peer client.Peer, r *upstream.Request) {
	if err := client.CheckCapability(peer.ClientCapabilities(), r.Method, json.RawMessage(r.Params)); err != nil {
		r.Answer(nil, refusal(r.Method, err))
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.Context(), cancel)
	defer stop()
	var params any
	if len(r.Params) > 0 {
		params = json.RawMessage(r.Params)
	}
	res, err := peer.Request(rctx, r.Method, params)
	var werr *protocol.WireError
	switch {
	case err == nil:
		r.Answer(res, nil)
	case errors.Is(err, client.ErrInputRequired):
		// A modern client answers in a round of its own, which ends this run of the handler:
		// the upstream's call is given up, and the client's retry makes it again.
		r.GiveUp(err)
	case errors.As(err, &werr):
		r.Answer(nil, werr) // the client's own answer
	case rctx.Err() != nil:
		// The call or the request ended: the upstream's actor says so, when it must.
	default:
		r.Answer(nil, refusal(r.Method, err))
	}
}

// refusal is the error the upstream gets for its request to the client, method, that the
// gateway could not pass on because of err.
func refusal(method string, err error) *protocol.WireError {
	var capErr *client.CapabilityError
	switch {
	case errors.As(err, &capErr):
		return protocol.NewError(protocol.CodeMethodNotFound, "%s refused: the client of this call did not declare the capability %s", method, capErr.Missing)
	case errors.Is(err, client.ErrNoStream):
		return protocol.NewError(protocol.CodeMethodNotFound, "%s refused: the client of this call cannot be asked: its transport carries no requests to it", method)
	case errors.Is(err, client.ErrUnsupported):
		return protocol.NewError(protocol.CodeMethodNotFound, "%s refused: the client of this call cannot take it: %v", method, err)
	}
	return protocol.NewError(protocol.CodeInternalError, "%s failed: the client did not answer", method)
}

// capabilityError turns a modern upstream's -32021 into the error a handler returns for a
// missing client capability.
func capabilityError(werr *protocol.WireError) error {
	var d struct {
		Required map[string]json.RawMessage `json:"requiredCapabilities"`
	}
	_ = json.Unmarshal(werr.Data, &d)
	switch {
	case d.Required["sampling"] != nil:
		return &client.CapabilityError{Method: protocol.MethodSamplingCreateMessage, Missing: "sampling"}
	case d.Required["roots"] != nil:
		return &client.CapabilityError{Method: protocol.MethodRootsList, Missing: "roots"}
	case bytes.Contains(d.Required["elicitation"], []byte(`"url"`)):
		return &client.CapabilityError{Method: protocol.MethodElicitationCreate, Missing: "elicitation.url"}
	}
	return &client.CapabilityError{Method: protocol.MethodElicitationCreate, Missing: "elicitation (form mode)"}
}

// errMountTimeout is the cause of a call's end at the mount's timeout.
var errMountTimeout = errors.New("gateway: the mount's timeout passed")

// callContext bounds a call by the mount's timeout.
func (m *mount) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, m.timeout, errMountTimeout)
}

// errorf wraps a failure of the gateway's own with the upstream's name.
func (m *mount) errorf(method, name string, err error) error {
	return &upstream.Error{Upstream: m.name, Method: method, Name: name, Err: err}
}

// forwardMeta returns the members of a caller's _meta to pass to the upstream (all but the
// progress token and the modern envelope, which the upstream's connection sets), and whether
// the caller asked for progress.
func forwardMeta(meta json.RawMessage) (json.RawMessage, bool) {
	if len(meta) == 0 {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil || len(m) == 0 {
		return nil, false
	}
	_, progress := m["progressToken"]
	if t := m["progressToken"]; bytes.Equal(bytes.TrimSpace(t), []byte("null")) {
		progress = false
	}
	delete(m, "progressToken")
	for k := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil, progress
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, progress
	}
	return raw, progress
}

// withTraceContext adds the members of the trace context (traceparent, tracestate, baggage) to a
// request's _meta, replacing the client's own.
func withTraceContext(meta json.RawMessage, carrier map[string]string) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(meta) > 0 {
		_ = json.Unmarshal(meta, &m)
	}
	for k, v := range carrier {
		m[k], _ = json.Marshal(v)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return meta
	}
	return raw
}

// stripMeta removes from a result's _meta what belongs to the upstream's connection (the
// modern era's serverInfo and the like).
func stripMeta(meta json.RawMessage) json.RawMessage {
	if len(meta) == 0 || !bytes.Contains(meta, []byte("io.modelcontextprotocol/")) {
		return meta
	}
	if onlyReserved(meta) {
		return nil // the common case, a modern result's serverInfo alone: nothing to decode
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	for k := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	raw, _ := json.Marshal(m)
	return raw
}

// resourceReader reads a mounted resource (or a URI of a mounted template) from the upstream.
type resourceReader struct{ m *mount }

func (r *resourceReader) Read(ctx context.Context, req *resources.ReadRequest) (*resources.ReadResult, error) {
	m := r.m
	uri, ok := UnmountURI(m.prefix, req.URI)
	if !ok {
		return nil, resources.ErrNotFound
	}
	ctx, cancel := m.callContext(ctx)
	defer cancel()
	params, _ := json.Marshal(map[string]string{"uri": uri})
	raw, err := m.do(ctx, protocol.MethodResourcesRead, params, uri, nil, req.Meta)
	if err != nil {
		var werr *protocol.WireError
		if errors.As(err, &werr) && (werr.Code == protocol.CodeResourceNotFound || werr.Code == protocol.CodeInvalidParams) {
			return nil, resources.ErrNotFound
		}
		return nil, err
	}
	var res struct {
		Contents []protocol.ResourceContents `json:"contents"`
		Meta     json.RawMessage             `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, m.errorf(protocol.MethodResourcesRead, uri, fmt.Errorf("malformed result: %w", err))
	}
	for i := range res.Contents {
		if served, ok := MountURI(m.prefix, res.Contents[i].URI); ok {
			res.Contents[i].URI = served
		}
		if res.Contents[i].Blob != "" {
			if _, err := base64.StdEncoding.DecodeString(res.Contents[i].Blob); err != nil {
				return nil, m.errorf(protocol.MethodResourcesRead, uri, fmt.Errorf("contents %d: blob is not base64", i))
			}
		}
	}
	return &resources.ReadResult{Contents: res.Contents, Meta: stripMeta(res.Meta)}, nil
}

// promptHandler gets a mounted prompt from the upstream.
type promptHandler struct {
	m    *mount
	name string
}

func (p *promptHandler) Get(ctx context.Context, req *prompts.GetRequest) (*prompts.GetResult, error) {
	m := p.m
	ctx, cancel := m.callContext(ctx)
	defer cancel()
	params, _ := json.Marshal(map[string]any{"name": p.name, "arguments": req.Arguments})
	raw, err := m.do(ctx, protocol.MethodPromptsGet, params, p.name, nil, req.Meta)
	if err != nil {
		var werr *protocol.WireError
		if errors.As(err, &werr) && werr.Code == protocol.CodeInvalidParams {
			// The upstream rejects an argument: its public answer, as a tool's isError is.
			return nil, &prompts.ArgumentError{Reason: werr.Message}
		}
		return nil, err
	}
	var res struct {
		Description string                   `json:"description"`
		Messages    []protocol.PromptMessage `json:"messages"`
		Meta        json.RawMessage          `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, m.errorf(protocol.MethodPromptsGet, p.name, fmt.Errorf("malformed result: %w", err))
	}
	for i := range res.Messages {
		m.mountLink(&res.Messages[i].Content)
	}
	return &prompts.GetResult{Description: res.Description, Messages: res.Messages, Meta: stripMeta(res.Meta)}, nil
}

// completer asks the upstream for completions of an argument of ref, given as the upstream
// knows it.
func (m *mount) completer(ref protocol.CompleteReference, arg string) func(ctx context.Context, value string, args map[string]string) ([]string, error) {
	return func(ctx context.Context, value string, args map[string]string) ([]string, error) {
		ctx, cancel := m.callContext(ctx)
		defer cancel()
		p := protocol.CompleteParams{Ref: ref, Argument: protocol.CompleteArgument{Name: arg, Value: value}}
		if len(args) > 0 {
			p.Context = &protocol.CompleteContext{Arguments: args}
		}
		params, _ := json.Marshal(&p)
		name := ref.Name
		if name == "" {
			name = ref.URI
		}
		raw, err := m.do(ctx, protocol.MethodCompletionComplete, params, name, nil, nil)
		if err != nil {
			return nil, err
		}
		var res protocol.CompleteResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, m.errorf(protocol.MethodCompletionComplete, name, fmt.Errorf("malformed result: %w", err))
		}
		return res.Completion.Values, nil
	}
}

// onlyReserved reports whether every member of the JSON object obj (valid JSON) is named with the
// io.modelcontextprotocol/ prefix, reading the member names only.
func onlyReserved(obj []byte) bool {
	const prefix = `"io.modelcontextprotocol/`
	depth, i := 0, 0
	expectKey := false
	for i < len(obj) {
		switch c := obj[i]; c {
		case '{':
			depth++
			expectKey = depth == 1
			i++
		case '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		case ',':
			expectKey = depth == 1
			i++
		case '"':
			if expectKey && !bytes.HasPrefix(obj[i:], []byte(prefix)) {
				return false
			}
			expectKey = false
			// Skip the string.
			i++
			for i < len(obj) && obj[i] != '"' {
				if obj[i] == '\\' {
					i++
				}
				i++
			}
			i++
		default:
			i++
		}
	}
	return true
}
