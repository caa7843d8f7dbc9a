package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/protocol"
)

// Defaults of [Config].
const (
	DefaultMaxInFlight      = 1024
	DefaultMinBackoff       = 100 * time.Millisecond
	DefaultMaxBackoff       = 30 * time.Second
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultProbeTimeout     = 3 * time.Second
	// stableAfter and maxQuickLosses: a connection lost is opened again at once, unless
	// maxQuickLosses connections in a row ended within stableAfter of their start; the next
	// attempt then waits for the backoff.
	stableAfter    = time.Second
	maxQuickLosses = 3
)

// The eras the upstream may speak; see [Config].Protocol.
const (
	ProtocolAuto   = ""
	ProtocolLegacy = "legacy"
	ProtocolModern = "modern"
)

// LegacyVersions are the revisions of the initialize era the client accepts from an upstream,
// newest first; it asks for the first.
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Config configures one upstream.
type Config struct {
	// Name is the mounted server's name, for logs and errors.
	Name string
	// Transport opens its connections.
	Transport Transport
	// ClientInfo is the gateway's clientInfo.
	ClientInfo protocol.Implementation
	// Protocol chooses the era: ProtocolAuto (probe with server/discover, then initialize),
	// ProtocolLegacy (initialize only) or ProtocolModern (2026-07-28 only).
	Protocol string
	// MaxInFlight bounds the calls in flight on the connection; further calls wait for a
	// slot. 0 means DefaultMaxInFlight.
	MaxInFlight int
	// MinBackoff and MaxBackoff bound the wait between attempts to reach it; 0 means the
	// defaults.
	MinBackoff, MaxBackoff time.Duration
	// HandshakeTimeout bounds the opening of a connection: the transport, initialize or
	// server/discover. 0 means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// ProbeTimeout bounds the wait for an answer to server/discover before an automatic probe
	// falls back to initialize. 0 means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Logger is used as given; nil means none.
	Logger *zap.Logger
	// Events receives the upstream's components and their changes.
	Events Events
}

// Events receives what happens to an upstream's components. Its methods run on the upstream's
// actor and must not block.
type Events interface {
	// Listed gives the upstream's components after each listing: once it was reached, and
	// after each list change it announced.
	Listed(l *Lists)
	// Down says that the upstream cannot be reached: its components are gone until it
	// is listed again.
	Down(err error)
	// ResourceUpdated relays notifications/resources/updated.
	ResourceUpdated(uri string)
}

// Lists are an upstream's components and what it declared.
type Lists struct {
	Tools     []json.RawMessage // tools/list entries as the upstream sent them
	Resources []protocol.Resource
	Templates []protocol.ResourceTemplate
	Prompts   []protocol.Prompt
	// Capabilities are the upstream's server capabilities.
	Capabilities protocol.ServerCapabilities
	// Version is the protocol version spoken: a legacy revision or protocol.LatestModernVersion.
	Version string
	// ServerInfo is the upstream's self-description.
	ServerInfo protocol.Implementation
}

// State is what an upstream's connection is doing.
type State string

// The states of a connection.
const (
	StateConnecting State = "connecting" // opening a connection; never reached yet, or reconnecting after a loss
	StateUp         State = "up"         // connected and initialized
	StateDown       State = "down"       // the last attempt failed; the next one waits for the backoff
	StateClosed     State = "closed"
)

// Status is a snapshot of an upstream's connection.
type Status struct {
	State State
	// Err is why the upstream is down (or was last lost); nil otherwise.
	Err error
	// Since is when the state began.
	Since time.Time
	// Version is the protocol version of the current connection; empty when not up.
	Version string
	// Connections counts the connections that reached the up state.
	Connections int
	// PID is the process of a stdio upstream while it runs; 0 otherwise.
	PID int
}

// Stats are an upstream's counters.
type Stats struct {
	// Late counts what the upstream sent for calls that were already over (given up or
	// answered): responses, progress, log messages and requests, dropped.
	Late atomic.Uint64
	// Calls counts the calls sent.
	Calls atomic.Uint64
	// InFlight is the number of calls in flight on the connection now.
	InFlight atomic.Int64
}

// Upstream is the handle of one upstream's actor.
//
// The actor owns the connection: it opens it, speaks the handshake, lists, routes what the
// upstream sends beside answers (progress, log messages, its requests to clients, list changes),
// cancels, and fails what is in flight when the connection is lost. The hot path of a call does
// not go through its mailbox: while the connection is up and has a free slot, the caller puts
// the call in the table of calls in flight and sends it itself, and the connection's reader
// hands the answer straight to its caller. The table, guarded by its mutex, is shared by the
// actor, the callers and the reader.
type Upstream struct {
	cfg    Config
	root   *actor.RootContext
	pid    atomic.Pointer[actor.PID]
	wg     sync.WaitGroup // the goroutines of its connections
	status atomic.Pointer[Status]
	stats  Stats
	log    *zap.Logger
	ids    atomic.Int64 // the ids of requests on the wire
	info   []byte       // the gateway's clientInfo, encoded

	t table

	capsMu       sync.Mutex // the last client capabilities encoded, and their JSON
	lastCaps     *protocol.ClientCapabilities
	lastCapsJSON []byte
}

// table is the calls in flight on the connection, and what a caller needs to send one.
type table struct {
	mu      sync.Mutex
	conn    Conn // the connection while it is up; nil otherwise
	gen     uint64
	modern  bool
	version string
	queued  int              // calls waiting in the actor's queue: new ones queue behind them
	active  map[string]*Call // the callers' requests in flight, by id key
}

// Start spawns the upstream's actor with spawn (the engine's supervisor) on the actor system
// of root and starts connecting.
func Start(root *actor.RootContext, spawn func(*actor.Props, string) (*actor.PID, error), cfg Config) (*Upstream, error) {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	u := &Upstream{cfg: cfg, root: root, log: log.With(zap.String("upstream", cfg.Name), zap.String("transport", cfg.Transport.Kind()))}
	u.status.Store(&Status{State: StateConnecting, Since: time.Now()})
	u.info, _ = json.Marshal(cfg.ClientInfo)
	u.t.active = map[string]*Call{}
	a := &upstreamActor{u: u, pending: map[string]*pending{}, requests: map[string]*Request{}}
	// The producer gives the same instance after a restart: the actor then drops the
	// connection and everything in flight on it, and connects afresh (see Started).
	pid, err := spawn(actor.PropsFromProducer(func() actor.Actor { return a }), "upstream")
	if err != nil {
		return nil, err
	}
	u.pid.Store(pid)
	return u, nil
}

// Name returns the upstream's name.
func (u *Upstream) Name() string { return u.cfg.Name }

// Status returns the state of its connection.
func (u *Upstream) Status() Status { return *u.status.Load() }

// Stats returns its counters.
func (u *Upstream) Stats() *Stats { return &u.stats }

// Close stops the actor, which closes the connection and fails what is in flight, and waits
// until the connection's goroutines have ended (a process killed after its grace, at worst).
func (u *Upstream) Close() {
	_ = u.root.StopFuture(u.pid.Load()).Wait()
	u.wg.Wait()
}

func (u *Upstream) send(msg any) { u.root.Send(u.pid.Load(), msg) }

func (u *Upstream) setStatus(s Status) { u.status.Store(&s) }

// Messages of the actor, besides Call, abandonCall and answerRequest.
type (
	opened struct {
		gen  uint64
		conn Conn
		err  error
	}
	inbound struct {
		gen     uint64
		msg     *protocol.Message
		related protocol.ID
	}
	connClosed struct {
		gen uint64
		err error
	}
	timerFired struct {
		gen  uint64
		kind int
	}
	// callOver: reader → actor. A call was answered on the fast path: its requests to the
	// client end.
	callOver struct{ call *Call }
	// slotFree: reader → actor. A slot freed while calls wait in the queue.
	slotFree struct{}
)

const (
	timerReopen = iota
	timerHandshake
	timerProbe
)

// handler is what a connection reads with, tagged with its generation.
type handler struct {
	u   *Upstream
	gen uint64
}

func (h handler) Message(m *protocol.Message, related protocol.ID) {
	switch {
	case m.IsResponse() && !m.ID.IsZero() && h.u.answered(h.gen, m):
		return
	case m.Method == protocol.MethodProgress:
		// Here, not on the actor: a call's progress and log messages must reach its caller
		// before its answer, which the reader hands over itself.
		h.u.progress(h.gen, m)
		return
	case m.Method == protocol.MethodLogMessage:
		h.u.logMessage(h.gen, m, related)
		return
	}
	h.u.send(&inbound{gen: h.gen, msg: m, related: related})
}

// progress relays a progress notification to the caller of the call whose token it carries
// (the call's id).
func (u *Upstream) progress(gen uint64, m *protocol.Message) {
	var p protocol.ProgressParams
	if json.Unmarshal(m.Params, &p) != nil || len(p.ProgressToken) == 0 {
		return
	}
	tok, err := protocol.ParseID(p.ProgressToken)
	if err != nil {
		return
	}
	u.t.mu.Lock()
	c, ok := u.t.active[tok.Key()]
	u.t.mu.Unlock()
	if !ok || c.gen != gen || c.over() {
		u.stats.Late.Add(1)
		return
	}
	if c.Progress {
		c.caller.OnProgress(&p)
	}
}

// logMessage relays a log message to the caller of the call it belongs to (see route).
func (u *Upstream) logMessage(gen uint64, m *protocol.Message, related protocol.ID) {
	c, n := u.route(related)
	if c == nil || c.gen != gen || c.over() {
		if related.IsZero() && n == 0 {
			u.log.Debug("upstream log message outside any call: dropped")
		} else {
			u.stats.Late.Add(1)
		}
		return
	}
	c.caller.OnLog(m.Params)
}

// answered hands the answer m to the caller of the call it answers, when that call is in
// flight on connection gen, and reports whether it did; anything else goes to the actor.
func (u *Upstream) answered(gen uint64, m *protocol.Message) bool {
	c := u.take(gen, m.ID.Key())
	if c == nil {
		return false
	}
	if m.Error != nil {
		u.deliver(c, nil, u.fail(c, m.Error))
	} else {
		u.deliver(c, m.Result, nil)
	}
	return true
}

// Result hands the result read under key to the caller of the call it answers (see
// Handler.Result): Caller.Done copies what it keeps of it.
func (h handler) Result(key, result []byte) bool {
	c := h.u.takeBytes(h.gen, key)
	if c == nil {
		return false
	}
	h.u.deliver(c, result, nil)
	return true
}

// take takes the call whose id key is key out of the table of calls in flight, when it is in
// flight on connection gen; nil otherwise.
func (u *Upstream) take(gen uint64, key string) *Call {
	u.t.mu.Lock()
	return u.taken(gen, u.t.active[key])
}

// takeBytes is take with the key in a byte slice, which the lookup does not copy.
func (u *Upstream) takeBytes(gen uint64, key []byte) *Call {
	u.t.mu.Lock()
	return u.taken(gen, u.t.active[string(key)])
}

// taken removes c, found under u.t.mu, from the table if it is in flight on connection gen,
// and unlocks.
func (u *Upstream) taken(gen uint64, c *Call) *Call {
	if c == nil || c.gen != gen {
		u.t.mu.Unlock()
		return nil
	}
	delete(u.t.active, c.id.Key())
	u.stats.InFlight.Store(int64(len(u.t.active)))
	queued := u.t.queued > 0
	u.t.mu.Unlock()
	if queued {
		u.send(&slotFree{})
	}
	return c
}

// deliver hands the outcome of c, taken out of the table, to its caller.
func (u *Upstream) deliver(c *Call, result json.RawMessage, err error) {
	if c.over() {
		u.stats.Late.Add(1)
	} else {
		c.finish(result, err)
	}
	// After finish: a request to the client that the actor hands to the caller from now on
	// finds the call over, and one handed over before it set asked before.
	if c.asked.Load() {
		u.send(&callOver{call: c}) // its requests to the client end with it
	}
}

// trySend sends c on the connection without the actor, when it is up, has a free slot and no
// call waits before c; it reports whether it did.
func (u *Upstream) trySend(c *Call) bool {
	u.t.mu.Lock()
	if u.t.conn == nil || u.t.queued > 0 || len(u.t.active) >= u.cfg.MaxInFlight {
		u.t.mu.Unlock()
		return false
	}
	if c.over() {
		u.t.mu.Unlock()
		return true // given up before it was sent: Abandon delivered the outcome
	}
	conn, modern, version := u.t.conn, u.t.modern, u.t.version
	c.id = protocol.NewIntID(u.ids.Add(1))
	c.gen = u.t.gen
	key := c.id.Key()
	u.t.active[key] = c
	u.stats.InFlight.Store(int64(len(u.t.active)))
	u.t.mu.Unlock()
	u.stats.Calls.Add(1)
	c.up, c.modern = u, modern
	c.out = Outgoing{enc: c, ID: c.id, Method: c.Method, Name: c.Name, Modern: modern, Version: version, Params: c.HeaderParams}
	conn.Send(&c.out) // over stdio, written now on this goroutine when the pipe takes it
	return true
}

// fail wraps err with the upstream's name and what the call asked.
func (u *Upstream) fail(c *Call, err error) error {
	return &Error{Upstream: u.cfg.Name, Method: c.Method, Name: c.Name, Err: err}
}

func (h handler) Closed(err error) { h.u.send(&connClosed{gen: h.gen, err: err}) }

type phase int

const (
	phaseIdle phase = iota
	phaseOpening
	phaseProbing
	phaseInitializing
	phaseReady
	phaseBackoff
	phaseStopped
)

// pending is one of the actor's own requests in flight (handshake, lists, listen).
type pending struct {
	internal func(result json.RawMessage, werr *protocol.WireError)
}

type upstreamActor struct {
	u       *Upstream
	started bool

	gen      uint64
	conn     Conn
	phase    phase
	modern   bool
	version  string
	caps     protocol.ServerCapabilities
	info     protocol.Implementation
	probed   bool                // an automatic probe went unanswered on an earlier connection: initialize at once
	pending  map[string]*pending // the actor's own requests in flight, by id key
	requests map[string]*Request // the upstream's requests to clients, by its id key
	queue    []*Call
	upSince  time.Time
	failures int
	// quickLosses counts the connections in a row that ended within stableAfter.
	quickLosses int
	down        bool // Down was told and no listing followed
	timer       *time.Timer
	hsTimer     *time.Timer
	conns       int

	listing  *listJob
	relist   bool
	listenID protocol.ID
}

func (a *upstreamActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.u.pid.Store(ctx.Self()) // before anything is sent to it
		if a.started {
			// A restart after a panic: what was in flight on the old instance's state is lost.
			a.u.log.Error("upstream actor restarted; its connection is opened again")
			a.dropConnection(fmt.Errorf("%w: the upstream's actor restarted", ErrConnectionLost))
		}
		a.started = true
		a.open()
	case *actor.Stopping:
		a.stop()
	case *Call:
		a.take(m)
	case *abandonCall:
		a.abandon(m)
	case *answerRequest:
		a.answer(m)
	case *opened:
		a.opened(m)
	case *inbound:
		if m.gen == a.gen && a.conn != nil {
			a.inbound(m.msg, m.related)
		}
	case *connClosed:
		if m.gen == a.gen && a.conn != nil {
			a.lost(m.err)
		}
	case *timerFired:
		a.timerFired(m)
	case *callOver:
		a.endRequests(m.call, "the upstream answered it")
	case *slotFree:
		a.drain()
	}
}

// endRequests ends the upstream's requests to the client of call c, which is over.
// endRequests ends the upstream's requests to the client of call c, which is over, and answers
// each with an error that says so and why.
func (a *upstreamActor) endRequests(c *Call, why string) {
	for rk, r := range a.requests {
		if r.call == c {
			delete(a.requests, rk)
			r.stop()
			a.refuseOver(r.id, r.Method, why)
		}
	}
}

// refuseOver answers the upstream's request id, for method, with the error of a request whose
// call is over.
func (a *upstreamActor) refuseOver(id protocol.ID, method, why string) {
	if a.conn == nil {
		return
	}
	werr := protocol.NewError(protocol.CodeInvalidRequest, "%s refused: the call it belongs to is over: %s", method, why)
	a.conn.Send(&Outgoing{Frame: protocol.EncodeError(id, werr), ID: id, Response: true, Modern: a.modern, Version: a.version})
}

// ended says why a call given up ended, for the upstream.
func ended(cause error) string {
	switch {
	case cause == nil:
		return "it ended"
	case errors.Is(cause, context.DeadlineExceeded):
		return "it timed out"
	case errors.Is(cause, client.ErrInputRequired):
		return "its client answers in an input round of its own, which makes the call again"
	}
	return cause.Error()
}

// open starts opening a connection, off the actor.
func (a *upstreamActor) open() {
	if a.phase == phaseStopped {
		return
	}
	a.gen++
	a.phase = phaseOpening
	gen := a.gen
	u := a.u
	if st := u.Status(); st.State != StateDown {
		u.setStatus(Status{State: StateConnecting, Err: st.Err, Since: time.Now(), Connections: a.conns})
	}
	a.armHandshake()
	u.wg.Add(1)
	// Owned by the actor's upstream: it ends when the transport's Open returns, which the
	// handshake timeout bounds in effect (a late connection is closed at once).
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), u.cfg.HandshakeTimeout)
		defer cancel()
		conn, err := u.cfg.Transport.Open(ctx, handler{u: u, gen: gen}, &u.wg)
		u.send(&opened{gen: gen, conn: conn, err: err})
	}()
}

func (a *upstreamActor) armHandshake() {
	gen := a.gen
	if a.hsTimer != nil {
		a.hsTimer.Stop()
	}
	a.hsTimer = time.AfterFunc(a.u.cfg.HandshakeTimeout, func() { a.u.send(&timerFired{gen: gen, kind: timerHandshake}) })
}

func (a *upstreamActor) opened(m *opened) {
	if m.gen != a.gen || a.phase != phaseOpening {
		if m.conn != nil {
			m.conn.Close() // too late: a newer attempt, or the actor stopped
		}
		return
	}
	if m.err != nil {
		a.attemptFailed(m.err)
		return
	}
	a.conn = m.conn
	switch {
	case a.u.cfg.Protocol == ProtocolModern || (a.u.cfg.Protocol == ProtocolAuto && !a.probed):
		a.discover()
	default:
		a.initialize()
	}
}

// discover probes for the modern era.
func (a *upstreamActor) discover() {
	a.phase = phaseProbing
	gen := a.gen
	if a.u.cfg.Protocol == ProtocolAuto {
		time.AfterFunc(a.u.cfg.ProbeTimeout, func() { a.u.send(&timerFired{gen: gen, kind: timerProbe}) })
	}
	a.request(protocol.MethodServerDiscover, nil, true, func(res json.RawMessage, werr *protocol.WireError) {
		if a.phase != phaseProbing {
			return // fell back to initialize already
		}
		var d struct {
			SupportedVersions []string                    `json:"supportedVersions"`
			Capabilities      protocol.ServerCapabilities `json:"capabilities"`
			Meta              map[string]json.RawMessage  `json:"_meta"`
		}
		modern := false
		if werr == nil && json.Unmarshal(res, &d) == nil {
			for _, v := range d.SupportedVersions {
				if v == protocol.LatestModernVersion {
					modern = true
				}
			}
		}
		if !modern {
			if a.u.cfg.Protocol == ProtocolModern {
				a.attemptFailed(fmt.Errorf("the upstream does not serve MCP %s (server/discover: %v)", protocol.LatestModernVersion, describe(werr)))
				return
			}
			a.initialize()
			return
		}
		a.modern, a.version, a.caps = true, protocol.LatestModernVersion, d.Capabilities
		a.info = protocol.Implementation{}
		if raw, ok := d.Meta[protocol.MetaServerInfo]; ok {
			_ = json.Unmarshal(raw, &a.info)
		}
		a.ready()
	})
}

func describe(werr *protocol.WireError) string {
	if werr == nil {
		return "no 2026-07-28 among its supported versions"
	}
	return werr.Error()
}

// initialize opens a legacy session.
func (a *upstreamActor) initialize() {
	a.phase = phaseInitializing
	a.modern = false
	params, _ := json.Marshal(&struct {
		ProtocolVersion string                  `json:"protocolVersion"`
		Capabilities    json.RawMessage         `json:"capabilities"`
		ClientInfo      protocol.Implementation `json:"clientInfo"`
	}{LegacyVersions[0], json.RawMessage(`{"roots":{},"sampling":{},"elicitation":{"form":{},"url":{}}}`), a.u.cfg.ClientInfo})
	a.request(protocol.MethodInitialize, params, false, func(res json.RawMessage, werr *protocol.WireError) {
		if a.phase != phaseInitializing {
			return
		}
		if werr != nil {
			a.attemptFailed(fmt.Errorf("initialize: %w", werr))
			return
		}
		var r protocol.InitializeResult
		if err := json.Unmarshal(res, &r); err != nil {
			a.attemptFailed(fmt.Errorf("initialize: malformed result: %w", err))
			return
		}
		known := false
		for _, v := range LegacyVersions {
			if v == r.ProtocolVersion {
				known = true
			}
		}
		if !known {
			a.attemptFailed(fmt.Errorf("initialize: the upstream answered with protocol version %q, which the gateway does not speak", r.ProtocolVersion))
			return
		}
		a.version, a.caps, a.info = r.ProtocolVersion, r.Capabilities, r.ServerInfo
		a.notify(protocol.MethodInitialized, nil)
		a.ready()
	})
}

// ready: the connection is initialized. Queued calls go out, and the components are listed.
func (a *upstreamActor) ready() {
	a.phase = phaseReady
	if a.hsTimer != nil {
		a.hsTimer.Stop()
	}
	a.failures = 0
	a.upSince = time.Now()
	a.conns++
	pid := 0
	if p, ok := a.conn.(interface{ PID() int }); ok {
		pid = p.PID()
	}
	a.u.setStatus(Status{State: StateUp, Since: a.upSince, Version: a.version, Connections: a.conns, PID: pid})
	a.u.t.mu.Lock()
	a.u.t.conn, a.u.t.gen, a.u.t.modern, a.u.t.version = a.conn, a.gen, a.modern, a.version
	a.u.t.mu.Unlock()
	era := "legacy"
	if a.modern {
		era = "modern"
	}
	a.u.log.Info("upstream connected", zap.String("era", era), zap.String("protocolVersion", a.version),
		zap.String("server", a.info.Name), zap.String("serverVersion", a.info.Version))
	a.drain()
	a.listen()
	a.list()
}

// attemptFailed ends an attempt to connect: the upstream is down until the next attempt, after
// the backoff, succeeds.
func (a *upstreamActor) attemptFailed(err error) {
	if a.phase == phaseStopped {
		return
	}
	if a.phase == phaseProbing {
		// A connection that ended or failed while probing may be a server that does not
		// take server/discover before initialize: the next attempt initializes at once.
		a.probed = a.u.cfg.Protocol == ProtocolAuto
	}
	a.closeConn()
	a.failures++
	delay := a.u.cfg.MinBackoff << min(a.failures-1, 20)
	if delay > a.u.cfg.MaxBackoff || delay <= 0 {
		delay = a.u.cfg.MaxBackoff
	}
	if !a.down {
		a.down = true
		a.u.log.Warn("upstream unreachable; its components are withdrawn until it answers",
			zap.Error(err), zap.Duration("retryIn", delay))
		a.u.cfg.Events.Down(err)
	} else {
		a.u.log.Debug("upstream still unreachable", zap.Error(err), zap.Duration("retryIn", delay))
	}
	a.u.setStatus(Status{State: StateDown, Err: err, Since: time.Now(), Connections: a.conns})
	for _, c := range a.queue {
		c.finish(nil, a.fail(c, fmt.Errorf("%w: %v", ErrDown, err)))
	}
	a.setQueue(nil)
	a.phase = phaseBackoff
	gen := a.gen
	a.timer = time.AfterFunc(delay, func() { a.u.send(&timerFired{gen: gen, kind: timerReopen}) })
}

// lost handles the end of an established or opening connection.
func (a *upstreamActor) lost(err error) {
	if err == nil {
		err = errors.New("connection ended")
	}
	if a.phase != phaseReady {
		a.attemptFailed(err)
		return
	}
	// A connection lost is opened again at once, unless it is the third in a row to end
	// within a second of its start: a process that dies as soon as it runs is not restarted
	// in a tight loop, but waits for the backoff.
	if time.Since(a.upSince) >= stableAfter {
		a.quickLosses = 0
	} else {
		a.quickLosses++
	}
	now := a.quickLosses < maxQuickLosses
	a.u.log.Warn("upstream connection lost", zap.Error(err), zap.Bool("reconnectingNow", now))
	a.dropConnection(fmt.Errorf("%w: %v", ErrConnectionLost, err))
	if now {
		a.open()
		return
	}
	a.quickLosses = 0
	a.attemptFailed(err)
}

// dropConnection closes the connection and fails the calls in flight on it with err; queued
// calls stay queued.
func (a *upstreamActor) dropConnection(err error) {
	a.closeConn()
	a.u.t.mu.Lock()
	lost := a.u.t.active
	a.u.t.active = map[string]*Call{}
	a.u.t.conn = nil
	a.u.t.mu.Unlock()
	for _, c := range lost {
		c.finish(nil, a.fail(c, err))
	}
	a.u.stats.InFlight.Store(0)
	a.pending = map[string]*pending{}
	for key, r := range a.requests {
		delete(a.requests, key)
		r.stop()
	}
	a.listing, a.relist, a.listenID = nil, false, protocol.ID{}
	if a.phase == phaseReady {
		a.phase = phaseIdle
	}
}

func (a *upstreamActor) closeConn() {
	if a.conn != nil {
		a.u.t.mu.Lock()
		if a.u.t.conn == a.conn {
			a.u.t.conn = nil
		}
		a.u.t.mu.Unlock()
		a.conn.Close()
		a.conn = nil
	}
	if a.hsTimer != nil {
		a.hsTimer.Stop()
	}
}

func (a *upstreamActor) timerFired(m *timerFired) {
	if m.gen != a.gen {
		return
	}
	switch m.kind {
	case timerReopen:
		if a.phase == phaseBackoff {
			a.open()
		}
	case timerHandshake:
		if a.phase == phaseOpening || a.phase == phaseProbing || a.phase == phaseInitializing {
			a.attemptFailed(fmt.Errorf("no answer within %s while connecting", a.u.cfg.HandshakeTimeout))
		}
	case timerProbe:
		if a.phase == phaseProbing {
			a.probed = true
			a.initialize()
		}
	}
}

// stop ends everything: the actor is stopping.
func (a *upstreamActor) stop() {
	a.dropConnection(ErrClosed)
	for _, c := range a.queue {
		c.finish(nil, a.fail(c, ErrClosed))
	}
	a.setQueue(nil)
	a.phase = phaseStopped
	if a.timer != nil {
		a.timer.Stop()
	}
	a.u.setStatus(Status{State: StateClosed, Since: time.Now(), Connections: a.conns})
}

func (a *upstreamActor) fail(c *Call, err error) error { return a.u.fail(c, err) }

// inFlight is the number of the callers' calls in flight.
func (a *upstreamActor) inFlight() int {
	a.u.t.mu.Lock()
	defer a.u.t.mu.Unlock()
	return len(a.u.t.active)
}

// setQueue sets the queue, and tells the table how many calls wait in it.
func (a *upstreamActor) setQueue(q []*Call) {
	a.queue = q
	a.u.t.mu.Lock()
	a.u.t.queued = len(q)
	a.u.t.mu.Unlock()
}

// take accepts a caller's request: sent now, or queued until the connection is up or a slot
// is free.
func (a *upstreamActor) take(c *Call) {
	switch {
	case c.over():
	case a.phase == phaseStopped:
		c.finish(nil, a.fail(c, ErrClosed))
	case a.phase == phaseBackoff:
		c.finish(nil, a.fail(c, ErrDown))
	case a.phase == phaseReady && len(a.queue) == 0 && a.inFlight() < a.u.cfg.MaxInFlight:
		a.sendCall(c)
	default:
		a.setQueue(append(a.queue, c))
	}
}

// drain sends queued calls while there are slots.
func (a *upstreamActor) drain() {
	q := a.queue
	for len(q) > 0 && a.phase == phaseReady && a.inFlight() < a.u.cfg.MaxInFlight {
		c := q[0]
		q[0] = nil
		q = q[1:]
		if !c.over() {
			a.sendCall(c)
		}
	}
	if len(q) == 0 {
		q = nil
	}
	a.setQueue(q)
}

func (a *upstreamActor) sendCall(c *Call) {
	a.u.t.mu.Lock()
	if c.over() {
		a.u.t.mu.Unlock()
		return // given up since it was taken: Abandon delivered the outcome
	}
	c.id = protocol.NewIntID(a.u.ids.Add(1))
	c.gen = a.gen
	c.up, c.modern = a.u, a.modern
	a.u.t.active[c.id.Key()] = c
	a.u.stats.InFlight.Store(int64(len(a.u.t.active)))
	a.u.t.mu.Unlock()
	a.u.stats.Calls.Add(1)
	c.out = Outgoing{enc: c, ID: c.id, Method: c.Method, Name: c.Name, Modern: a.modern, Version: a.version, Params: c.HeaderParams}
	a.conn.Send(&c.out)
}

// request sends one of the actor's own requests.
func (a *upstreamActor) request(method string, params json.RawMessage, modern bool, done func(json.RawMessage, *protocol.WireError)) protocol.ID {
	id := protocol.NewIntID(a.u.ids.Add(1))
	frame := a.u.requestFrame(id, method, params, nil, nil, false, nil, "", modern)
	a.pending[id.Key()] = &pending{internal: done}
	a.conn.Send(&Outgoing{Frame: frame, ID: id, Method: method, Modern: modern, Version: a.versionFor(modern)})
	return id
}

func (a *upstreamActor) versionFor(modern bool) string {
	if modern {
		return protocol.LatestModernVersion
	}
	return a.version
}

func (a *upstreamActor) notify(method string, params any) {
	frame, err := protocol.EncodeNotification(method, params)
	if err != nil || a.conn == nil {
		return
	}
	a.conn.Send(&Outgoing{Frame: frame, Method: method, Modern: a.modern, Version: a.version})
}

// requestFrame encodes a request in one allocation; see appendRequest.
func (u *Upstream) requestFrame(id protocol.ID, method string, params, args, meta json.RawMessage, progress bool, caps *protocol.ClientCapabilities, level string, modern bool) []byte {
	const envelope = len(`{"jsonrpc":"2.0","id":,"method":"","params":{,"arguments":}}`) + 1 // and the line's end a stdio pipe adds
	size := envelope + len(id.String()) + len(method) + len(params) + len(args) + len(meta)
	if progress || len(meta) > 0 {
		size += len(`,"_meta":{"progressToken":}`) + len(id.String()) + 1
	}
	if modern {
		size += len(`,"_meta":{}`) + 3*len(`,"":`) + len(protocol.MetaProtocolVersion) + len(protocol.LatestModernVersion) + 2 +
			len(protocol.MetaClientCapabilities) + len(u.capsJSON(caps)) + len(protocol.MetaClientInfo) + len(u.info)
		if level != "" {
			size += len(`,"":""`) + len(protocol.MetaLogLevel) + len(level) + 8
		}
	}
	return u.appendRequest(make([]byte, 0, size), id, method, params, args, meta, progress, caps, level, modern)
}

// appendRequest appends a request, encoded in one pass: the envelope, the caller's params
// members (and args as params.arguments, when given), and _meta with the progress token, the
// caller's _meta members and, in the modern era, the envelope of the era. params, args and meta
// are JSON the gateway encoded itself (from what the engine validated, or by encoding/json),
// and method one of the protocol's names, so nothing is checked again; a line break in them (a
// client's arguments over HTTP may hold one) is taken out, as a message on a stdio pipe is one
// line.
func (u *Upstream) appendRequest(b []byte, id protocol.ID, method string, params, args, meta json.RawMessage, progress bool, caps *protocol.ClientCapabilities, level string, modern bool) []byte {
	params, args, meta = oneLine(params), oneLine(args), oneLine(meta)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.String()...)
	b = append(b, `,"method":"`...)
	b = append(b, method...)
	b = append(b, '"')
	bare := !progress && !modern && len(meta) == 0
	if bare && len(args) == 0 {
		if len(params) > 0 {
			b = append(b, `,"params":`...)
			b = append(b, params...)
		}
		return append(b, '}')
	}
	b = append(b, `,"params":{`...)
	body := trimObject(params)
	b = append(b, body...)
	if len(args) > 0 {
		if len(body) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"arguments":`...)
		b = append(b, args...)
		body = args
	}
	if bare {
		return append(b, "}}"...)
	}
	if len(body) > 0 {
		b = append(b, ',')
	}
	b = append(b, `"_meta":{`...)
	sep := false
	if progress {
		b, sep = appendName(b, sep, "progressToken"), true
		b = append(b, id.String()...)
	}
	if m := trimObject(meta); len(m) > 0 {
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, m...)
	}
	if modern {
		b, sep = appendName(b, sep, protocol.MetaProtocolVersion), true
		b = append(b, '"')
		b = append(b, protocol.LatestModernVersion...)
		b = append(b, '"')
		b = appendName(b, sep, protocol.MetaClientCapabilities)
		b = append(b, u.capsJSON(caps)...)
		b = appendName(b, sep, protocol.MetaClientInfo)
		b = append(b, u.info...)
		if level != "" {
			b = appendName(b, sep, protocol.MetaLogLevel)
			lv, _ := json.Marshal(level)
			b = append(b, lv...)
		}
	}
	return append(b, "}}}"...)
}

// appendFrame appends the call's request, as sent on its connection (see Outgoing).
func (c *Call) appendFrame(b []byte) []byte {
	return c.up.appendRequest(b, c.id, c.Method, c.Params, c.Args, c.Meta, c.Progress, c.Caps, c.LogLevel, c.modern)
}

// appendName appends the name of an object's member and its colon, after a comma when sep
// says that a member came before; the value is appended next.
func appendName(b []byte, sep bool, name string) []byte {
	if sep {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, `":`...)
}

// oneLine takes the line breaks out of raw, valid JSON, where there are any: in valid JSON a
// line break can only be white space (one in a string is escaped).
func oneLine(raw []byte) []byte {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return raw
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// trimObject returns the members of a JSON object without its braces, or nil.
func trimObject(raw json.RawMessage) []byte {
	i, j := 0, len(raw)
	for i < j && isSpace(raw[i]) {
		i++
	}
	for j > i && isSpace(raw[j-1]) {
		j--
	}
	if j-i < 2 || raw[i] != '{' || raw[j-1] != '}' {
		return nil
	}
	inner := raw[i+1 : j-1]
	k, l := 0, len(inner)
	for k < l && isSpace(inner[k]) {
		k++
	}
	for l > k && isSpace(inner[l-1]) {
		l--
	}
	return inner[k:l]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// capsJSON is the part of a client's capabilities a modern upstream is told: what it may ask of
// the client. The last one is kept: the calls of one client share their capabilities.
func (u *Upstream) capsJSON(c *protocol.ClientCapabilities) []byte {
	if c == nil || (len(c.Roots) == 0 && len(c.Sampling) == 0 && len(c.Elicitation) == 0) {
		return []byte(`{}`)
	}
	u.capsMu.Lock()
	defer u.capsMu.Unlock()
	if c == u.lastCaps {
		return u.lastCapsJSON
	}
	raw, err := json.Marshal(&protocol.ClientCapabilities{Roots: c.Roots, Sampling: c.Sampling, Elicitation: c.Elicitation})
	if err != nil {
		return []byte(`{}`)
	}
	u.lastCaps, u.lastCapsJSON = c, raw
	return raw
}

// abandon gives up a call: the upstream is told, and what it sends for the call is dropped.
func (a *upstreamActor) abandon(m *abandonCall) {
	c := m.call
	key := c.id.Key()
	a.u.t.mu.Lock()
	active := m.inFlight || (!c.id.IsZero() && a.u.t.active[key] == c)
	if !m.inFlight && active {
		delete(a.u.t.active, key)
		a.u.stats.InFlight.Store(int64(len(a.u.t.active)))
	}
	a.u.t.mu.Unlock()
	why := ended(m.cause)
	if !active {
		for i, q := range a.queue {
			if q == c {
				a.setQueue(append(a.queue[:i], a.queue[i+1:]...))
				break
			}
		}
		a.endRequests(c, why)
		return
	}
	a.endRequests(c, why)
	if a.conn != nil && c.gen == a.gen {
		if !(a.modern && a.u.cfg.Transport.Kind() == "http") {
			// Over HTTP the modern era cancels by closing the stream alone.
			a.notify(protocol.MethodCancelled, &protocol.CancelledParams{RequestID: c.id, Reason: reason(m.cause)})
		}
		a.conn.EndStream(c.id)
	}
	a.drain()
}

func reason(cause error) string {
	if errors.Is(cause, context.DeadlineExceeded) {
		return "timed out"
	}
	return "cancelled by the client"
}

// answer sends a client's answer to one of the upstream's requests.
func (a *upstreamActor) answer(m *answerRequest) {
	key := m.id.Key()
	r, ok := a.requests[key]
	if !ok || r.call != m.call || a.conn == nil || m.call.gen != a.gen {
		return // the call is over, or the upstream withdrew the request
	}
	delete(a.requests, key)
	r.stop()
	var frame []byte
	var werr *protocol.WireError
	switch {
	case m.err == nil:
		var err error
		if frame, err = protocol.EncodeResult(m.id, m.result); err != nil {
			werr = protocol.ErrInternal()
		}
	case errors.As(m.err, &werr):
	default:
		werr = protocol.ErrInternal()
	}
	if werr != nil {
		frame = protocol.EncodeError(m.id, werr)
	}
	a.conn.Send(&Outgoing{Frame: frame, ID: m.id, Response: true, Modern: a.modern, Version: a.version})
}

// inbound handles one message from the upstream.
func (a *upstreamActor) inbound(m *protocol.Message, related protocol.ID) {
	switch {
	case m.IsResponse():
		a.response(m)
	case m.IsRequest():
		a.upstreamRequest(m, related)
	case m.IsNotification():
		a.notification(m, related)
	}
}

func (a *upstreamActor) response(m *protocol.Message) {
	if m.ID.IsZero() {
		a.u.log.Debug("upstream sent an error with no id", zap.Error(m.Error))
		return
	}
	key := m.ID.Key()
	p, ok := a.pending[key]
	if !ok {
		// Not one of the actor's own: an answer to a call given up (or never made), or one
		// the reader could not hand over (sent on an earlier connection): dropped.
		a.u.stats.Late.Add(1)
		return
	}
	delete(a.pending, key)
	p.internal(m.Result, m.Error)
}

// route finds the call a message of the upstream belongs to: the request whose stream carried
// it when the transport knows it, else the only call in flight. With several calls in flight
// on a transport that does not relate messages (stdio), nothing can be told: nil.
func (u *Upstream) route(related protocol.ID) (*Call, int) {
	u.t.mu.Lock()
	defer u.t.mu.Unlock()
	n := len(u.t.active)
	if !related.IsZero() {
		return u.t.active[related.Key()], n
	}
	if n == 1 {
		for _, c := range u.t.active {
			return c, n
		}
	}
	return nil, n
}

func (a *upstreamActor) notification(m *protocol.Message, related protocol.ID) {
	switch m.Method {
	case protocol.MethodToolsListChanged, protocol.MethodResourcesListChanged, protocol.MethodPromptsListChanged:
		a.list()
	case protocol.MethodResourcesUpdated:
		var p protocol.ResourceUpdatedParams
		if json.Unmarshal(m.Params, &p) == nil && p.URI != "" {
			a.u.cfg.Events.ResourceUpdated(p.URI)
		}
	case protocol.MethodCancelled:
		var p protocol.CancelledParams
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		key := p.RequestID.Key()
		if r, ok := a.requests[key]; ok {
			delete(a.requests, key)
			r.stop()
		}
	}
}

// upstreamRequest handles a request of the upstream to the client: ping is answered here;
// sampling, elicitation and roots go to the client of the call they belong to.
func (a *upstreamActor) upstreamRequest(m *protocol.Message, related protocol.ID) {
	refuse := func(werr *protocol.WireError) {
		a.conn.Send(&Outgoing{Frame: protocol.EncodeError(m.ID, werr), ID: m.ID, Response: true, Modern: a.modern, Version: a.version})
	}
	switch m.Method {
	case protocol.MethodPing:
		frame, _ := protocol.EncodeResult(m.ID, json.RawMessage(`{}`))
		a.conn.Send(&Outgoing{Frame: frame, ID: m.ID, Response: true, Modern: a.modern, Version: a.version})
		return
	case protocol.MethodSamplingCreateMessage, protocol.MethodElicitationCreate, protocol.MethodRootsList:
	default:
		refuse(protocol.ErrMethodNotFound(m.Method))
		return
	}
	c, n := a.u.route(related)
	switch {
	case c == nil && related.IsZero() && n > 1:
		a.u.log.Warn("upstream request to the client while several calls are in flight on a transport that does not say which one it belongs to: refused",
			zap.String("method", m.Method))
		refuse(protocol.NewError(protocol.CodeInternalError, "%s refused: the gateway cannot tell which of several calls in flight this request belongs to", m.Method))
		return
	case c == nil:
		refuse(protocol.NewError(protocol.CodeInvalidRequest, "%s refused: it belongs to no call in flight", m.Method))
		return
	case c.over():
		a.u.stats.Late.Add(1)
		a.refuseOver(m.ID, m.Method, c.why())
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &Request{Method: m.Method, Params: m.Params, up: a.u, call: c, id: m.ID, ctx: ctx, stop: stop}
	// Set before the request is served: the reader, once it has the answer, reads it to end
	// the call's requests (see answered).
	c.asked.Store(true)
	a.requests[m.ID.Key()] = r
	if !c.serve(r, &a.u.wg) {
		delete(a.requests, m.ID.Key())
		stop()
		if c.over() {
			a.u.stats.Late.Add(1)
			a.refuseOver(m.ID, m.Method, c.why())
			return
		}
		refuse(protocol.NewError(protocol.CodeInternalError, "%s refused: too many requests to the client at once", m.Method))
	}
}
