package engine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// flight is one request in progress on a connection: a tools/call, an operation, or a listen
// stream (which has no actor: its listener is the whole of it).
type flight struct {
	pid      *actor.PID
	call     *cancel.Call
	id       protocol.ID
	key      string // its key in inflight: its id's, or its stream's on a stateless connection
	stream   Stream
	slot     *callSlot
	listener *listener
}

// connectionActor owns one connection (a stdio stream, an in-memory client or a legacy HTTP
// session, or the HTTP transport's stateless connection): the negotiated protocol version and
// the table of requests in flight (JSON-RPC id → request actor). Its messages are served in
// dispatch.go: it answers initialize, ping, the lists and protocol errors itself, spawns a
// request actor per tools/call (request.go), and routes notifications/cancelled to the call's
// cancellation state.
type connectionActor struct {
	eng  *Engine
	conn *Connection
	log  *zap.Logger

	initialized bool
	version     string

	inflight map[string]*flight // by id key; only calls not yet cancelled
	children map[string]*flight // by request actor PID id; every request actor alive
	// reqProps spawns the connection's request actors, each from nextSpec, which the connection
	// sets just before the spawn (see spawnRequest).
	reqProps  *actor.Props
	nextSpec  *callSpec
	nextActor *requestActor // the request actor Spawn just made, whose mailbox it makes next
	closing   bool
	finishing bool        // the input ended cleanly: stop once nothing is in flight
	finishBy  *time.Timer // sends finishExpired when the grace of finishing is over

	surface              // resources, prompts, logging, requests to the client
	calls   atomic.Int64 // calls holding a slot under MaxCallsPerConnection
	decoded *callParams  // the params of the message being handled, if the transport decoded them
	modern  *modernReq   // the era of the request being handled: nil for legacy (modern.go)
	rec     *served      // the telemetry of the message being handled; nil when there is none
	opened  time.Time    // when the connection opened, for mcp.server.session.duration

	// toolsets are the toolsets the message being handled narrowed its view to; nil for none.
	toolsets []string

	// A stateless connection serves the modern HTTP requests of every client: ids may repeat
	// across clients, so its flights are keyed by their stream, and a stream whose client went
	// away (streamGone) cancels its flight.
	stateless bool
	byStream  map[Stream]string
	nextKey   uint64

	// childPeak is the most request actors alive at once since the tables were last renewed
	// (see shrinkAfterBurst).
	childPeak int
	// passivated: the actor stopped to passivate (passivate.go); the connection goes on.
	passivated bool
	// sharedCaps is the interned copy of what the client declared that the actor was brought
	// back from (state.caps is the actor's own copy of it); held while the actor lives, it
	// stays interned, and the next passivation hands it back as it is. Nil until then.
	sharedCaps *protocol.ClientCapabilities
}

var _ actor.SupervisorStrategy = (*connectionActor)(nil)

func newConnectionActor(e *Engine, c *Connection) *connectionActor {
	a := &connectionActor{
		eng:       e,
		conn:      c,
		log:       e.log.WithLazy(zap.String("conn", c.name)),
		inflight:  make(map[string]*flight),
		children:  make(map[string]*flight),
		surface:   newSurface(e),
		stateless: c.stateless,
		byStream:  make(map[Stream]string),
	}
	if e.tel != nil && !c.stateless {
		a.opened = time.Now()
	}
	return a
}

// cancelFlight silences the flight under key, if it is in flight: unknown, finished or
// uncancellable requests (initialize is never in flight) are ignored.
func (c *connectionActor) cancelFlight(ctx actor.Context, key string, cause cancel.Cause) {
	f, ok := c.inflight[key]
	if !ok {
		return
	}
	c.forgetFlight(f)
	rec := recordOf(f.stream)
	rec.silence(cause)
	if f.call.Cancel(cause) {
		rec.cancelled(cause)
		f.slot.release()
		switch {
		case f.listener != nil:
			c.eng.listeners.remove(f.listener)
		case f.slot != nil && f.slot.handlerRuns.Load():
			// The handler runs on the cancelled context: its return ends the request actor.
		case f.pid != nil:
			ctx.Send(f.pid, &cancelCall{})
		}
	}
}

// idBusy reports whether m's id is in use by a request still in flight, after answering m with
// -32600 if so. Ids are the client's on a stateless connection, whose many clients may reuse
// them: there, none is ever busy.
func (c *connectionActor) idBusy(m *protocol.Message, s Stream) bool {
	if c.stateless {
		return false
	}
	// A call that has answered is no longer in flight, even if its request actor has not yet
	// stopped (its Terminated removes the entry a moment later).
	if cur, busy := c.inflight[m.ID.Key()]; !busy || cur.call.State() != cancel.Running {
		return false
	}
	reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidRequest("id %s is already in use by a request in flight", m.ID)))
	return true
}

// track enters a new flight for m on stream s in the in-flight table, under its id's key (or,
// on a stateless connection, a key of its stream's). The caller has checked idBusy.
func (c *connectionActor) track(m *protocol.Message, s Stream, f *flight) {
	f.id, f.stream = m.ID, s
	if c.stateless {
		c.nextKey++
		f.key = strconv.FormatUint(c.nextKey, 10)
		c.byStream[transportStream(s)] = f.key
	} else {
		f.key = m.ID.Key()
	}
	c.inflight[f.key] = f
}

// forgetFlight removes f from the in-flight table, if it is still there.
func (c *connectionActor) forgetFlight(f *flight) {
	if cur, ok := c.inflight[f.key]; ok && cur == f {
		delete(c.inflight, f.key)
		if c.stateless {
			delete(c.byStream, transportStream(f.stream))
		}
	}
}

func (c *connectionActor) initialize(m *protocol.Message, s Stream) {
	if c.initialized {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidRequest("already initialized")))
		return
	}
	p, werr := c.eng.initializeParams(m)
	if werr != nil {
		reply(s, protocol.EncodeError(m.ID, werr))
		return
	}
	c.initialized = true
	c.version = protocol.NegotiateVersion(p.ProtocolVersion)
	if c.rec != nil {
		c.rec.version = c.version
	}
	c.conn.rev.Store(uint32(protocol.RevisionOf(c.version)))
	c.state.caps.Store(sessionCapabilities(c.version, p.Capabilities))
	c.sharedCaps = nil
	info := p.ClientInfo
	c.state.info.Store(&info)
	c.log.Debug("initialized", zap.String("protocol_version", c.version),
		zap.String("client", p.ClientInfo.Name), zap.String("client_version", p.ClientInfo.Version))
	c.result(s, m.ID, c.eng.initializeResult(c.version))
}

// setLevel answers logging/setLevel: the connection's log messages are filtered from then on.
func (c *connectionActor) setLevel(m *protocol.Message, s Stream) {
	var p protocol.SetLevelParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("logging/setLevel needs params with a string level")))
		return
	}
	sev, ok := protocol.LogSeverity(p.Level)
	if !ok {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("invalid log level %q", p.Level)))
		return
	}
	c.state.level.Store(int32(sev))
	c.result(s, m.ID, json.RawMessage(`{}`))
}

// Cursors are opaque to clients: base64url of "t" plus the offset of the next tool.
func encodeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("t" + strconv.Itoa(offset)))
}

func decodeCursor(cur string, n int) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil || len(b) < 2 || b[0] != 't' {
		return 0, false
	}
	off, err := strconv.Atoi(string(b[1:]))
	if err != nil || off <= 0 || off >= n {
		return 0, false
	}
	return off, true
}

func (c *connectionActor) listTools(m *protocol.Message, s Stream, caller *tools.Identity) {
	var p protocol.ListToolsParams
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, &p); err != nil {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("tools/list params must be an object with an optional string cursor")))
			return
		}
	}
	all := c.eng.visibleTools(c.viewer(caller))
	start := 0
	if p.Cursor != "" {
		off, ok := decodeCursor(p.Cursor, len(all))
		if !ok {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("invalid cursor")))
			return
		}
		start = off
	}
	end := min(start+c.eng.cfg.PageSize, len(all))
	res := protocol.ListToolsResult{Tools: make([]protocol.Tool, 0, end-start)}
	for _, t := range all[start:end] {
		res.Tools = append(res.Tools, t.Descriptor())
	}
	if end < len(all) {
		res.NextCursor = encodeCursor(end)
	}
	c.cacheableResult(s, m.ID, &res)
}

// viewer is the viewer of the message being handled, whose caller is caller.
func (c *connectionActor) viewer(caller *tools.Identity) *viewer {
	return &viewer{id: caller, toolsets: c.toolsets}
}

// addChild enters the flight f of a request actor just spawned in the table of children.
func (c *connectionActor) addChild(f *flight) {
	c.children[f.pid.Id] = f
	if n := len(c.children); n > c.childPeak {
		c.childPeak = n
	}
}

func (c *connectionActor) childEnded(ctx actor.Context, who *actor.PID) {
	f, ok := c.children[who.Id]
	if !ok {
		return
	}
	delete(c.children, who.Id)
	f.slot.release()
	c.forgetFlight(f)
	if len(c.children) == 0 {
		if c.closing || c.finishing {
			ctx.Stop(ctx.Self())
			return
		}
		c.shrinkAfterBurst(ctx)
	}
}

// burstChildren is the number of request actors alive at once past which the connection
// renews its tables once they are empty again.
const burstChildren = 1024

// shrinkAfterBurst lets the memory of a burst of calls go once the last of them has ended. A
// Go map keeps its grown table after its entries are deleted, so the in-flight tables are
// replaced once empty. protoactor's set of children removes a child by moving the last one into
// its slot and shortening the slice, leaving the vacated slots past its end pointing at the
// stopped children's PIDs, whose cached process keeps each stopped actor (its context,
// mailbox, request actor and call) reachable until the slot is reused; Children returns that
// slice, and the slots past its length belong to no one, so they are cleared.
func (c *connectionActor) shrinkAfterBurst(ctx actor.Context) {
	if c.childPeak < burstChildren {
		return
	}
	c.childPeak = 0
	c.children = make(map[string]*flight)
	if len(c.inflight) == 0 {
		c.inflight = make(map[string]*flight)
	}
	if len(c.byStream) == 0 {
		c.byStream = make(map[Stream]string)
	}
	clearVacatedChildren(ctx)
}

// clearVacatedChild clears the one slot past the end of ctx's set of children that the removal
// of a child leaves pointing at it (see shrinkAfterBurst): for an actor whose children come
// and go all its life (the supervisor's connection actors), each Terminated clears what its
// removal left, in O(1). Only the actor itself may call it, from its Receive.
func clearVacatedChild(ctx actor.Context) {
	if kids := ctx.Children(); cap(kids) > len(kids) {
		kids[:len(kids)+1][len(kids)] = nil
	}
}

// clearVacatedChildren clears the slots past the end of ctx's set of children (see
// shrinkAfterBurst). Only the actor itself may call it, from its Receive.
func clearVacatedChildren(ctx actor.Context) {
	if kids := ctx.Children(); cap(kids) > len(kids) {
		clear(kids[len(kids):cap(kids)])
	}
}

// beginFinish starts the end of a connection whose input ended cleanly: the requests in flight
// go on and answer, the listen streams end at once, requests to the client fail (no answer can
// come), and the actor stops once no request actor is left, or closes after the end-of-input
// grace.
func (c *connectionActor) beginFinish(ctx actor.Context) {
	if c.closing || c.finishing {
		return
	}
	c.finishing = true
	c.closeOutgoing()
	for _, f := range c.inflight {
		if f.listener != nil {
			c.forgetFlight(f)
			c.eng.endListener(f.listener)
		}
	}
	if len(c.children) == 0 {
		ctx.Stop(ctx.Self())
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	c.finishBy = time.AfterFunc(c.eng.cfg.EndOfInputGrace, func() { root.Send(self, &finishExpired{}) })
}

func (c *connectionActor) beginClose(ctx actor.Context) {
	if c.closing {
		return
	}
	c.closing = true
	c.closeOutgoing()
	for key := range c.inflight {
		c.cancelFlight(ctx, key, cancel.ErrConnectionClosed)
	}
	if len(c.children) == 0 {
		ctx.Stop(ctx.Self())
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(c.eng.cfg.HandlerGrace, func() { root.Send(self, &graceExpired{}) })
}

// HandleFailure implements [actor.SupervisorStrategy] for request actors. A panic there is a
// bug in the engine, not in a tool (tool panics are recovered on the handler goroutine): the
// call is answered with a JSON-RPC internal error unless it was cancelled, the failure goes to
// onError with no details, and the request actor is stopped.
func (c *connectionActor) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ interface{}) {
	c.log.Error("request actor panicked", zap.String("actor", child.Id), zap.Any("reason", reason))
	if f, ok := c.children[child.Id]; ok {
		if f.call.Respond(func() {
			f.slot.release()
			f.stream.Send(protocol.EncodeError(f.id, protocol.ErrInternal()))
		}) {
			c.eng.Report(fmt.Errorf("internal error: request actor panicked: %v", reason))
		}
		f.stream.Close()
	}
	sup.StopChildren(child)
}

func (c *connectionActor) result(s Stream, id protocol.ID, v any) {
	c.resultWith(s, id, v, c.annotation(false))
}

// resultWith answers with the result v as a makes it (see annotation).
func (c *connectionActor) resultWith(s Stream, id protocol.ID, v any, a *protocol.Annotation) {
	frame, err := protocol.EncodeResultWith(id, v, a)
	if err != nil {
		c.eng.Report(fmt.Errorf("encode %T: %w", v, err))
		frame = protocol.EncodeError(id, protocol.ErrInternal())
	}
	reply(s, frame)
}

// reply sends the one frame that answers a message, and ends the message's stream.
func reply(s Stream, frame []byte) {
	s.Send(frame)
	s.Close()
}
