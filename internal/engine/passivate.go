package engine

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/protocol"
)

// Passivation. A connection that has nothing in progress (no call, operation or request to the
// client in flight, no message waiting) needs no actor: [Connection.Passivate] stops the actor
// and keeps what outlives a request in a compact record (a snapshot: the negotiated version,
// what the client declared, its log level, its resource subscriptions, the URL-mode
// elicitations it awaits, when it opened). The next message delivered brings an actor back
// from that record before it is handled, so that the client sees the same connection:
// messages keep their order, and nothing is lost or answered twice. While the connection is
// passive, the messages unrelated to any request (list changes, resource updates, the end of
// a URL-mode elicitation) are sent on its notification path from the record, as the actor
// would send them.
//
// Every message to the connection's actor goes through its phase under Connection.pmu:
//
//	live         the actor runs: messages are sent to it
//	passivating  the actor was asked to passivate: deliveries wait, broadcasts are kept
//	passive      no actor: a delivery spawns one first; broadcasts are handled from the record
//	activating   an actor is being spawned: deliveries wait, broadcasts are kept
//	ended        the connection is over: messages are dropped
//
// The broadcasts kept while the phase settles are then handled as the settled phase says.

type phase uint8

const (
	phaseLive phase = iota
	phasePassivating
	phasePassive
	phaseActivating
	phaseEnded
)

// snapshot is what a passive connection keeps of its actor's state.
type snapshot struct {
	initialized     bool
	version         string
	caps            *protocol.ClientCapabilities
	info            *protocol.Implementation
	level           int32
	subs            map[string]struct{} // nil when empty
	urlElicitations []string
	nextOut         int64
	opened          time.Time
}

// ConnectIdle is [Engine.ConnectNotify] for a connection that starts passive: it has no actor
// until a message needs one, and answers its initialize from its record, so that a client that
// initializes and then waits (a legacy HTTP session) never costs an actor. The connection
// should be passivated again when idle ([Connection.Passivate]), under the same conditions.
func (e *Engine) ConnectIdle(name string, notify Stream) (*Connection, error) {
	c := new(Connection)
	if err := e.OpenIdle(c, name, notify); err != nil {
		return nil, err
	}
	return c, nil
}

// OpenIdle is [Engine.ConnectIdle] for a Connection the caller allocated, zero, within a record
// of its own (a transport's session), so that a waiting connection costs one allocation with
// its owner's. c must not be used before, nor copied after.
func (e *Engine) OpenIdle(c *Connection, name string, notify Stream) error {
	c.eng, c.notify, c.name, c.phase = e, notify, name, phasePassive
	c.snap = snapshot{caps: e.noCaps, info: e.noInfo, level: int32(e.logLevel)}
	if e.tel != nil {
		c.snap.opened = time.Now()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	e.conns[c] = struct{}{}
	return nil
}

// initializeParams reads the params of initialize, or returns the error that answers it: what
// the client declares, which its connection keeps for its life, is bounded by
// Config.MaxClientDeclaration.
func (e *Engine) initializeParams(m *protocol.Message) (*protocol.InitializeParams, *protocol.WireError) {
	var p protocol.InitializeParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.ProtocolVersion == "" {
		return nil, protocol.ErrInvalidParams("initialize needs protocolVersion, capabilities and clientInfo")
	}
	size := len(p.Capabilities) + declaredSize(&p.ClientInfo)
	if limit := e.cfg.MaxClientDeclaration; limit > 0 && size > limit {
		werr := protocol.ErrInvalidParams("capabilities and clientInfo take %d bytes, more than the limit of %d", size, limit)
		werr.Data = json.RawMessage(`{"limit":` + strconv.Itoa(limit) + `}`)
		return nil, werr
	}
	return &p, nil
}

// declaredSize is the size of what a clientInfo holds: its strings, its icons' included.
func declaredSize(i *protocol.Implementation) int {
	n := len(i.Name) + len(i.Title) + len(i.Version)
	for _, ic := range i.Icons {
		n += len(ic.Src) + len(ic.MimeType) + len(ic.Theme)
		for _, sz := range ic.Sizes {
			n += len(sz)
		}
	}
	return n
}

// initializeResult is what answers initialize in version, in the shape of its revision.
func (e *Engine) initializeResult(version string) any {
	return protocol.RevisionOf(version).Shape(&protocol.InitializeResult{
		ProtocolVersion: version,
		Capabilities:    e.legacyCapabilities(),
		ServerInfo:      e.cfg.ServerInfo,
		Instructions:    e.cfg.Instructions,
	})
}

// initializePassive answers the first initialize of a passive connection from its record.
// c.pmu is held.
func (c *Connection) initializePassive(in *inbound) {
	m := in.msg
	p, werr := c.eng.initializeParams(m)
	if werr != nil {
		reply(in.stream, protocol.EncodeError(m.ID, werr))
		return
	}
	snap := &c.snap
	snap.initialized = true
	snap.version = protocol.NegotiateVersion(p.ProtocolVersion)
	c.rev.Store(uint32(protocol.RevisionOf(snap.version)))
	snap.caps = c.eng.interned.caps(sessionCapabilities(snap.version, p.Capabilities))
	info := p.ClientInfo
	snap.info = c.eng.interned.info(&info)
	c.eng.log.Debug("initialized", zap.String("conn", c.name), zap.String("protocol_version", snap.version),
		zap.String("client", info.Name), zap.String("client_version", info.Version))
	frame, err := protocol.EncodeResultWith(m.ID, c.eng.initializeResult(snap.version), nil)
	if err != nil {
		c.eng.Report(fmt.Errorf("encode initialize result: %w", err))
		frame = protocol.EncodeError(m.ID, protocol.ErrInternal())
	}
	reply(in.stream, frame)
}

// passivate: connection → its actor. Stop, keeping the state in a snapshot, if nothing is in
// progress.
type passivate struct{}

// Passivate asks the connection to let its actor go until the next message, if nothing is in
// progress on it (see the package's passivation notes in passivate.go); a connection with work
// in flight, or messages waiting, stays as it is. It does not wait. Only a connection whose
// messages unrelated to any request may go out on its notification path at any time (a legacy
// HTTP session, an in-memory client) should be passivated; the stateless connection of modern
// requests never is. It is safe for concurrent use.
func (c *Connection) Passivate() {
	if c.stateless {
		return
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.phase != phaseLive {
		return
	}
	c.phase = phasePassivating
	c.eng.system.Root.Send(c.pid, &passivate{})
}

// Ended reports whether the connection has ended, as [Connection.Done] being closed says,
// without making the channel.
func (c *Connection) Ended() bool {
	if c.stateless {
		select {
		case <-c.done:
			return true
		default:
			return false
		}
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.phase == phaseEnded
}

// Passive reports whether the connection has no actor now.
func (c *Connection) Passive() bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.phase == phasePassive
}

// send sends msg to the connection's actor, bringing one back first if the connection is
// passive, waiting while its phase settles; a message to a connection that ended is dropped.
// Messages sent by one goroutine arrive in order.
func (c *Connection) send(msg any) {
	if c.stateless {
		c.eng.system.Root.Send(c.pid, msg)
		return
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.waitSettled()
	if in, ok := msg.(*inbound); ok && c.phase == phasePassive && in.rec == nil {
		switch {
		case !in.msg.IsRequest():
			// Nothing is in flight on a passive connection: a notification (initialized, a
			// cancellation) or a response to a request of the server's finds nothing to act
			// on, as the actor would, and needs no actor brought back.
			c.inbox.done(in.cost)
			in.stream.Close()
			return
		case in.msg.Method == protocol.MethodInitialize && !in.modern && !c.snap.initialized:
			// The first initialize of a connection that started passive ([Engine.ConnectIdle])
			// is answered from the record, as the actor would answer it.
			c.initializePassive(in)
			c.inbox.done(in.cost)
			return
		}
	}
	if pid := c.livePID(); pid != nil {
		c.eng.system.Root.Send(pid, msg)
	}
}

// livePID returns the PID of the connection's running actor, after waiting out a passivation
// or an activation in progress and activating a passive connection; nil once the connection
// ended. c.pmu is held (and released while waiting).
func (c *Connection) livePID() *actor.PID {
	for {
		switch c.phase {
		case phaseLive:
			return c.pid
		case phaseEnded:
			return nil
		case phasePassive:
			c.activate()
		default:
			c.waitSettled()
		}
	}
}

// waitSettled waits while a passivation or an activation is in progress. c.pmu is held, and
// released while waiting.
func (c *Connection) waitSettled() {
	for c.phase == phasePassivating || c.phase == phaseActivating {
		if c.settled == nil {
			c.settled = make(chan struct{})
		}
		ch := c.settled
		c.pmu.Unlock()
		<-ch
		c.pmu.Lock()
	}
}

// activate spawns an actor for a passive connection from its snapshot. The spawn runs without
// c.pmu (it asks the supervisor and waits for its answer); the phase says activating meanwhile.
// When the engine is closed, or the spawn fails, the connection ends. c.pmu is held.
func (c *Connection) activate() {
	snap := c.snap
	c.phase = phaseActivating
	c.pmu.Unlock()
	pid, err := c.eng.spawnConnection(c, &snap)
	c.pmu.Lock()
	c.snap = snapshot{}
	if err != nil {
		c.eng.log.Debug("passive connection could not be brought back", zap.Error(err))
		c.settle(phaseEnded)
		c.pmu.Unlock()
		c.ended(&snap)
		c.pmu.Lock()
		return
	}
	c.pid = pid
	c.settle(phaseLive)
}

// settle ends a passivation or an activation in phase p: waiters go on, and the broadcasts
// kept meanwhile are handled. c.pmu is held.
func (c *Connection) settle(p phase) {
	c.phase = p
	if kept := c.kept; kept != nil {
		c.kept = nil
		for _, msg := range *kept {
			c.broadcastLocked(msg)
		}
	}
	if c.settled != nil {
		close(c.settled)
		c.settled = nil
	}
}

// broadcast hands the connection an engine-wide message (a list change, a resource update,
// the end of a URL-mode elicitation) without blocking.
func (c *Connection) broadcast(msg any) {
	if c.stateless {
		return // it has no notification path
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.broadcastLocked(msg)
}

func (c *Connection) broadcastLocked(msg any) {
	switch c.phase {
	case phaseLive:
		c.eng.system.Root.Send(c.pid, msg)
	case phasePassivating, phaseActivating:
		if c.kept == nil {
			c.kept = new([]any)
		}
		*c.kept = append(*c.kept, msg)
	case phasePassive:
		c.notifyPassive(msg)
	}
}

// notifyPassive sends what the actor would send for msg on the notification path, from the
// snapshot. c.pmu is held.
func (c *Connection) notifyPassive(msg any) {
	snap := &c.snap
	if c.notify == nil || !snap.initialized {
		return
	}
	switch m := msg.(type) {
	case *listChanged:
		if frame := m.encoded(); frame != nil {
			c.notify.Send(frame)
		}
	case *resourceUpdated:
		if _, ok := snap.subs[m.uri]; ok && c.eng.visIndex().updateVisible(m.uri, c.connViewer()) {
			if frame := m.encoded(); frame != nil {
				c.notify.Send(frame)
			}
		}
	case *elicitationCompleted:
		if i := slices.Index(snap.urlElicitations, m.id); i >= 0 {
			snap.urlElicitations = slices.Delete(snap.urlElicitations, i, i+1)
			if frame := elicitationCompleteFrame(m.id); frame != nil {
				c.notify.Send(frame)
			}
		}
	}
}

// closePassive ends a connection that is passive, or settling, for [Connection.Close] and
// [Connection.Finish]: it reports false when the connection is live, for the caller to tell
// its actor. c.pmu is held.
func (c *Connection) closePassive() bool {
	c.waitSettled()
	switch c.phase {
	case phaseEnded:
		return true
	case phasePassive:
		snap := c.snap
		c.snap = snapshot{}
		c.settle(phaseEnded)
		c.pmu.Unlock()
		c.ended(&snap)
		c.pmu.Lock()
		return true
	}
	return false
}

// ended finishes a connection whose actor is gone for good: the engine forgets it, telemetry
// records the session's end (from snap when it was passive), and Done closes.
func (c *Connection) ended(snap *snapshot) {
	if snap != nil {
		c.eng.tel.sessionEnded(snap.opened, snap.version, c.transport())
	}
	c.eng.forget(c)
	c.closeDone()
}

// actorStopped is called by the connection actor when it stops for good (not to passivate).
// The PID goes: it caches the stopped actor's process, which would keep the actor, and what the
// client declared, reachable for as long as anything holds the connection (a transport's
// session waiting in its timers).
func (c *Connection) actorStopped() {
	c.pmu.Lock()
	c.pid = nil
	c.settle(phaseEnded)
	c.pmu.Unlock()
}

// snapshotIfIdle returns the actor's state as a snapshot when nothing is in progress on the
// connection (no request actor, nothing in flight, no request to the client awaiting its answer,
// no message delivered and not yet handled), or nil.
func (c *connectionActor) snapshotIfIdle() *snapshot {
	if len(c.children) > 0 || len(c.inflight) > 0 || len(c.out) > 0 || c.closing || c.finishing ||
		c.conn.inbox.messages.Load() > 0 {
		return nil
	}
	caps := c.sharedCaps
	if caps == nil {
		caps = c.eng.interned.caps(c.state.caps.Load())
	}
	s := &snapshot{
		initialized:     c.initialized,
		version:         c.version,
		caps:            caps,
		info:            c.eng.interned.info(c.state.info.Load()),
		level:           c.state.level.Load(),
		urlElicitations: slices.Clip(c.urlElicitations),
		nextOut:         c.nextOut,
		opened:          c.opened,
	}
	if len(c.subs) > 0 {
		s.subs = c.subs
	}
	return s
}

// restore gives a new actor the state of the snapshot it is brought back from.
func (c *connectionActor) restore(s *snapshot) {
	c.initialized, c.version = s.initialized, s.version
	caps := *s.caps // the snapshot's may be shared with other passive connections
	c.state.caps.Store(&caps)
	c.sharedCaps = s.caps
	c.state.info.Store(s.info)
	c.state.level.Store(s.level)
	if s.subs != nil {
		c.subs = s.subs
	}
	c.urlElicitations, c.nextOut, c.opened = s.urlElicitations, s.nextOut, s.opened
}

// passivate handles the connection's request to passivate: with nothing in progress the actor
// hands its state to the connection and stops; otherwise it stays, and the connection is live
// again.
func (c *connectionActor) passivate(ctx actor.Context) {
	snap := c.snapshotIfIdle()
	c.conn.pmu.Lock()
	if c.conn.phase != phasePassivating {
		c.conn.pmu.Unlock()
		return
	}
	if snap == nil {
		c.conn.settle(phaseLive)
		c.conn.pmu.Unlock()
		return
	}
	c.conn.snap = *snap
	c.passivated = true
	// A PID caches its process: kept, it would keep the stopped actor reachable.
	c.conn.pid = nil
	c.conn.settle(phasePassive)
	c.conn.pmu.Unlock()
	ctx.Stop(ctx.Self())
}

// spawnConnection spawns the actor of c, from snap when it is brought back from passivation
// (nil for a new connection). It fails once the engine is closed.
func (e *Engine) spawnConnection(c *Connection, snap *snapshot) (*actor.PID, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	props := actor.PropsFromProducer(func() actor.Actor {
		a := newConnectionActor(e, c)
		if snap != nil {
			a.restore(snap)
		}
		return a
	}, actor.WithDispatcher(poolDispatcher{pool: e.pool, throughput: connectionThroughput}))
	res, err := e.system.Root.RequestFuture(e.supervisor, &spawnConnection{props: props}, defaultActorReplyTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("actors: spawn connection: %w", err)
	}
	return res.(*actor.PID), nil
}

// Interning. Most clients of a server declare the same capabilities and client info, so that
// thousands of passive sessions can share one copy of each: the engine's intern tables map a
// value to the one copy passive connections hold. A table holds its copies weakly (a
// weak.Pointer, and a cleanup that removes the entry once the copy is collected), so that a
// value goes once the last session that declared it has ended; it holds at most maxInterned of
// them, and none larger than maxInternedSize (a large declaration stays the session's own, and
// goes with it). Values are never modified once interned.

// maxInterned bounds the distinct values an engine's intern table holds of each kind.
const maxInterned = 1024

// maxInternedSize bounds, in bytes, a value an intern table takes: real clients declare far less.
const maxInternedSize = 4 << 10

// interned is an engine's intern tables: client capabilities and client info.
type interned struct {
	capsT internTable[string, protocol.ClientCapabilities]
	infoT internTable[infoKey, protocol.Implementation]
}

// infoKey is what tells interned client infos apart.
type infoKey struct{ name, title, version string }

// caps returns the interned equal of c (c itself when it is new and too large, or the table
// is full).
func (t *interned) caps(c *protocol.ClientCapabilities) *protocol.ClientCapabilities {
	if c == nil {
		return nil
	}
	parts := [...]json.RawMessage{c.Roots, c.Sampling, c.Elicitation, c.Experimental, c.Tasks, c.Extensions}
	size := 0
	for _, p := range parts {
		size += len(p) + 1
	}
	if size > maxInternedSize {
		return c
	}
	var key strings.Builder
	key.Grow(size)
	for _, p := range parts {
		key.Write(p)
		key.WriteByte(0)
	}
	return t.capsT.intern(key.String(), c)
}

// info returns the interned equal of i (i itself when it is new and too large, or the table
// is full).
func (t *interned) info(i *protocol.Implementation) *protocol.Implementation {
	if i == nil || len(i.Icons) > 0 || len(i.Name)+len(i.Title)+len(i.Version) > maxInternedSize {
		return i // a client that sends icons is rare: it keeps its own
	}
	return t.infoT.intern(infoKey{i.Name, i.Title, i.Version}, i)
}

// internTable holds the interned copies of one kind of value, by key, weakly.
type internTable[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]weak.Pointer[V]
}

// internEntry is what the cleanup of an interned copy needs to remove its entry.
type internEntry[K comparable, V any] struct {
	key K
	ptr weak.Pointer[V]
}

// intern returns the copy interned under key while one is alive; otherwise v, interned when
// the table has room.
func (t *internTable[K, V]) intern(key K, v *V) *V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.m[key]; ok {
		if got := p.Value(); got != nil {
			return got
		}
	} else if len(t.m) >= maxInterned {
		return v
	}
	if t.m == nil {
		t.m = make(map[K]weak.Pointer[V])
	}
	p := weak.Make(v)
	t.m[key] = p // replaces a collected copy whose cleanup has yet to run
	runtime.AddCleanup(v, t.forget, internEntry[K, V]{key: key, ptr: p})
	return v
}

// forget removes the entry of a copy that was collected, unless another has taken its key.
func (t *internTable[K, V]) forget(e internEntry[K, V]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.m[e.key]; ok && p == e.ptr {
		delete(t.m, e.key)
	}
}

// len returns the number of entries in the table (copies alive, or collected and not yet
// cleaned up).
func (t *internTable[K, V]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
