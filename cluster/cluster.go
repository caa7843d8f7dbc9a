// Package cluster runs Toolgrain servers as the members of one logical MCP server on
// protoactor-go's remote (gRPC) and cluster membership, so that any member serves any request
// behind a plain round-robin load balancer:
//
//   - Modern (MCP 2026-07-28) requests are stateless and are served where they land; give every
//     member the same toolgrain.Config.RequestState.Key so each accepts the others' requestState.
//   - A legacy (2025-11-25) session lives on the member that answered its initialize, its home.
//     Its Mcp-Session-Id names the home by its address sealed with a key derived from the
//     cluster secret (a client can neither read it nor forge an id), which every member opens
//     on its own, even before it has seen the home in the topology. Another member that
//     receives its POST, GET or DELETE forwards the HTTP request to the home over remote and
//     streams the home's answer back, byte for byte and in order: progress, notifications,
//     requests to the client, the result; SSE resumption (Last-Event-ID) works from any member
//     because the event log is on the home.
//   - A home that is gone (left the member list, or its remote connection terminated) makes
//     its sessions answer 404 Not Found at once, the signal for a client to initialize again.
//     A legacy session does not survive its home.
//   - A list change or resource update on one member reaches the clients of every member, and
//     so does a change of the tags (which components each caller sees): members exchange their
//     settings, and each tells its own clients whose view changed.
//   - A task (the tasks extension) lives on the member that made it; its id names that member,
//     by an opaque reference (an HMAC of its address). tasks/get, tasks/update and tasks/cancel
//     are forwarded to the home from any member; a task whose home is gone is answered failed
//     (tasks/get) or with -32602 (tasks/update, tasks/cancel) by the member the request
//     reached, and one whose home this member has not seen yet is refused as one to send
//     again (503) for a few seconds, the time it takes to learn of a member that joined.
//
// Every message between members is one protobuf type, internal/wire.Envelope, carrying raw
// JSON and HTTP bytes.
//
// # Telemetry
//
// A member records with the server's TracerProvider, MeterProvider and Propagator
// (toolgrain.Config.Telemetry); without them it records nothing and forwarding costs nothing
// more.
//
// Spans: an edge records a [ForwardSpanName] CLIENT span per forwarded request, a child of the
// span of the edge request's context (the host's HTTP span) or else of the trace context in its
// headers, and sends its context to the home in the forwarded request's headers (traceparent,
// tracestate, baggage), replacing the client's. The home puts that context in the request's
// context: the engine's SERVER span there links to the forward span, as it links to the span
// of a local HTTP request, and keeps params._meta as its parent.
//
// Metrics (the server's sessions metrics count each member's own sessions):
// toolgrain.cluster.members (gauge), toolgrain.cluster.requests.forwarded and
// toolgrain.cluster.requests.served_for_edge (counters), toolgrain.cluster.forward.duration
// (histogram, s: from the send to the head of the home's answer).
//
// A [Node] is made with [Start] (its own actor system and cluster: the automanaged provider
// from a static member list, or any protoactor provider) or [Attach] (a cluster the host
// already runs), and given to a server through toolgrain.Config.Cluster.
package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/toolgrain/toolgrain/actors"
	"github.com/toolgrain/toolgrain/internal/wire"
)

// DefaultName is the cluster name when [Config].Name is empty.
const DefaultName = "toolgrain"

// DefaultRefresh is how often the automanaged provider polls the members' health endpoints
// when [Config].Refresh is 0. A killed member leaves the member list within about two polls.
const DefaultRefresh = time.Second

// MinSecretSize is the least length of [Config].Secret, in bytes.
const MinSecretSize = 32

// MaxRemoteMessage is the largest gRPC message (a batch of envelopes) a member started with
// [Start] receives from another. A host that uses [Attach] should raise its remote's limit
// (grpc.MaxRecvMsgSize in remote.WithServerOptions) above its servers' MaxMessageSize too.
const MaxRemoteMessage = 1 << 30

// tunnelName is the name of every member's tunnel actor, the receiver of forwarded requests.
const tunnelName = "toolgrain-tunnel"

// Config configures a member started with [Start].
type Config struct {
	// Name is the cluster's name, the same on every member. "" means DefaultName.
	Name string
	// Addr is the HOST:PORT this member's remote (gRPC) listens on and is reached at by the
	// others; it names the home of this member's sessions and tasks. Required, with a port other
	// than 0, at most MaxAddrSize bytes. A host beyond loopback needs TLS or AllowInsecure.
	Addr string
	// Members are the HOST:PORT health endpoints of every member (this one included), for the
	// automanaged provider: a fixed fleet. Ignored when Provider is set.
	Members []string
	// HealthPort is the port of this member's automanaged health endpoint (GET /_health, served
	// by the provider on every interface, unauthenticated); Start fails when it is in use.
	// Ignored when Provider is set.
	HealthPort int
	// Refresh is the automanaged provider's poll interval; 0 means DefaultRefresh.
	Refresh time.Duration
	// Provider is the membership provider (etcd, Kubernetes, ...); nil means automanaged from
	// Members and HealthPort.
	Provider pcluster.ClusterProvider
	// Secret signs the session ids; at least MinSecretSize bytes, the same on every member.
	Secret []byte
	// TLS, when set, secures the remote traffic between members both ways: it must hold this
	// member's certificate (Certificates), and ClientCAs/RootCAs to verify the others; set
	// ClientAuth to tls.RequireAndVerifyClientCert for client certificates. Nil means plain
	// gRPC, which is refused for an Addr beyond loopback unless AllowInsecure.
	TLS *tls.Config
	// AllowInsecure lets a member listen beyond loopback without TLS.
	AllowInsecure bool
	// Logger receives the cluster's log lines; nil means none.
	Logger *zap.Logger
}

// Node is this process's membership of a cluster. Its methods are safe for concurrent use.
type Node struct {
	log     *zap.Logger
	system  *actor.ActorSystem
	cl      *pcluster.Cluster
	own     bool // Start made the system and cluster; Close shuts them down
	addr    string
	home    string        // this member's sealed address, the home part of its session ids (sealHome)
	hold    time.Duration // how long a task-home reference not seen yet may still be learnt (learnHold)
	key     []byte        // the session key (sessionKey), which task-home references are made with
	ids     *idKeys       // the keys of session ids, derived from key
	tunnel  *actor.PID
	sub     *eventstream.Subscription
	local   atomic.Pointer[http.Handler]
	deliver atomic.Pointer[func(method, uri string)]
	tel     atomic.Pointer[telemetry] // nil: none

	mu      sync.Mutex
	members map[string]bool      // addresses in the last topology; nil before the first
	dead    map[string]time.Time // addresses whose remote endpoint terminated, and when
	// taskHomes maps the reference (the home of task ids) of every member ever seen, this one
	// included, to its address.
	taskHomes map[string]string
	tags      tagSync // how the engine takes the others' tag entries (tags.go)
	// unseen maps the task-home references this member was asked about and could not resolve
	// to when it was first asked (at most maxUnseen of them); changed is when the member set
	// last changed, or the member started. See learning.
	unseen  map[string]time.Time
	pruned  time.Time // when unseen was last rid of its expired entries
	changed time.Time
	closed  bool

	// homes counts the goroutines serving forwarded requests on this member; Close waits.
	homes sync.WaitGroup
	stats struct {
		forwarded, served atomic.Int64
		headed            atomic.Int64 // forwards whose answer began
		streams, homes    atomic.Int64 // live stream actors (edge) and home actors
		headNanos         atomic.Int64 // their total time from the request to the answer's head
	}
}

// Start starts a member: its own actor system with remote on cfg.Addr, cluster membership, and
// the actors that serve forwarded requests. It returns once the member has joined (protoactor's
// StartMember takes about a second). Give the Node to toolgrain.Config.Cluster.
func Start(cfg Config) (*Node, error) {
	if len(cfg.Secret) < MinSecretSize {
		return nil, fmt.Errorf("cluster: secret of %d bytes (want at least %d)", len(cfg.Secret), MinSecretSize)
	}
	host, portText, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: addr %q: %w", cfg.Addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("cluster: addr %q: port must be 1..65535", cfg.Addr)
	}
	if cfg.TLS == nil && !cfg.AllowInsecure && !isLoopback(host) {
		return nil, fmt.Errorf("cluster: addr %q is beyond loopback: remote traffic would be plain text (give TLS, or allow it explicitly)", cfg.Addr)
	}
	if cfg.Provider == nil {
		if len(cfg.Members) == 0 || cfg.HealthPort <= 0 {
			return nil, errors.New("cluster: the automanaged provider needs Members and HealthPort")
		}
		// The provider serves the health endpoint on a goroutine of its own and only logs a
		// failure to listen: the member would run, outside the cluster, for good.
		l, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(cfg.HealthPort)))
		if err != nil {
			return nil, fmt.Errorf("cluster: health endpoint: %w", err)
		}
		_ = l.Close()
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	name := cfg.Name
	if name == "" {
		name = DefaultName
	}
	refresh := cfg.Refresh
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	provider := cfg.Provider
	if provider == nil {
		provider = automanaged.NewWithConfig(refresh, cfg.HealthPort, cfg.Members...)
	}
	// A dead member's connection is noticed by gRPC keepalive even when its TCP stays open.
	dial := []grpc.DialOption{grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 3 * time.Second, PermitWithoutStream: true})}
	// A forwarded request carries a whole HTTP body (up to the server's MaxMessageSize, 4 MiB by
	// default), and the endpoint writer batches messages: gRPC's 4 MB receive limit would drop
	// such batches and break the connection. Members are trusted peers (loopback or TLS).
	serve := []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.MaxRecvMsgSize(MaxRemoteMessage),
	}
	if cfg.TLS != nil {
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(cfg.TLS)))
		serve = append(serve, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	} else {
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials())) // protoactor's own default, spelled as grpc now asks
	}
	rc := remote.Configure(host, port, remote.WithDialOptions(dial...), remote.WithServerOptions(serve...))
	// The endpoint writer retries a dead address MaxRetryCount times, 2 s apart, holding
	// queued messages; one retry bounds a forward to a member that just died.
	rc.MaxRetryCount = 1
	system := actors.NewSystem(log)
	cl := pcluster.New(system, pcluster.Configure(name, provider, disthash.New(), rc))
	// Subscribed before the member starts: its first topology comes during StartMember.
	n := newNode(cl, cfg.Secret, log)
	if cfg.Provider == nil {
		// A member that joined is polled within a refresh: give it a few.
		n.hold = max(n.hold, 3*refresh)
	}
	if err := startMember(cl); err != nil {
		system.EventStream.Unsubscribe(n.sub)
		return nil, err
	}
	if err := n.start(); err != nil {
		cl.Shutdown(false)
		return nil, err
	}
	n.own = true
	return n, nil
}

// startMember turns protoactor's panics on provider errors into an error.
func startMember(cl *pcluster.Cluster) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cluster: start member: %v", p)
		}
	}()
	cl.StartMember()
	return nil
}

// Attach makes a Node of a cluster the host already started (as a member, with remote), for a
// host that runs its own protoactor cluster: the engine's actors then run on cl.ActorSystem
// (set toolgrain.Config.ActorSystem to it too). secret is as [Config].Secret. Close leaves the
// host's cluster running.
func Attach(cl *pcluster.Cluster, secret []byte, log *zap.Logger) (*Node, error) {
	if len(secret) < MinSecretSize {
		return nil, fmt.Errorf("cluster: secret of %d bytes (want at least %d)", len(secret), MinSecretSize)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return attach(cl, secret, log)
}

func attach(cl *pcluster.Cluster, secret []byte, log *zap.Logger) (*Node, error) {
	n := newNode(cl, secret, log)
	// The topology may have been published before the subscription: start from the current one.
	if ms := cl.MemberList.Members(); ms != nil && ms.Len() > 0 {
		n.mu.Lock()
		if n.members == nil {
			n.members = make(map[string]bool, ms.Len())
			for _, m := range ms.Members() {
				n.members[m.Address()] = true
			}
		}
		n.mu.Unlock()
	}
	if err := n.start(); err != nil {
		return nil, err
	}
	return n, nil
}

// newNode returns a Node of cl following cl's events.
func newNode(cl *pcluster.Cluster, secret []byte, log *zap.Logger) *Node {
	n := &Node{
		log:    log.Named("cluster"),
		system: cl.ActorSystem,
		cl:     cl,
		key:    sessionKey(secret),
		dead:   make(map[string]time.Time),
		hold:   learnHold,
	}
	n.ids = newIDKeys(n.key)
	n.changed = time.Now()
	n.sub = cl.ActorSystem.EventStream.Subscribe(n.onEvent)
	return n
}

// start takes the member's remote address and spawns its tunnel actor, once remote runs.
func (n *Node) start() error {
	addr := n.system.Address()
	if addr == "" || addr == "nonhost" {
		n.system.EventStream.Unsubscribe(n.sub)
		return errors.New("cluster: the actor system has no remote address (start the cluster member first)")
	}
	home, err := n.ids.sealHome(addr)
	if err != nil {
		n.system.EventStream.Unsubscribe(n.sub)
		return err
	}
	n.mu.Lock()
	n.addr, n.home = addr, home // under mu: onEvent reads addr as the first topologies arrive
	n.seenLocked(addr)
	n.mu.Unlock()
	tunnel, err := n.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &tunnelActor{node: n} }), tunnelName)
	if err != nil {
		n.system.EventStream.Unsubscribe(n.sub)
		return fmt.Errorf("cluster: spawn tunnel: %w", err)
	}
	n.tunnel = tunnel
	n.log.Info("member started", zap.String("address", addr))
	return nil
}

// System returns the actor system the member runs on; give it to toolgrain.Config.ActorSystem
// (toolgrain.NewServer does so when Config.Cluster is set and ActorSystem is nil).
func (n *Node) System() *actor.ActorSystem { return n.system }

// Address returns this member's remote address.
func (n *Node) Address() string { return n.addr }

// newSessionID mints a session id homed on this member; it is what the server's Streamable HTTP
// transport uses for new legacy sessions. The id names this member by its address sealed with
// a key derived from the cluster secret, which no client can read.
func (n *Node) newSessionID() string { return n.ids.mint(n.home) }

// sessionHome returns the address of the member a session id names, and false for an id this cluster
// did not mint (forged, altered, of an earlier form, or from another cluster). It needs no
// knowledge of the topology: a member that has not seen the home yet resolves it too.
func (n *Node) sessionHome(sid string) (string, bool) { return n.ids.homeOf(sid) }

// Members returns the addresses of the members in the last topology, this one included.
func (n *Node) Members() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.members))
	for a := range n.members {
		out = append(out, a)
	}
	return out
}

// Stats are a member's cluster counters.
type Stats struct {
	// Members is the size of the last topology.
	Members int
	// Forwarded counts the requests this member forwarded to their session's home.
	Forwarded int64
	// Served counts the forwarded requests this member served as the home.
	Served int64
	// Streams is the number of live stream actors: requests this member is forwarding now.
	Streams int64
	// Homes is the number of live home actors: forwarded requests this member serves now.
	Homes int64
	// ForwardMean is the mean time from receiving a forwarded request to the start of the
	// home's answer, over the forwards whose answer began: the cost of the hop plus the home's
	// time to the first byte (a call's run, for a JSON answer).
	ForwardMean time.Duration
}

// Stats returns the member's counters.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	m := len(n.members)
	n.mu.Unlock()
	st := Stats{Members: m, Forwarded: n.stats.forwarded.Load(), Served: n.stats.served.Load(),
		Streams: n.stats.streams.Load(), Homes: n.stats.homes.Load()}
	if h := n.stats.headed.Load(); h > 0 {
		st.ForwardMean = time.Duration(n.stats.headNanos.Load() / h)
	}
	return st
}

// setDeliver sets the function that tells this member's clients of a list change or resource
// update made on another member (the engine's Deliver); toolgrain.NewServer calls it.
func (n *Node) setDeliver(fn func(method, uri string)) { n.deliver.Store(&fn) }

// relay tells every other member of a list change or resource update made on this one (the
// engine's Config.Relay). It never blocks; members that join later are not told.
//
// It sends to each member's "eventstream" actor, as MemberList.BroadcastEvent does, but over
// this Node's own copy of the topology: BroadcastEvent reads the member list without its lock
// at the pinned protoactor-go version (a data race with every topology update).
func (n *Node) relay(method, uri string) {
	msg := &wire.Envelope{Kind: wire.Kind_KIND_NOTIFY, Text: method, Uri: uri}
	for _, a := range n.others() {
		n.system.Root.Send(actor.NewPID(a, "eventstream"), msg)
	}
}

// alive reports whether the member at addr can serve: it is in the member list (or none was
// seen yet) and its remote connection has not terminated since it joined.
func (n *Node) alive(addr string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.unreachable(addr) && n.listedLocked(addr)
}

// listed reports whether the member at addr is in the member list (or none was seen yet).
func (n *Node) listed(addr string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.listedLocked(addr)
}

// listedLocked is listed with n.mu held.
func (n *Node) listedLocked(addr string) bool { return n.members == nil || n.members[addr] }

// gone reports whether the member at addr is known to be gone: its remote connection
// terminated within deadHold, or it was in an earlier topology and has left the last one. A
// member this one has never seen is not gone: it may have joined a moment ago, and its
// topology event be on its way.
func (n *Node) gone(addr string) bool {
	ref := taskHome(n.key, addr)
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.unreachable(addr) || !n.listedLocked(addr) && n.taskHomes[ref] == addr
}

// markDead takes addr for gone for deadHold, as when its remote connection terminates.
func (n *Node) markDead(addr string) {
	n.mu.Lock()
	n.dead[addr] = time.Now()
	n.mu.Unlock()
}

// deadHold is how long a member whose remote connection terminated is taken for gone while it
// is still in the member list. A dead member leaves the list within that time (the provider's
// poll and timeout); one that stays in it had a passing fault, and is tried again.
const deadHold = 5 * time.Second

// unreachable reports whether addr's remote connection terminated within deadHold. n.mu is held.
func (n *Node) unreachable(addr string) bool {
	at, ok := n.dead[addr]
	return ok && time.Since(at) < deadHold
}

// onEvent follows the topology and terminated endpoints, and takes other members' notifications.
// It runs on the publisher's goroutine and never blocks.
func (n *Node) onEvent(ev any) {
	switch e := ev.(type) {
	case *pcluster.ClusterTopology:
		n.mu.Lock()
		members := make(map[string]bool, len(e.Members))
		for _, m := range e.Members {
			members[m.Address()] = true
			n.seenLocked(m.Address())
		}
		if !sameSet(members, n.members) {
			n.changed = time.Now()
		}
		n.members = members
		var joined []string
		for _, m := range e.Joined {
			delete(n.dead, m.Address())
			if m.Address() != n.addr {
				joined = append(joined, m.Address())
			}
		}
		n.mu.Unlock()
		// The address is this member's own (the system's: n.addr is not set yet when the first
		// topology comes, during StartMember), so that one member's view can be told from
		// another's in a shared log.
		n.log.Info("topology", zap.Int("members", len(e.Members)), zap.Int("joined", len(e.Joined)), zap.Int("left", len(e.Left)),
			zap.String("address", n.system.Address()))
		n.sendTagState(joined)
	case *remote.EndpointTerminatedEvent:
		// This member's own address is never looked up: its sessions are served locally.
		n.mu.Lock()
		n.dead[e.Address] = time.Now()
		n.mu.Unlock()
		n.log.Info("member unreachable", zap.String("address", e.Address))
	case *remote.EndpointConnectedEvent:
		n.mu.Lock()
		delete(n.dead, e.Address)
		n.mu.Unlock()
	case *wire.Envelope:
		switch e.Kind {
		case wire.Kind_KIND_NOTIFY:
			if fn := n.deliver.Load(); fn != nil {
				(*fn)(e.Text, e.Uri)
			}
		case wire.Kind_KIND_TAGS:
			n.receiveTags(e.Body)
		}
	}
}

// Close stops serving forwarded requests and waits for those in progress to end (their
// contexts are cancelled), then, for a member made by [Start], leaves the cluster and shuts its
// actor system down. Call it after the server's Shutdown.
func (n *Node) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	n.mu.Unlock()
	n.system.EventStream.Unsubscribe(n.sub)
	_ = n.system.Root.StopFuture(n.tunnel).Wait()
	n.homes.Wait()
	n.tel.Load().close()
	if n.own {
		n.cl.Shutdown(true)
	}
}

// sameSet reports whether a and b hold the same addresses.
func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
