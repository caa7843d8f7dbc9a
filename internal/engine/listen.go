package engine

import (
	"context"
	"encoding/json"
	"net/url"
	"sync"

	"github.com/toolgrain/toolgrain/cancel"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
	"github.com/toolgrain/toolgrain/tools"
)

// subscriptions/listen (MCP 2026-07-28) replaces the legacy GET stream and resources/subscribe:
// a request that stays open and carries the notifications its filter asks for, each tagged with
// the request's id. Listeners live in one registry per engine, so a list change or a resource
// update reaches every open listen stream, whichever connection or request caused it.

// MaxListenSubscriptions bounds the resource URIs one listen request may subscribe to.
const MaxListenSubscriptions = MaxSubscriptions

// listener is one open listen stream. It has no actor: notifications are queued on its stream
// under its call's lock, so none follows the call's end.
type listener struct {
	id     protocol.ID
	filter protocol.ListenFilter
	uris   map[string]struct{}
	call   *cancel.Call
	stream Stream
	meta   json.RawMessage // {"io.modelcontextprotocol/subscriptionId": id}
	// who is the listen request's caller: only its own tasks' changes are sent
	// (notifications/tasks), for the task ids of the filter.
	who asker
	// viewer is its caller and toolsets: a change of the tags is told to it when its view of a
	// list changed, and only then (tags.go).
	viewer viewer
}

// listeners is the engine's registry of open listen streams.
type listeners struct {
	mu     sync.Mutex
	set    map[*listener]struct{}
	byTask map[string]map[*listener]struct{} // the listeners that follow a task, by task id
}

func (ls *listeners) init() {
	ls.set = make(map[*listener]struct{})
	ls.byTask = make(map[string]map[*listener]struct{})
}

// open sends l's acknowledgement and enters l in the registry under one lock: no change can
// reach l before its acknowledgement, and none made after the acknowledgement is missed.
func (ls *listeners) open(l *listener, ack []byte) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l.call.Notify(func() { l.stream.Send(ack) })
	ls.set[l] = struct{}{}
	for _, id := range l.filter.TaskIDs {
		if ls.byTask[id] == nil {
			ls.byTask[id] = make(map[*listener]struct{})
		}
		ls.byTask[id][l] = struct{}{}
	}
}

func (ls *listeners) remove(l *listener) {
	ls.mu.Lock()
	delete(ls.set, l)
	ls.forgetTasks(l)
	ls.mu.Unlock()
}

// forgetTasks removes l from the task index; under mu.
func (ls *listeners) forgetTasks(l *listener) {
	for _, id := range l.filter.TaskIDs {
		if set := ls.byTask[id]; set != nil {
			delete(set, l)
			if len(set) == 0 {
				delete(ls.byTask, id)
			}
		}
	}
}

// following returns the listeners that follow the task of rec and have it.
func (ls *listeners) following(e *Engine, rec *taskstore.Record) []*listener {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var out []*listener
	for l := range ls.byTask[rec.ID] {
		if l.who.has(e, rec.Owner, rec.Tool) {
			out = append(out, l)
		}
	}
	return out
}

// each calls fn for every open listener, under the registry's lock: fn must not block.
func (ls *listeners) each(fn func(*listener)) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for l := range ls.set {
		fn(l)
	}
}

// Len returns the number of open listen streams.
func (ls *listeners) Len() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.set)
}

// wants reports whether l's filter asks for the notification method (about uri, for a resource
// update).
func (l *listener) wants(method, uri string) bool {
	switch method {
	case protocol.MethodToolsListChanged:
		return l.filter.ToolsListChanged
	case protocol.MethodPromptsListChanged:
		return l.filter.PromptsListChanged
	case protocol.MethodResourcesListChanged:
		return l.filter.ResourcesListChanged
	case protocol.MethodResourcesUpdated:
		_, ok := l.uris[uri]
		return ok
	}
	return false
}

// notify sends the notification method (with the resource's uri, for an update) on l's stream,
// tagged with its subscription id, while the listen request is open.
func (l *listener) notify(method, uri string) {
	var params any = struct {
		Meta json.RawMessage `json:"_meta"`
	}{l.meta}
	if method == protocol.MethodResourcesUpdated {
		params = struct {
			Meta json.RawMessage `json:"_meta"`
			URI  string          `json:"uri"`
		}{l.meta, uri}
	}
	frame, err := protocol.EncodeNotification(method, params)
	if err != nil {
		return
	}
	l.call.Notify(func() { l.stream.Send(frame) })
}

// notifyListeners sends a list change, or an update of the resource uri, to every listen stream
// that asked for it (an update only to those that see what serves the resource).
func (e *Engine) notifyListeners(method, uri string) {
	x := e.visIndex() // before the listeners' lock: building an index takes e.vis.mu
	e.listeners.each(func(l *listener) {
		if l.wants(method, uri) && (method != protocol.MethodResourcesUpdated || x.updateVisible(uri, &l.viewer)) {
			l.notify(method, uri)
		}
	})
}

// listen opens a listen stream for m: its filter, cut down to what the server offers, is
// acknowledged first (notifications/subscriptions/acknowledged), and the stream then stays open
// until the client ends it (notifications/cancelled over stdio, closing the stream over HTTP),
// its connection closes, or the server shuts down or its connection's input ends, either of
// which answers it with an empty result.
func (c *connectionActor) listen(m *protocol.Message, s Stream, caller *tools.Identity) {
	var p protocol.ListenParams
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Notifications == nil {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("subscriptions/listen needs params with a notifications object")))
		return
	}
	if c.idBusy(m, s) {
		return
	}
	f := *p.Notifications
	if werr := c.listenTasks(&f); werr != nil {
		reply(s, protocol.EncodeError(m.ID, werr))
		return
	}
	if len(f.ResourceSubscriptions) > MaxListenSubscriptions {
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("too many resource subscriptions (the limit is %d per listen request)", MaxListenSubscriptions)))
		return
	}
	uris := make(map[string]struct{}, len(f.ResourceSubscriptions))
	for _, u := range f.ResourceSubscriptions {
		if pu, err := url.Parse(u); err != nil || pu.Scheme == "" {
			reply(s, protocol.EncodeError(m.ID, protocol.ErrInvalidParams("resourceSubscriptions: %q is not an absolute URI", u)))
			return
		}
		uris[u] = struct{}{}
	}
	// Every notification type is offered (serverCapabilities): the filter is honoured whole.
	l := &listener{id: m.ID, filter: f, uris: uris, call: cancel.New(context.Background()), stream: s,
		meta: protocol.SubscriptionMeta(m.ID), who: asker{owner: ownerKey(caller), caller: caller},
		viewer: viewer{id: caller, toolsets: c.toolsets}}
	ack, err := protocol.EncodeNotification(protocol.MethodSubscriptionsAcknowledged, &protocol.ListenAcknowledgedParams{Meta: l.meta, Notifications: f})
	if err != nil {
		c.eng.Report(err)
		reply(s, protocol.EncodeError(m.ID, protocol.ErrInternal()))
		return
	}
	fl := &flight{call: l.call, listener: l}
	c.track(m, s, fl)
	c.eng.listeners.open(l, ack)
}

// endListeners answers every open listen stream with the result that ends it gracefully, and
// forgets them: the server is shutting down.
func (e *Engine) endListeners() {
	e.listeners.mu.Lock()
	all := make([]*listener, 0, len(e.listeners.set))
	for l := range e.listeners.set {
		all = append(all, l)
	}
	clear(e.listeners.set)
	clear(e.listeners.byTask)
	e.listeners.mu.Unlock()
	for _, l := range all {
		e.answerListener(l)
	}
}

// endListener ends one listen stream gracefully, as endListeners does: its connection's input
// ended, so nothing can end it later.
func (e *Engine) endListener(l *listener) {
	e.listeners.remove(l)
	e.answerListener(l)
}

// answerListener answers l with the empty result that ends a listen stream, unless it was
// cancelled, and closes its stream.
func (e *Engine) answerListener(l *listener) {
	frame, err := protocol.EncodeResultWith(l.id, json.RawMessage(`{"_meta":`+string(l.meta)+`}`), &protocol.Annotation{Meta: e.serverMeta})
	if err == nil {
		l.call.Respond(func() { l.stream.Send(frame) })
	}
	l.stream.Close()
}
