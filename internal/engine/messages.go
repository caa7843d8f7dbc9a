package engine

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// Messages between the engine's actors. All are sent as pointers; none is ever mutated after it
// is sent. Each line says sender → receiver and whether a reply is expected.
type (
	// inbound: transport → connection. One decoded message, the stream its answers go to, and
	// the caller's identity when the transport authenticated it (nil otherwise).
	inbound struct {
		msg      *protocol.Message
		stream   Stream
		identity *tools.Identity
		toolsets []string   // the toolsets the request narrowed its view to; nil for none
		cost     int        // its weight in the connection's inbox
		call     callParams // tools/call params, decoded by the transport (inbound.go)
		// modern: a request of the modern era, whose envelope is env, or which is answered
		// with envErr (modern.go).
		modern bool
		env    *protocol.Envelope
		envErr *protocol.WireError
		// rec is its telemetry, started by the transport's goroutine; nil when there is none
		// (trace.go).
		rec *served
	}
	// inputEnded: transport → connection. The connection is closed (HTTP session deleted or
	// expired, shutdown, a signal, a broken stream, the grace after inputFinished run out):
	// cancel everything in flight, then stop once every request actor has ended.
	inputEnded struct{}
	// inputFinished: transport → connection. The input reached its end cleanly (EOF): no
	// message follows, but the client still reads. Let the requests in flight answer, end the
	// listen streams, then stop; inputEnded cuts it short.
	inputFinished struct{}
	// finishExpired: timer → connection. The grace given to the requests in flight at the end
	// of input (EndOfInputGrace) is over: close as inputEnded does.
	finishExpired struct{}
	// graceExpired: timer → connection. The grace given to cancelled handlers (HandlerGrace) is
	// over: stop now, even with request actors still waiting for handlers that ignore their
	// context.
	graceExpired struct{}
	// streamGone: transport → connection. The client of a stream went away (a modern HTTP
	// request's connection closed): cancel the call it carried, as notifications/cancelled
	// would.
	streamGone struct{ stream Stream }
	// inputRequired: handler goroutine → request or operation. The handler needs input the
	// client has not given: answer with frame, an input_required result, and end the run.
	inputRequired struct{ frame []byte }

	// cancelCall: connection → request. The call was silenced (its cancel.Call already says so);
	// stop waiting for a run slot.
	cancelCall struct{}
	// handlerDone: handler goroutine → request. The handler returned; exactly one of result and
	// err is set.
	handlerDone struct {
		result *protocol.CallToolResult
		err    error
	}
	// callTimedOut: timer → request. The tool's timeout passed before the handler returned.
	callTimedOut struct{}

	// acquireSlot: request → tool. Ask for a run slot; the tool actor answers slotGranted when
	// one is free.
	acquireSlot struct{ who *actor.PID }
	// releaseSlot: request → tool. The run is over (or was never started): free or withdraw the
	// slot. No reply.
	releaseSlot struct{ who *actor.PID }
	// slotGranted: tool → request. The requester may run the handler now.
	slotGranted struct{}

	// report: anyone → diagnostics. One unexpected failure for onError. No reply.
	report struct {
		err     error
		details *diagnostics.ToolErrorDetails
	}
	// callbackDone: callback goroutine → diagnostics. The callback of report seq returned (or
	// panicked).
	callbackDone struct{ seq uint64 }
	// callbackTimedOut: timer → diagnostics. The callback of report seq ran past its timeout.
	callbackTimedOut struct{ seq uint64 }
	// flush: engine → diagnostics (RequestFuture). Replied to with flushed once every queued
	// report has been handed to onError and no callback is running, abandoned ones aside.
	flush struct{}
	// flushed: diagnostics → flush requester.
	flushed struct{}

	// spawnConnection: engine → supervisor (RequestFuture). Spawn a connection actor; the reply
	// is its *actor.PID.
	spawnConnection struct{ props *actor.Props }
)

// Messages of resources, prompts, logging and requests to the client.
type (
	// sendRequest: handler goroutine → connection. Give o an id and send it to the client; the
	// answer goes into o.reply.
	sendRequest struct{ o *outgoing }
	// requestAbandoned: handler goroutine → connection. The handler stopped waiting for o: forget
	// it and tell the client with notifications/cancelled.
	requestAbandoned struct {
		o      *outgoing
		reason string
	}
	// listChanged: engine → connection. A list changed; send the notification method.
	listChanged struct {
		method string
		frame  []byte // the notification, encoded once for every connection
	}
	// elicitationCompleted: engine → connection. A URL-mode elicitation finished; notify the
	// client if this connection sent it.
	elicitationCompleted struct{ id string }
	// resourceUpdated: engine → connection. A resource changed; notify the client if it
	// subscribed to uri. frame is the notification, encoded once for every connection.
	resourceUpdated struct {
		uri   string
		frame []byte
	}
	// operationDone: handler goroutine → operation. The handler returned; result or err is set.
	operationDone struct {
		result any
		err    error
	}
	// spawnTool: engine → supervisor (RequestFuture). Spawn an admission actor for a tool added
	// at run time; the reply is its *actor.PID.
	spawnTool struct{ limit int }
)
