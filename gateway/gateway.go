// Package gateway mounts other MCP servers behind a toolgrain server: their tools, resources,
// resource templates, prompts and completions are served beside the server's own, each under a
// prefix, with the server's error model, cancellation, limits, middleware and telemetry.
//
// A mounted server (an upstream) is reached over stdio (a command the gateway starts and
// supervises: [Stdio]), in the same process ([InProcess]), or over HTTP ([HTTP], Streamable
// HTTP or the old HTTP+SSE transport). Each upstream's connection is an actor under the
// server's supervision, which opens it, speaks either era of the protocol (an initialize
// session up to 2025-11-25, or stateless 2026-07-28 requests), lists the upstream's components
// and lists them again when the upstream announces a change, and restarts the connection with
// a backoff when it is lost. An upstream that cannot be reached does not stop the server: its
// components are absent until it answers, and [Gateway.Ready] and the logs say so.
//
// A mounted tool is a tool of the server: its arguments are validated against the upstream's
// input schema before anything is sent (the same feedback as for a local tool), its calls go
// through the server's middleware, per-tool scopes and limits, and its handler forwards the call
// to the upstream's actor. What the upstream answers reaches the client as the server's error
// model says:
//
//   - a result, including one with isError (the upstream author's public choice), passes
//     unchanged;
//   - a JSON-RPC error from the upstream, a lost connection or an upstream process that died,
//     a timeout, an upstream that cannot be reached, or a result that breaks the tool's
//     declared output schema is an unexpected failure: the client gets "Tool execution
//     failed", and OnError the original error, which names the upstream and the upstream's
//     tool;
//   - a call the client cancels is cancelled upstream too (notifications/cancelled, or its
//     stream closed), and nothing the upstream sends for it afterwards reaches anyone.
//
// Mounted components have tags (Mount.Tags on all of an upstream's, ToolTransform.Tags on one
// tool, and those the upstream lists in a component's _meta under "io.github.toolgrain/tags"),
// and the server's visibility rules, toolsets and tags changed at run time (package visibility)
// apply to them as to its own: one a caller cannot see answers as one nobody serves.
//
// Progress notifications and log messages of a call, and the upstream's requests to the client
// (sampling, elicitation, roots), go to the client whose call caused them, in either era; a
// request the client cannot answer (it did not declare the capability) is refused to the
// upstream with an error that says so.
//
// The client's credentials are never passed to an upstream: each upstream has its own (headers,
// or OAuth client credentials against its authorization server; see [HTTP]).
//
// docs/gateway.md is the guide: mounting, the configuration file of the server binary
// (cmd/server --mount), transforms, credentials, and what a proxied call costs.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/enginehook"
	"github.com/toolgrain/toolgrain/internal/tags"
	"github.com/toolgrain/toolgrain/internal/upstream"
	"github.com/toolgrain/toolgrain/protocol"
)

// DefaultSeparator joins a mount's prefix and a tool's or prompt's name.
const DefaultSeparator = "_"

// Errors of [Gateway.Mount].
var (
	// ErrClosed is returned after [Gateway.Close].
	ErrClosed = errors.New("gateway: closed")
)

// Options configures a [Gateway].
type Options struct {
	// Logger is used as given; nil means the server's logger.
	Logger *zap.Logger
	// ToolScopes are OAuth scopes a call of a mounted tool needs, by the name the tool is
	// served under (as tools.Tool.Scopes), added to those of its mount's transform. Nil means
	// none.
	ToolScopes map[string][]string
}

// Gateway mounts upstream servers on one toolgrain server. Its methods are safe for concurrent
// use.
type Gateway struct {
	srv    enginehook.Server
	log    *zap.Logger
	scopes map[string][]string // Options.ToolScopes
	tel    *telemetry          // nil: none

	mu      sync.Mutex
	mounts  map[string]*mount
	order   []string
	closed  bool
	changed chan struct{} // closed at the next change; see changes
}

// New returns a gateway that mounts upstreams on srv.
func New(srv *toolgrain.Server, opts Options) (*Gateway, error) {
	h, ok := enginehook.Of(srv)
	if !ok {
		return nil, errors.New("gateway: nil server")
	}
	log := opts.Logger
	if log == nil {
		log = h.Logger
	}
	if log == nil {
		log = zap.NewNop()
	}
	g := &Gateway{srv: h, log: log.Named("gateway"), mounts: map[string]*mount{}, scopes: opts.ToolScopes}
	tel, err := newTelemetry(g)
	if err != nil {
		return nil, fmt.Errorf("gateway: telemetry: %w", err)
	}
	g.tel = tel
	return g, nil
}

// Mount describes one mounted upstream.
type Mount struct {
	// Name identifies the mount in logs, errors, diagnostics and readiness, and is its
	// default prefix. It is required, unique in the gateway, and made of A-Z, a-z, 0-9, '_',
	// '.' and '-'.
	Name string
	// Source is where the upstream is.
	Source Source
	// Prefix is put before the names of the upstream's tools and prompts, and into its
	// resources' URIs (see the package doc for the rules). Empty means Name, unless
	// NoPrefix.
	Prefix string
	// NoPrefix serves the upstream's components under their own names and URIs.
	NoPrefix bool
	// Separator joins the prefix and a name; empty means DefaultSeparator ("_").
	Separator string

	// Include, when not empty, serves only the upstream's tools whose name matches one of
	// its patterns (path.Match syntax: '*', '?', '[...]'); Exclude leaves out those that
	// match one of its. Both apply to the upstream's own names.
	Include, Exclude []string
	// Tools transforms tools, by the upstream's own name.
	Tools map[string]ToolTransform
	// Tags are put on every component of the upstream (its tools, resources, resource
	// templates and prompts), for the server's visibility rules, toolsets and tags changed at
	// run time (package visibility), beside a tool's own (ToolTransform.Tags) and those the
	// upstream declares in a component's _meta under "io.github.toolgrain/tags" (a toolgrain
	// upstream lists its own tags so). Each is 1 to 64 characters from A-Za-z0-9_.- .
	Tags []string

	// Timeout bounds each call to the upstream, from the moment it is made (waiting for a
	// connection or a free slot included); a call past it is an unexpected failure and is
	// cancelled upstream. 0 means no timeout beyond the server's ToolTimeout.
	Timeout time.Duration
	// MaxCallsInFlight bounds the calls in flight on the upstream's connection; further calls
	// wait for a slot. 0 means 1024.
	MaxCallsInFlight int
	// Protocol chooses the era spoken to the upstream: "" or "auto" (2026-07-28 when it
	// answers server/discover, else an initialize session), "legacy" (initialize only) or
	// "modern" (2026-07-28 only).
	Protocol string
}

// Mount mounts an upstream. It checks m and starts connecting, without waiting: the
// upstream's components appear (with list_changed to every client) once it has answered. A
// bad m is an error naming what is wrong; so is a name already mounted.
func (g *Gateway) Mount(m Mount) error {
	g.mu.Lock()
	_, dup := g.mounts[m.Name]
	g.mu.Unlock()
	if dup {
		return fmt.Errorf("gateway: mount %q: already mounted", m.Name)
	}
	mt, err := g.prepare(m)
	if err != nil {
		return err
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	if _, dup := g.mounts[m.Name]; dup {
		g.mu.Unlock()
		mt.closeOwned()
		return fmt.Errorf("gateway: mount %q: already mounted", m.Name)
	}
	g.mounts[m.Name] = mt
	g.order = append(g.order, m.Name)
	g.mu.Unlock()
	if err := mt.start(); err != nil {
		g.mu.Lock()
		delete(g.mounts, m.Name)
		g.order = removeString(g.order, m.Name)
		g.mu.Unlock()
		mt.closeOwned()
		return fmt.Errorf("gateway: mount %q: %w", m.Name, err)
	}
	return nil
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}

// checked is what checkMount settles of a Mount.
type checked struct {
	prefix, sep, proto string
}

// checkMount checks m without starting anything.
func checkMount(m Mount) (checked, error) {
	if m.Name == "" {
		return checked{}, errors.New("empty name")
	}
	if err := checkNamePart("name", m.Name); err != nil {
		return checked{}, err
	}
	if m.Source == nil {
		return checked{}, errors.New("no source")
	}
	c := checked{prefix: m.Prefix, sep: m.Separator, proto: upstream.ProtocolAuto}
	if c.prefix == "" {
		c.prefix = m.Name
	}
	if m.NoPrefix {
		if m.Prefix != "" {
			return checked{}, errors.New("a prefix and no prefix")
		}
		c.prefix = ""
	}
	if err := checkNamePart("prefix", c.prefix); err != nil {
		return checked{}, err
	}
	if c.sep == "" {
		c.sep = DefaultSeparator
	}
	if err := checkNamePart("separator", c.sep); err != nil {
		return checked{}, err
	}
	if err := checkPatterns("include", m.Include); err != nil {
		return checked{}, err
	}
	if err := checkPatterns("exclude", m.Exclude); err != nil {
		return checked{}, err
	}
	if err := tags.CheckAll(m.Tags); err != nil {
		return checked{}, fmt.Errorf("tags: %w", err)
	}
	for name, t := range m.Tools {
		if err := checkTransform(name, t); err != nil {
			return checked{}, fmt.Errorf("tools: %w", err)
		}
	}
	if m.Timeout < 0 {
		return checked{}, errors.New("timeout: negative")
	}
	if m.MaxCallsInFlight < 0 {
		return checked{}, errors.New("max calls in flight: negative")
	}
	switch strings.ToLower(m.Protocol) {
	case "", "auto":
	case "legacy", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05":
		c.proto = upstream.ProtocolLegacy
	case "modern", protocol.LatestModernVersion:
		c.proto = upstream.ProtocolModern
	default:
		return checked{}, fmt.Errorf("protocol %q: want auto, legacy or modern", m.Protocol)
	}
	if err := m.Source.check(); err != nil {
		return checked{}, fmt.Errorf("%s source: %w", sourceKind(m.Source), err)
	}
	if h, ok := m.Source.(HTTP); ok {
		if sse, _ := h.kind(); sse {
			// The HTTP+SSE transport belongs to the initialize era.
			if c.proto == upstream.ProtocolModern {
				return checked{}, errors.New("protocol modern: the HTTP+SSE transport speaks the initialize era only")
			}
			c.proto = upstream.ProtocolLegacy
		}
	}
	return c, nil
}

// prepare checks m and builds its mount.
func (g *Gateway) prepare(m Mount) (*mount, error) {
	fail := func(err error) (*mount, error) { return nil, fmt.Errorf("gateway: mount %q: %w", m.Name, err) }
	c, err := checkMount(m)
	if err != nil {
		return fail(err)
	}
	var owned *toolgrain.Server
	if ip, ok := m.Source.(InProcess); ok && ip.Server == nil {
		// A tool set: a server of the gateway's own serves it, closed with the mount.
		srv, err := toolgrain.NewServer(toolgrain.Config{Name: m.Name, Tools: ip.Tools, Logger: g.log})
		if err != nil {
			return fail(fmt.Errorf("in-process source: %w", err))
		}
		owned, m.Source = srv, InProcess{Server: srv}
	}
	tr, err := m.Source.transport(g, m.Name)
	if err != nil {
		if owned != nil {
			_ = owned.Close()
		}
		return fail(fmt.Errorf("%s source: %w", sourceKind(m.Source), err))
	}
	mt := &mount{
		owned: owned,
		g:     g, name: m.Name, prefix: c.prefix, sep: c.sep,
		filter: filter{include: m.Include, exclude: m.Exclude}, transforms: m.Tools, tags: slices.Clone(m.Tags),
		timeout: m.Timeout, log: g.log.With(zap.String("upstream", m.Name)), netAttrs: networkAttrs(m.Source),
	}
	mt.cfg = upstream.Config{
		Name: m.Name, Transport: tr, Protocol: c.proto, MaxInFlight: m.MaxCallsInFlight,
		ClientInfo: protocol.Implementation{Name: g.srv.Name, Version: g.srv.Version},
		Logger:     g.log, Events: mt,
	}
	return mt, nil
}

// Close unmounts every upstream: their components are withdrawn (with list_changed to every
// client), their calls in flight fail, and their connections close (a stdio upstream's
// process is ended). It waits for all of it. Calling it again does nothing.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	mounts := make([]*mount, 0, len(g.order))
	for _, name := range g.order {
		mounts = append(mounts, g.mounts[name])
	}
	g.mu.Unlock()
	for _, m := range mounts {
		m.close()
	}
	g.tel.stop()
	return nil
}

// MountStatus is the state of one mount.
type MountStatus struct {
	// Name is the mount's name.
	Name string
	// State is "connecting" (never reached yet, or reconnecting after losing its connection),
	// "up", "down" (the last attempt failed; the next waits for the backoff) or "closed".
	State string
	// Err is why it is down, or why it was last lost; nil when it never failed.
	Err error
	// Since is when State began.
	Since time.Time
	// Listed says that its components are served.
	Listed bool
	// Tools, Resources, Templates and Prompts count the components served.
	Tools, Resources, Templates, Prompts int
	// ProtocolVersion is the protocol version spoken to it; empty when not up.
	ProtocolVersion string
	// Late counts what the upstream sent for calls already over (given up by the client,
	// timed out, or answered), all of it dropped.
	Late uint64
	// PID is the process of a stdio upstream while it runs; 0 otherwise.
	PID int
	// InFlight is the number of calls in flight on its connection.
	InFlight int
}

// Status returns the state of every mount, in the order they were mounted.
func (g *Gateway) Status() []MountStatus {
	g.mu.Lock()
	mounts := make([]*mount, 0, len(g.order))
	for _, name := range g.order {
		mounts = append(mounts, g.mounts[name])
	}
	g.mu.Unlock()
	out := make([]MountStatus, 0, len(mounts))
	for _, m := range mounts {
		out = append(out, m.status())
	}
	return out
}

// NotReadyError is the error of [Gateway.Ready]: the mounts whose components are not served.
type NotReadyError struct {
	// Mounts are the mounts not served, with their state.
	Mounts []MountStatus
}

// Error names each mount not served, its state and why.
func (e *NotReadyError) Error() string {
	parts := make([]string, 0, len(e.Mounts))
	for _, m := range e.Mounts {
		s := fmt.Sprintf("%s %s", m.Name, m.State)
		if m.Err != nil {
			s += ": " + m.Err.Error()
		}
		parts = append(parts, s)
	}
	return "gateway: upstreams not served: " + strings.Join(parts, "; ")
}

// Ready reports whether every mounted upstream's components are served: nil when they are, and
// a *NotReadyError naming the others (not reached yet, or unreachable) otherwise. It only reads
// state; it never blocks.
func (g *Gateway) Ready() error {
	var not []MountStatus
	for _, s := range g.Status() {
		if !s.Listed || s.State == string(upstream.StateDown) || s.State == string(upstream.StateClosed) {
			not = append(not, s)
		}
	}
	if len(not) == 0 {
		return nil
	}
	return &NotReadyError{Mounts: not}
}

// WaitReady waits until [Gateway.Ready] holds or ctx ends, and returns Ready's last error in
// the latter case. It is for tests and start-up scripts: a server serves its clients whether or
// not its upstreams are ready.
func (g *Gateway) WaitReady(ctx context.Context) error {
	for {
		changed := g.changes()
		err := g.Ready()
		if err == nil {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return err
		}
	}
}

// changes returns a channel closed at the next change of a mount's components or state.
func (g *Gateway) changes() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return g.changed
}

// changedNow closes the channel of [Gateway.changes].
func (g *Gateway) changedNow() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// engine is the server's engine.
func (g *Gateway) engine() *engine.Engine { return g.srv.Engine }
