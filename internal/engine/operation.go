package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// publicError is an error a handler outcome maps to on purpose (resource not found, a rejected
// prompt argument): its wire error reaches the client as it is. Every other error of an
// operation is an unexpected failure.
type publicError struct{ we *protocol.WireError }

func (e *publicError) Error() string { return e.we.Error() }

// opSpec is everything an operation actor needs; built by the connection actor, never mutated.
type opSpec struct {
	eng    *Engine
	id     protocol.ID
	method string
	name   string // the prompt, resource URI or reference, for logs
	meta   json.RawMessage
	call   *cancel.Call
	stream Stream
	peer   *callPeer
	// identity is the authenticated caller, nil when the transport has none; it only goes
	// into the handler's context.
	identity *tools.Identity
	// run computes the result on the handler goroutine. A *publicError is answered as its
	// wire error; any other error as -32603 and reported.
	run func(ctx context.Context) (any, error)
	// ann is what the request's revision makes of the result (see connectionActor.annotation).
	ann *protocol.Annotation
	// slot is the request's place under the limits on calls in flight (a custom method's);
	// nil for the operations that take none.
	slot *callSlot
}

// operationActor owns one resources/read, prompts/get, completion/complete or custom method
// whose handler is user code: it runs the handler on a goroutine it owns, answers once, and stays silent after a
// cancellation, like the request actor of a tools/call. It stops once it has answered (or been
// silenced) and the goroutine has returned.
type operationActor struct {
	*opSpec
	stop context.CancelFunc
}

func newOperationActor(spec *opSpec) *operationActor { return &operationActor{opSpec: spec} }

func (o *operationActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		o.start(ctx)
	case *operationDone:
		recordOf(o.stream).endHandler(msg.err)
		o.answer(msg)
		o.stream.Close()
		ctx.Stop(ctx.Self())
	case *inputRequired:
		// The answer cancels the handler's context; its operationDone ends the actor.
		o.respond(msg.frame)
	case *cancelCall:
		// The call is silenced and its context cancelled; the goroutine's operationDone ends
		// the actor.
	case *actor.Stopped:
		recordOf(o.stream).endHandler(nil)
		if o.stop != nil {
			o.stop()
		}
		o.call.Release()
	}
}

func (o *operationActor) start(ctx actor.Context) {
	o.peer.owner = ctx.Self()
	hctx, stop := context.WithCancel(o.call.Context())
	o.stop = stop
	hctx = o.eng.handlerContext(hctx, o.peer, o.meta)
	hctx = tools.WithIdentity(hctx, o.identity)
	if span := recordOf(o.stream).startHandler(); span != nil {
		hctx = trace.ContextWithSpan(hctx, span)
	}
	self, root, run := ctx.Self(), ctx.ActorSystem().Root, o.run
	o.eng.handlers.Add(1)
	// The handler runs on a pool worker but belongs to this operation actor, which waits for
	// its operationDone before stopping. It ends when the handler returns; the handler's context
	// is cancelled on client cancellation, connection close and shutdown.
	o.eng.pool.Go(func() {
		defer o.eng.handlers.Done()
		res, err := runRecovered(hctx, o.method, run)
		root.Send(self, &operationDone{result: res, err: err})
	})
}

func runRecovered(ctx context.Context, method string, run func(context.Context) (any, error)) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, fmt.Errorf("%s: handler panicked: %v\n%s", method, v, debug.Stack())
		}
	}()
	return run(ctx)
}

func (o *operationActor) answer(d *operationDone) {
	var pub *publicError
	var capErr *client.CapabilityError
	switch {
	case d.err == nil:
		frame, err := protocol.EncodeResultWith(o.id, d.result, o.ann)
		if err != nil {
			o.fail(fmt.Errorf("%s: encode result: %w", o.method, err))
			return
		}
		o.respond(frame)
	case errors.As(d.err, &pub):
		o.respond(protocol.EncodeError(o.id, pub.we))
	case o.ann.Modern() && errors.As(d.err, &capErr):
		o.respond(capabilityError(o.id, capErr.Required()))
	default:
		o.fail(d.err)
	}
}

// respond sends frame unless the request was silenced, giving its place under the limits back
// first (see callSlot), and reports whether it did.
func (o *operationActor) respond(frame []byte) bool {
	return o.call.Respond(func() {
		o.slot.release()
		o.stream.Send(frame)
	})
}

// fail answers -32603 and, only if that answer was sent, reports the original error.
func (o *operationActor) fail(err error) {
	frame := protocol.EncodeError(o.id, protocol.ErrInternal())
	recordOf(o.stream).failed(err)
	if !o.respond(frame) {
		return
	}
	req := diagnostics.NewToolRequest(o.id, o.method, "", o.meta)
	o.eng.report(err, diagnostics.NewToolErrorDetails("", req))
}

// spawnOperation starts an operation actor for m and registers it as in flight, so that
// notifications/cancelled and the connection's close reach it.
//
// input is the multi-round-trip state of a modern prompts/get or resources/read (nil
// otherwise); cacheable says whether a modern result carries cache hints.
func (c *connectionActor) spawnOperation(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity, name string, meta json.RawMessage,
	input *callInput, cacheable bool, run func(context.Context) (any, error)) {
	if c.idBusy(m, s) {
		return
	}
	c.spawnOperationIn(ctx, m, s, caller, name, meta, input, cacheable, nil, run)
}

// spawnOperationIn is spawnOperation, once the id was found free, for a request that holds the
// place slot under the limits on calls in flight (nil for none).
func (c *connectionActor) spawnOperationIn(ctx actor.Context, m *protocol.Message, s Stream, caller *tools.Identity, name string, meta json.RawMessage,
	input *callInput, cacheable bool, slot *callSlot, run func(context.Context) (any, error)) {
	f := &flight{call: cancel.New(c.rec.context()), slot: slot}
	c.track(m, s, f)
	spec := &opSpec{
		eng: c.eng, id: m.ID, method: m.Method, name: name, meta: meta,
		call: f.call, stream: s, peer: c.newPeer(f.call, s, input), identity: caller, run: run,
		ann: c.annotation(cacheable), slot: slot,
	}
	f.pid = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return newOperationActor(spec) }, actor.WithDispatcher(c.eng.dispatcher)))
	c.addChild(f)
}
