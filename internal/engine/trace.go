package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/metrics"
	"github.com/toolgrain/toolgrain/protocol"
)

// The span of one request. A request's telemetry starts when its transport delivers it
// ([Connection.DeliverWith], on the transport's goroutine): the trace context in its
// params._meta is read through the propagator, the SERVER span starts with that as its parent
// and a link to the transport's own span (an HTTP server span, when the host traces HTTP). The
// connection actor then hands the request its answer stream wrapped in a tracedStream, which
// ends the span at the moment the answer is queued, whoever sends it: the connection actor, a
// request or operation actor, a listen stream's shutdown. A request silenced by a cancellation
// ends its span when it is silenced; one that is never answered (its stream closed without a
// response) when its stream closes.
//
// What a span carries is what the MCP semantic conventions list, and no more by default: the
// arguments, the result and the original error of an unexpected failure go on a span only when
// the operator opted in (Telemetry.TraceArguments, TraceResults, TraceFailures).

// served is the telemetry of one request or notification the engine serves.
type served struct {
	tel   *telemetry
	ctx   context.Context // the span's context, with the baggage of _meta: the handler's parent
	span  trace.Span      // nil when not tracing
	start time.Time

	method    string
	tool      string // gen_ai.tool.name of a tools/call
	prompt    string // gen_ai.prompt.name of a prompts/get
	transport string // network.transport
	// version is mcp.protocol.version: the envelope's for a modern request, the negotiated one
	// for a legacy request, set by the connection actor before the request can be answered.
	version string
	notify  bool // a notification: it ends when handled

	// Set by the actor that answers a tools/call, before it sends the answer.
	outcome metrics.Outcome
	failure error // the original error of an unexpected failure, when TraceFailures
	result  []byte
	// phase is the open child span of a tools/call's wait for a run slot, or of its call to an
	// actor-backed tool; only its request actor touches it.
	phase trace.Span
	// handler is the span of the handler's run, started by the actor before the handler's
	// goroutine, and ended by the actor when the goroutine's result arrives (or the actor
	// stops); only that actor touches it.
	handler trace.Span

	// silencing is why the request is being silenced, set by the connection actor just before
	// it cancels the call: the handler's return may close the stream before the connection
	// actor ends the span, and whichever comes first names the same cause.
	silencing atomic.Pointer[cancel.Cause]

	ended atomic.Bool
}

// receive starts the telemetry of a request or notification delivered to c; ctx is the
// transport's context of the message.
//
// What a client may name freely never becomes a span name or a metric attribute unchecked: a
// method the engine does not serve is "_OTHER", and the tool or prompt of a request is named
// only when it exists, so that a client cannot make the series of a metric grow without bound.
func (t *telemetry) receive(ctx context.Context, c *Connection, in *inbound) *served {
	m := in.msg
	s := &served{tel: t, ctx: context.Background(), start: time.Now(), method: m.Method, transport: c.transport(), notify: m.IsNotification()}
	if !knownMethods[m.Method] {
		s.method = semOther
	}
	if in.modern && in.env != nil {
		// A version the client made up stays out: it would be a metric series of its own.
		if v := in.env.ProtocolVersion; protocol.IsModernVersion(v) || protocol.IsSupportedVersion(v) {
			s.version = v
		}
	}
	var uri string
	switch m.Method {
	case protocol.MethodToolsCall:
		if name := in.call.params.Name; name != "" {
			if _, ok := c.eng.reg.tools.Load().set.Lookup(name); ok {
				s.tool = name
			}
		}
	case protocol.MethodPromptsGet:
		if name, _ := protocol.ReadStringMember(m.Params, "name"); name != "" {
			if _, ok := c.eng.reg.prompts.Load().Lookup(name); ok {
				s.prompt = name
			}
		}
	case protocol.MethodResourcesRead, protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		uri, _ = protocol.ReadStringMember(m.Params, "uri")
	}
	if t.prop != nil {
		if carrier := metaCarrierOf(in); carrier != nil {
			s.ctx = t.prop.Extract(s.ctx, carrier)
		}
	}
	if t.tracer == nil {
		return s
	}
	name := s.method
	switch {
	case s.tool != "":
		name += " " + s.tool
	case s.prompt != "":
		name += " " + s.prompt
	}
	attrs := appendTarget(make([]attribute.KeyValue, 0, 8), s.method, s.tool, s.prompt)
	if !s.notify {
		attrs = append(attrs, attribute.String(semRequestID, idString(m.ID)))
	}
	if uri != "" {
		attrs = append(attrs, attribute.String(semResourceURI, uri))
	}
	if s.transport != "" {
		attrs = append(attrs, attribute.String(semTransport, s.transport))
	}
	if sid := c.session.Load(); sid != nil && !in.modern {
		attrs = append(attrs, attribute.String(semSessionID, *sid))
	}
	opts := []trace.SpanStartOption{serverKind, trace.WithAttributes(attrs...)}
	if link := trace.SpanContextFromContext(ctx); link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	s.ctx, s.span = t.tracer.Start(s.ctx, name, opts...)
	return s
}

// knownMethods are the methods the engine serves, requests and notifications from clients of
// either era; any other is "_OTHER" in telemetry.
var knownMethods = map[string]bool{
	protocol.MethodInitialize: true, protocol.MethodPing: true,
	protocol.MethodToolsList: true, protocol.MethodToolsCall: true,
	protocol.MethodResourcesList: true, protocol.MethodResourcesTemplatesList: true, protocol.MethodResourcesRead: true,
	protocol.MethodResourcesSubscribe: true, protocol.MethodResourcesUnsubscribe: true,
	protocol.MethodPromptsList: true, protocol.MethodPromptsGet: true,
	protocol.MethodLoggingSetLevel: true, protocol.MethodCompletionComplete: true,
	protocol.MethodServerDiscover: true, protocol.MethodSubscriptionsListen: true,
	protocol.MethodTasksGet: true, protocol.MethodTasksUpdate: true, protocol.MethodTasksCancel: true,
	protocol.MethodInitialized: true, protocol.MethodCancelled: true, protocol.MethodProgress: true,
	protocol.MethodRootsListChanged: true,
}

// The span kinds, made once.
var (
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
)

// idString is jsonrpc.request.id: a string id's value, an integer's digits.
func idString(id protocol.ID) string {
	raw := id.String()
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal([]byte(raw), &s) == nil {
		return s
	}
	return raw
}

// context is the request's context for its handler: its span and the baggage of its _meta, or
// the background context when there is no telemetry.
func (s *served) context() context.Context {
	if s == nil {
		return context.Background()
	}
	return s.ctx
}

// wrap returns the stream the request's answers go to, ending the span with the answer.
func (s *served) wrap(st Stream) Stream {
	if s == nil || s.notify {
		return st
	}
	return &tracedStream{Stream: st, rec: s}
}

// child starts a span under the request's span, or returns nil when the request is not
// recorded.
func (s *served) child(name string) trace.Span {
	if s == nil || s.span == nil || !s.span.IsRecording() {
		return nil
	}
	_, sp := s.tel.tracer.Start(s.ctx, name, internalKind)
	return sp
}

// beginPhase opens the child span of a phase of a tools/call (the wait for a run slot, the
// call of an actor-backed tool) and returns it; nil when the request is not recorded.
func (s *served) beginPhase(name string) trace.Span {
	if s == nil {
		return nil
	}
	s.phase = s.child(name)
	return s.phase
}

// endPhase ends the phase's span, if one is open.
func (s *served) endPhase() {
	if s != nil && s.phase != nil {
		s.phase.End()
		s.phase = nil
	}
}

// startHandler starts the span of the handler's run and returns it; nil when the request is
// not recorded.
func (s *served) startHandler() trace.Span {
	if s == nil {
		return nil
	}
	s.handler = s.child(spanHandler)
	return s.handler
}

// endHandler ends the span of the handler's run, if it is open, marking it failed when err
// is not nil.
func (s *served) endHandler(err error) {
	if s != nil && s.handler != nil {
		endSpan(s.handler, err)
		s.handler = nil
	}
}

// endSpan ends a child span, marking it failed when err is not nil (without its text: that
// is for the server span, and only when the operator opted in).
func endSpan(sp trace.Span, err error) {
	if sp == nil {
		return
	}
	if err != nil {
		sp.SetStatus(codes.Error, "")
	}
	sp.End()
}

// settled records the outcome of a tools/call about to be answered.
func (s *served) settled(o metrics.Outcome) {
	if s != nil {
		s.outcome = o
	}
}

// failed records the original error of an unexpected failure about to be answered, when the
// operator opted in.
func (s *served) failed(err error) {
	if s != nil && s.tel.failures {
		s.failure = err
	}
}

// arguments puts a tools/call's arguments on its span, when the operator opted in for the tool.
func (s *served) arguments(args json.RawMessage) {
	if s != nil && s.span != nil && s.tel.args[s.tool] && s.span.IsRecording() {
		s.span.SetAttributes(attribute.String(semToolArguments, string(args)))
	}
}

// succeeded keeps a tools/call's successful result for its span, when the operator opted in
// for the tool.
func (s *served) succeeded(res *protocol.CallToolResult) {
	if s == nil || s.span == nil || !s.tel.results[s.tool] || res.IsError {
		return
	}
	s.result, _ = json.Marshal(res)
}

// answered ends the request with the answer frame about to be queued.
func (s *served) answered(frame []byte, kind protocol.FrameKind) {
	if !s.ended.CompareAndSwap(false, true) {
		return
	}
	var errType, desc string
	switch {
	case kind == protocol.FrameError:
		var e struct {
			Error struct {
				Code    json.Number `json:"code"`
				Message string      `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(frame, &e)
		errType, desc = e.Error.Code.String(), e.Error.Message
		if errType == "" {
			errType = semOther
		}
	case s.outcome == metrics.ToolError || s.outcome == metrics.Invalid || s.outcome == metrics.Failed || s.outcome == metrics.Timeout:
		errType = semToolError
	}
	s.finish(errType, desc)
}

// finish ends the span and records the operation's duration.
func (s *served) finish(errType, desc string) {
	end := time.Now()
	if sp := s.span; sp != nil && sp.IsRecording() {
		if s.version != "" {
			sp.SetAttributes(attribute.String(semProtocolVersion, s.version))
		}
		if s.outcome != "" {
			sp.SetAttributes(attribute.String(attrOutcome, string(s.outcome)))
		}
		if errType != "" {
			sp.SetAttributes(attribute.String(semErrorType, errType))
			if errType != semToolError {
				sp.SetAttributes(attribute.String(semStatusCode, errType))
			}
			sp.SetStatus(codes.Error, desc)
		}
		if s.failure != nil {
			sp.RecordError(s.failure)
		}
		if s.result != nil {
			sp.SetAttributes(attribute.String(semToolResult, string(s.result)))
		}
	}
	if s.span != nil {
		s.span.End()
	}
	if h := s.tel.opDuration; h != nil {
		key := opKey{method: s.method, tool: s.tool, prompt: s.prompt, errType: errType, version: s.version, transport: s.transport}
		h.Record(s.ctx, end.Sub(s.start).Seconds(), s.tel.opAttrs(key))
	}
}

// handled ends a notification once the connection actor has handled it.
func (s *served) handled() {
	if s != nil && s.notify && s.ended.CompareAndSwap(false, true) {
		s.finish("", "")
	}
}

// cancelled ends a request silenced by cause: nothing was sent for it, so its span ends with
// no error and no status code, marked toolgrain.request.cancelled with the cause, and no
// operation duration is recorded (the conventions measure a request until its answer).
func (s *served) cancelled(cause cancel.Cause) {
	if s == nil || !s.ended.CompareAndSwap(false, true) || s.span == nil {
		return
	}
	s.span.SetAttributes(attribute.Bool(attrCancelled, true), attribute.String(attrCancelCause, causeName(cause)))
	if s.version != "" {
		s.span.SetAttributes(attribute.String(semProtocolVersion, s.version))
	}
	s.span.End()
}

// silence records cause as why the request is about to be silenced.
func (s *served) silence(cause cancel.Cause) {
	if s != nil {
		s.silencing.Store(&cause)
	}
}

// silencedBy is the cause recorded by silence; the zero Cause when none was.
func (s *served) silencedBy() cancel.Cause {
	if c := s.silencing.Load(); c != nil {
		return *c
	}
	return cancel.Cause{}
}

func causeName(c cancel.Cause) string {
	switch c {
	case cancel.ErrCancelledByClient:
		return "client"
	case cancel.ErrConnectionClosed:
		return "connection_closed"
	case cancel.ErrShutdown:
		return "shutdown"
	case cancel.ErrTaskCancelled:
		return "task_cancelled"
	case cancel.ErrTaskExpired:
		return "task_expired"
	}
	return "other"
}

// spanContext is the context of the request's span; invalid when the request is not traced.
func (s *served) spanContext() trace.SpanContext {
	if s == nil || s.span == nil {
		return trace.SpanContext{}
	}
	return s.span.SpanContext()
}

// startTask starts the span of a task's run, under the span of the tools/call that asked for
// the task (parent), which has ended by then: a task outlives the request that made it. Nil
// when the engine does not trace.
func (t *telemetry) startTask(parent trace.SpanContext, tool, id string) trace.Span {
	if t == nil || t.tracer == nil {
		return nil
	}
	ctx := trace.ContextWithSpanContext(context.Background(), parent)
	_, sp := t.tracer.Start(ctx, spanTask, internalKind, trace.WithAttributes(
		attribute.String(semToolName, tool), attribute.String(attrTaskID, id)))
	return sp
}

// endTaskSpan ends the span of a task's run, if it is open, with the task's final status
// ("" when none is stored: it expired, was shut down, or its actor stopped first): an error
// status when failed, the cause when it was cancelled, expired or shut down.
func (t *taskActor) endTaskSpan(status string, failed bool, cause error) {
	sp := t.span
	if sp == nil {
		return
	}
	t.span = nil
	if status != "" {
		sp.SetAttributes(attribute.String(attrTaskStatus, status))
	}
	if c, ok := cause.(cancel.Cause); ok {
		sp.SetAttributes(attribute.Bool(attrCancelled, true), attribute.String(attrCancelCause, causeName(c)))
	}
	if failed {
		sp.SetStatus(codes.Error, "")
	}
	sp.End()
}

// tracedStream is the answer stream of a traced request: the first response frame through it
// ends the request's span, just before the frame is queued, so the span has ended by the time a
// client reads the answer. A stream closed without a response ends the span as a request
// silenced.
type tracedStream struct {
	Stream
	rec *served
}

func (s *tracedStream) Send(frame []byte) {
	if !s.rec.ended.Load() {
		if kind := protocol.KindOf(frame); kind.IsResponse() {
			s.rec.answered(frame, kind)
		}
	}
	s.Stream.Send(frame)
}

func (s *tracedStream) Close() {
	if !s.rec.ended.Load() {
		s.rec.cancelled(s.rec.silencedBy())
	}
	s.Stream.Close()
}

// Disconnect passes client.CloseStream on to the transport's stream.
func (s *tracedStream) Disconnect() bool {
	d, ok := s.Stream.(Disconnecter)
	return ok && d.Disconnect()
}

// recordOf is the telemetry of the request whose answers go to s; nil when it has none.
func recordOf(s Stream) *served {
	if t, ok := s.(*tracedStream); ok {
		return t.rec
	}
	return nil
}

// transportStream is the stream a transport handed over: s itself, or the stream a
// tracedStream wraps.
func transportStream(s Stream) Stream {
	if t, ok := s.(*tracedStream); ok {
		return t.Stream
	}
	return s
}

// metaCarrier reads the string members of a request's params._meta for a propagator.
type metaCarrier map[string]json.RawMessage

// metaCarrierOf returns the carrier of in's params._meta, or nil when it has none.
func metaCarrierOf(in *inbound) metaCarrier {
	var meta json.RawMessage
	switch {
	case in.env != nil:
		meta = in.env.Meta
	case in.call.msg == in.msg && in.msg.Method == protocol.MethodToolsCall:
		meta = in.call.params.Meta
	default:
		var p struct {
			Meta json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(in.msg.Params, &p) != nil {
			return nil
		}
		meta = p.Meta
	}
	if len(meta) == 0 {
		return nil
	}
	var c metaCarrier
	if json.Unmarshal(meta, &c) != nil {
		return nil
	}
	return c
}

func (c metaCarrier) Get(key string) string {
	var v string
	if raw, ok := c[key]; !ok || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	return v
}

// Set does nothing: the engine only reads the trace context of requests.
func (metaCarrier) Set(string, string) {}

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// serving readies the connection actor to handle the traced message in: the record learns the
// version of a legacy session, and becomes the record of the message being handled. It returns
// the stream the message's answers go to.
func (c *connectionActor) serving(in *inbound) Stream {
	rec := in.rec
	if !in.modern {
		rec.version = c.version
	}
	c.rec = rec
	return rec.wrap(in.stream)
}
