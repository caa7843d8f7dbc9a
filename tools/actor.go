package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/internal/toolctx"
)

// Actor-backed tools: a tool whose calls are messages to a protoactor actor instead of calls of
// a Go function. The message contract is:
//
//	engine → tool actor   *ActorCall      one per call; Sender and ReplyTo are where replies go
//	tool actor → engine   *ActorResult    the call's result (a public error result included)
//	                      *ActorError     an unexpected failure (or any error value)
//	                      *ActorProgress  progress, only when ActorCall.Progress is true
//	engine → tool actor   *ActorCancel    the call is over for the engine: stop working on it
//
// See [ActorHandler] for how each reply, or the lack of one, reaches the client.

// DefaultActorTimeout bounds a call of an actor-backed tool whose [Tool.Timeout] is zero, so that
// an actor that drops a call cannot keep it open forever.
const DefaultActorTimeout = 30 * time.Second

// futureGrace is how long after a call's deadline the future of its reply times out on its own.
const futureGrace = time.Second

// ActorHandler is a [Handler] backed by an actor: the tool's calls are sent to the actor as
// [*ActorCall] messages and answered by its replies. Make one with [NewActorHandler] (an actor
// the host runs) or [NewActorPropsHandler] (an actor the server spawns), and set it as a
// [Tool.Handler].
//
// When the server runs a call, its request actor sends the ActorCall with Request, so the
// call's Sender is the request actor (ReplyTo holds the same PID), and waits without blocking
// any actor. The call then ends in exactly one way:
//
//   - [*ActorResult] with a Result: the result goes through the same output checks as a Go
//     handler's (structuredContent, output schema) and reaches the client; a public error
//     result ([ErrorResult]) passes through unchanged.
//   - [*ActorError], or any error value: an unexpected failure. The client sees only "Tool
//     execution failed"; the error goes to the server's OnError.
//   - No reply before the tool's timeout ([Tool.Timeout], or [DefaultActorTimeout] when it is
//     zero): an unexpected failure, and the actor gets an [*ActorCancel].
//   - The actor is stopped or was never there (the server watches it while the call runs, and
//     a dead PID answers with a dead letter): an unexpected failure, an [*ActorStoppedError].
//   - The actor panics on the call: an unexpected failure, an [*ActorPanicError], when the
//     server spawned the actor from Props and so supervises it. An actor of the host's is
//     supervised by the host: if the host stops it, that is seen at once; if the host restarts
//     or resumes it, the call is lost and ends at its timeout.
//   - The client cancels the call, its connection closes or the server shuts down: the server
//     stops waiting at once, sends the actor an [*ActorCancel] and sends the client nothing.
//
// A message of another type is not a reply: the call goes on, and if it then times out, the
// report names that type. Replies that arrive after the call ended go to the actor system's
// dead letters, silently.
// Providers cannot be used with an actor-backed tool ([Compile] rejects them): they hand values
// to a Go handler through its context, and an actor has none.
//
// The actor must reply without blocking its own mailbox for long, as every actor should; it may
// hand the work to a goroutine or another actor and reply later by sending to ReplyTo.
//
// When the server traces (its Config.Telemetry.TracerProvider), the ActorCall's message header
// carries the trace context of the call's span, in the server's propagation format
// (traceparent, tracestate, baggage by default): an actor that makes calls of its own
// continues the trace with ctx.MessageHeader().
type ActorHandler struct {
	system *actor.ActorSystem
	pid    *actor.PID
	props  *actor.Props
	pick   func() *actor.PID
}

var _ Handler = (*ActorHandler)(nil)

// NewActorHandler returns a handler whose calls go to the actor pid of the actor system
// system. The server must run on the same system (the root package's Config.ActorSystem);
// NewServer reports a mismatch. A nil system or pid is reported by [Compile].
func NewActorHandler(system *actor.ActorSystem, pid *actor.PID) *ActorHandler {
	return &ActorHandler{system: system, pid: pid}
}

// NewActorPropsHandler returns a handler whose calls go to one actor that the server spawns
// from props when it starts, as a child of its own supervisor, and stops when it closes. The
// server supervises it: a panic on a call fails that call ([*ActorPanicError]) and restarts the
// actor, with the calls queued behind it kept. The actor handles one message at a time; to run
// calls concurrently, it hands them to workers of its own. Props that carry a guardian
// strategy (actor.WithGuardian) cannot be spawned as a child; NewServer reports them. A nil
// props is reported by [Compile].
func NewActorPropsHandler(props *actor.Props) *ActorHandler {
	return &ActorHandler{props: props}
}

// NewActorPickHandler returns a handler whose calls each go to the actor pick returns for it,
// on the actor system system: for a tool whose actors are several, for example workers on some
// members of a cluster, one chosen per call. pick must be safe for concurrent use and must not
// block; a nil PID means no actor can take the call, which then fails unexpectedly with
// [ErrNoActor]. The contract and its outcomes are those of [ActorHandler] with the chosen actor.
func NewActorPickHandler(system *actor.ActorSystem, pick func() *actor.PID) *ActorHandler {
	return &ActorHandler{system: system, pick: pick}
}

// ErrNoActor is the failure of a call of a [NewActorPickHandler] tool for which the pick
// function named no actor.
var ErrNoActor = errors.New("tools: no actor to take the call")

// Target returns the actor for the next call: the PID given to [NewActorHandler], the choice of
// the function given to [NewActorPickHandler] (which may be nil), or nil for Props.
func (h *ActorHandler) Target() *actor.PID {
	if h.pick != nil {
		return h.pick()
	}
	return h.pid
}

// System returns the actor system given to [NewActorHandler] or [NewActorPickHandler], or nil.
func (h *ActorHandler) System() *actor.ActorSystem { return h.system }

// PID returns the actor given to [NewActorHandler], or nil.
func (h *ActorHandler) PID() *actor.PID { return h.pid }

// Props returns the props given to [NewActorPropsHandler], or nil.
func (h *ActorHandler) Props() *actor.Props { return h.props }

// errPropsOutsideServer is what Handle returns for a handler made by NewActorPropsHandler.
var errPropsOutsideServer = errors.New("tools: an actor-backed tool defined by Props has an actor only inside a server")

// Handle calls the actor directly, outside any server, and returns its raw outcome (inside a
// server, the engine sends the calls itself, and a middleware's next reaches the actor through
// the engine too): the
// Result of an [*ActorResult] as it is (no output checks), the error of an [*ActorError] or an
// error reply as it is, an [*ActorStoppedError] for a dead actor, and an error for a reply of
// another type or no reply before ctx's deadline ([DefaultActorTimeout] when ctx has none).
// When ctx ends first, or no reply came in time, the actor gets an [*ActorCancel]; for ctx,
// Handle returns ctx.Err(). The call's Progress is false.
//
// Handle blocks until then. It works only for a handler made by [NewActorHandler] or
// [NewActorPickHandler] (then it fails with [ErrNoActor] when no actor is picked); a server
// does not use it.
func (h *ActorHandler) Handle(ctx context.Context, req *Request) (*Result, error) {
	if dispatch, ok := ctx.Value(toolctx.ActorDispatch{}).(func(context.Context, *Request) (*Result, error)); ok {
		// Inside a server, under middleware: the request actor sends the call and waits for
		// the reply, as it does without middleware.
		return dispatch(ctx, req)
	}
	if h.props != nil || h.system == nil {
		return nil, errPropsOutsideServer
	}
	pid := h.Target()
	if pid == nil {
		return nil, ErrNoActor
	}
	timeout := DefaultActorTimeout
	var deadline time.Time
	if dl, ok := ctx.Deadline(); ok {
		timeout, deadline = time.Until(dl), dl
		if timeout <= 0 {
			return nil, ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// With a deadline, ctx ends the call, not the future's own timer, which only backs it up a
	// second later: protoactor's future stores a message that reaches it without its lock, so the
	// ActorCancel that completes it (below) must not race the timer's completion and the read of
	// the result.
	futureTimeout := timeout
	if !deadline.IsZero() {
		futureTimeout += futureGrace
	}
	f := actor.NewFuture(h.system, futureTimeout)
	call := &ActorCall{ID: f.PID().Id, Identity: IdentityFromContext(ctx), Deadline: deadline, ReplyTo: f.PID()}
	if req != nil {
		call.Tool, call.Arguments, call.Meta = req.Tool, req.Arguments, req.Meta
		if req.Identity != nil {
			call.Identity = req.Identity
		}
	}
	h.system.Root.RequestWithCustomSender(pid, call, f.PID())

	type outcome struct {
		msg any
		err error
	}
	done := make(chan outcome, 1)
	// Owned by Handle. It ends when the future completes: on the reply, on the future's own
	// timeout, or when Handle completes it after ctx ended (below).
	go func() {
		msg, err := f.Result()
		done <- outcome{msg, err}
	}()
	select {
	case o := <-done:
		switch {
		case errors.Is(o.err, actor.ErrDeadLetter):
			return nil, &ActorStoppedError{Tool: call.Tool, PID: pid, Reason: "dead letter"}
		case errors.Is(o.err, actor.ErrTimeout):
			err := fmt.Errorf("tool %q: actor %s: no reply within %s", call.Tool, pidString(pid), timeout)
			h.system.Root.Send(pid, &ActorCancel{ID: call.ID, Cause: err})
			return nil, err
		case o.err != nil:
			return nil, o.err
		}
		return ReadActorReply(call.Tool, o.msg)
	case <-ctx.Done():
		h.system.Root.Send(pid, &ActorCancel{ID: call.ID, Cause: context.Cause(ctx)})
		h.system.Root.Send(f.PID(), &ActorCancel{ID: call.ID}) // completes the future
		<-done
		return nil, ctx.Err()
	}
}

// check reports a handler that cannot work, for [Compile].
func (h *ActorHandler) check() error {
	switch {
	case h.props == nil && h.pid == nil && h.pick == nil:
		return errors.New("actor handler: no PID and no Props")
	case h.props == nil && h.system == nil:
		return errors.New("actor handler: nil actor system")
	}
	return nil
}

// ActorCall is one call of an actor-backed tool: engine → tool actor, sent with Request. Reply
// with exactly one [*ActorResult] or [*ActorError] (or an error value), to the Sender or to
// ReplyTo. Nothing in it may be mutated; the actor may keep it after replying.
type ActorCall struct {
	// ID identifies the call; the [*ActorCancel] for it carries the same ID. It is unique in
	// the actor system while the call runs (it is the id of the server's request actor); on a
	// cluster member it is prefixed with the member's address, unique in the cluster.
	ID string
	// Tool is the name of the tool being called.
	Tool string
	// Arguments are the call's arguments, already validated against the tool's input schema;
	// "{}" when the client sent none.
	Arguments json.RawMessage
	// Meta is the client-supplied params._meta, or nil. It is not verified: never trust it for
	// authorisation.
	Meta json.RawMessage
	// Identity is the caller as the server's token verifier authenticated it (HTTP with auth),
	// or nil. Use it, not Meta, for authorisation; like everything here it must not be
	// modified.
	Identity *Identity
	// Deadline is when the call times out; zero when it has no deadline.
	Deadline time.Time
	// Progress says the client asked for progress notifications: the actor may send
	// [*ActorProgress] messages to ReplyTo before its reply. When false, send none.
	Progress bool
	// ReplyTo is where replies go; the same PID as the message's Sender. Use it to reply from
	// outside the actor's Receive (another actor, a goroutine) with a Send.
	ReplyTo *actor.PID
}

// ActorResult is a successful reply to an [*ActorCall]: tool actor → engine. Result is what a
// Go handler would return: a public error result ([ErrorResult]) reaches the client unchanged.
// A nil Result is an unexpected failure.
type ActorResult struct {
	// Result is the call's result, as a Go handler would return it.
	Result *Result
}

// ActorError is a failure reply to an [*ActorCall]: tool actor → engine. It is an unexpected
// failure: the client sees only "Tool execution failed" and Err goes to the server's OnError,
// so Err may be as detailed as is useful. Replying with any error value does the same.
type ActorError struct {
	// Err is the failure, for the operator's eyes only.
	Err error
}

// Error returns the text of Err.
func (e *ActorError) Error() string {
	if e.Err == nil {
		return "actor error"
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *ActorError) Unwrap() error { return e.Err }

// ActorProgress reports progress on a call: tool actor → engine, sent to the call's ReplyTo,
// only when [ActorCall.Progress] is true and before the reply. The rules of [ReportProgress]
// apply: Progress must increase with each report, and reports after the call ended are
// dropped.
type ActorProgress struct {
	// Progress is the work done so far; it must increase with each report of a call.
	Progress float64
	// Total is the work to do, when known; nil otherwise.
	Total *float64
	// Message describes the progress for people; empty means none.
	Message string
}

// ActorCancel tells a tool actor that the engine no longer waits for a call: engine → tool
// actor, sent (no sender, no reply expected) when the call is cancelled by the client, its
// connection closes, the server shuts down or the call's timeout passes. The actor should stop
// the work of the call with this ID; a reply it still sends is dropped.
type ActorCancel struct {
	// ID is the [ActorCall.ID] of the call.
	ID string
	// Cause says why the call ended, for example that the client cancelled it or that it timed
	// out.
	Cause error
}

// IgnoreDeadLetterLogging marks the messages of the contract so that one reaching an actor that
// already stopped (a late reply, a cancellation for an actor that is gone) is dropped without
// a dead-letter log line.
func (*ActorResult) IgnoreDeadLetterLogging() {}

// IgnoreDeadLetterLogging marks ActorError; see [ActorResult.IgnoreDeadLetterLogging].
func (*ActorError) IgnoreDeadLetterLogging() {}

// IgnoreDeadLetterLogging marks ActorProgress; see [ActorResult.IgnoreDeadLetterLogging].
func (*ActorProgress) IgnoreDeadLetterLogging() {}

// IgnoreDeadLetterLogging marks ActorCancel; see [ActorResult.IgnoreDeadLetterLogging].
func (*ActorCancel) IgnoreDeadLetterLogging() {}

var (
	_ actor.IgnoreDeadLetterLogging = (*ActorResult)(nil)
	_ actor.IgnoreDeadLetterLogging = (*ActorError)(nil)
	_ actor.IgnoreDeadLetterLogging = (*ActorProgress)(nil)
	_ actor.IgnoreDeadLetterLogging = (*ActorCancel)(nil)
)

// ActorStoppedError reports that the actor of an actor-backed tool was not running: it stopped
// while a call waited for it, or its PID named no actor. An unexpected failure.
type ActorStoppedError struct {
	// Tool is the name of the tool.
	Tool string
	// PID is the actor.
	PID *actor.PID
	// Reason says how it was seen: "stopped", "not found" or "dead letter".
	Reason string
}

// Error returns `tool "<tool>": actor <id> is not running (<reason>)`, with the PID's id (and
// its address, for a remote actor).
func (e *ActorStoppedError) Error() string {
	return fmt.Sprintf("tool %q: actor %s is not running (%s)", e.Tool, pidString(e.PID), e.Reason)
}

// ActorPanicError reports that the actor of an actor-backed tool spawned by the server panicked
// while it handled the call. An unexpected failure.
type ActorPanicError struct {
	// Tool is the name of the tool.
	Tool string
	// PID is the actor.
	PID *actor.PID
	// Value is the value the actor panicked with.
	Value any
}

// Error returns `tool "<tool>": actor <id> panicked: <value>`, with the PID's id (and its
// address, for a remote actor).
func (e *ActorPanicError) Error() string {
	return fmt.Sprintf("tool %q: actor %s panicked: %v", e.Tool, pidString(e.PID), e.Value)
}

// Unwrap returns Value when it is an error.
func (e *ActorPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ReadActorReply interprets a tool actor's reply to a call of tool, following the contract of
// [ActorHandler]: the Result of an [*ActorResult] (a nil Result is an error), the Err of an
// [*ActorError] (a nil Err is an error), an error value as it is, and an error naming the
// type of any other message. The result is returned as the actor sent it, without output
// checks.
func ReadActorReply(tool string, msg any) (*Result, error) {
	switch m := msg.(type) {
	case *ActorResult:
		if m == nil || m.Result == nil {
			return nil, fmt.Errorf("tool %q: actor replied with an ActorResult without a Result", tool)
		}
		return m.Result, nil
	case *ActorError:
		if m == nil || m.Err == nil {
			return nil, fmt.Errorf("tool %q: actor replied with an ActorError without an Err", tool)
		}
		return nil, m.Err
	case error:
		return nil, m
	default:
		return nil, fmt.Errorf("tool %q: actor replied with %T, not *tools.ActorResult or *tools.ActorError", tool, msg)
	}
}

// checkActorHandler reports an actor-backed tool that cannot work, for [Compile].
func checkActorHandler(def *Tool) error {
	h, ok := def.Handler.(*ActorHandler)
	if !ok || h == nil {
		return nil
	}
	if err := h.check(); err != nil {
		return err
	}
	if len(def.Providers) > 0 {
		return errors.New("providers need a Go handler: an actor-backed tool cannot use them")
	}
	return nil
}

// pidString names a PID in error text: its id, prefixed with its address when it is remote.
func pidString(pid *actor.PID) string {
	switch {
	case pid == nil:
		return "<nil>"
	case pid.Address == "" || pid.Address == "nonhost":
		return pid.Id
	default:
		return pid.Address + "/" + pid.Id
	}
}
