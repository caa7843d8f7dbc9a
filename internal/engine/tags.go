package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgrain/toolgrain/internal/principal"
	"github.com/toolgrain/toolgrain/internal/tags"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// The state of the tags: which are disabled for everyone, and which a principal (a user, or a
// client acting on its own behalf: internal/principal) has enabled or disabled for itself, which
// wins over the setting for everyone. It changes at run time ([Engine.SetTags]) and is the same
// on every member of a cluster: each setting of a tag (for everyone, or for one principal) is an
// entry stamped with a Lamport clock and the member that made
// it, and the entry with the greater stamp wins, whatever order members learn of them in (a
// last-writer-wins map). Members send each other the entries they change, and their whole state
// to a member that joins (Config.TagSync).

// TagSetting is what [Engine.SetTags] does to a tag.
type TagSetting int8

// The settings of a tag.
const (
	// TagInherit drops a principal's own setting of the tag, so that the setting for everyone
	// applies to it again; for everyone it is TagEnabled.
	TagInherit TagSetting = 0
	// TagEnabled makes the components with the tag visible again (as far as the rules allow).
	TagEnabled TagSetting = 1
	// TagDisabled makes the components with the tag invisible.
	TagDisabled TagSetting = -1
)

// tagEntry is one setting of a tag, for everyone (Subject "") or for one principal (Subject its
// key, principal.Key).
type tagEntry struct {
	Subject string     `json:"s,omitempty"`
	Tag     string     `json:"t"`
	Setting TagSetting `json:"v"`
	Clock   uint64     `json:"c"`
	Origin  string     `json:"o,omitempty"`
}

type tagKey struct{ subject, tag string }

// newer reports whether e wins over o: a greater clock, or the same clock and a greater origin.
func (e *tagEntry) newer(o *tagEntry) bool {
	return e.Clock > o.Clock || e.Clock == o.Clock && e.Origin > o.Origin
}

// tagState is one version of the state of the tags. It is immutable.
type tagState struct {
	entries map[tagKey]tagEntry
	clock   uint64 // the greatest clock of any entry seen

	// What the entries say: the tags disabled for everyone, the own settings (tag → disabled)
	// of each user and each client by its subject, and whether any tag is disabled for anyone.
	off     map[string]bool
	users   map[string]map[string]bool
	clients map[string]map[string]bool
	anyOff  bool
}

// initialTags is the state of a server whose tags disabled at start are disabled.
func initialTags(disabled []string) *tagState {
	entries := make(map[tagKey]tagEntry, len(disabled))
	for _, t := range disabled {
		entries[tagKey{tag: t}] = tagEntry{Tag: t, Setting: TagDisabled}
	}
	return newTagState(entries, 0)
}

func newTagState(entries map[tagKey]tagEntry, clock uint64) *tagState {
	s := &tagState{entries: entries, clock: clock, off: make(map[string]bool),
		users: make(map[string]map[string]bool), clients: make(map[string]map[string]bool)}
	for k, e := range entries {
		switch {
		case k.subject == "":
			if e.Setting == TagDisabled {
				s.off[k.tag] = true
				s.anyOff = true
			}
		case e.Setting != TagInherit:
			subject, client, _ := principal.Parse(k.subject) // checked as the entry came in
			own := s.users
			if client {
				own = s.clients
			}
			m := own[subject]
			if m == nil {
				m = make(map[string]bool)
				own[subject] = m
			}
			m[k.tag] = e.Setting == TagDisabled
			s.anyOff = s.anyOff || e.Setting == TagDisabled
		}
	}
	return s
}

// own returns the settings of id's principal of its own (tag → disabled) and whether it is a
// client's; nil when it has none. Only an identity whose subject has settings is asked whether
// it is a client.
func (s *tagState) own(id *tools.Identity) (own map[string]bool, client bool) {
	if id == nil || id.Subject == "" {
		return nil, false
	}
	u, c := s.users[id.Subject], s.clients[id.Subject]
	if u == nil && c == nil {
		return nil, false
	}
	if principal.IsClient(id) {
		return c, true
	}
	return u, false
}

// disabled reports whether one of list is disabled for id: by the own setting of its principal,
// or else by the setting for everyone.
func (s *tagState) disabled(id *tools.Identity, list []string) bool {
	own, _ := s.own(id)
	for _, t := range list {
		if off, ok := own[t]; ok {
			if off {
				return true
			}
			continue
		}
		if s.off[t] {
			return true
		}
	}
	return false
}

// with returns the state with entries merged in, and whether anything changed.
func (s *tagState) with(entries []tagEntry) (*tagState, bool) {
	var next map[tagKey]tagEntry
	clock := s.clock
	for i := range entries {
		e := &entries[i]
		clock = max(clock, e.Clock)
		k := tagKey{subject: e.Subject, tag: e.Tag}
		if cur, ok := s.entries[k]; ok && !e.newer(&cur) {
			continue
		}
		if cur, ok := next[k]; ok && !e.newer(&cur) {
			continue
		}
		if next == nil {
			next = make(map[tagKey]tagEntry, len(s.entries)+len(entries))
			for k, v := range s.entries {
				next[k] = v
			}
		}
		next[k] = *e
	}
	if next == nil {
		if clock == s.clock {
			return s, false
		}
		return &tagState{entries: s.entries, clock: clock, off: s.off, users: s.users, clients: s.clients, anyOff: s.anyOff}, false
	}
	return newTagState(next, clock), true
}

// all returns every entry, sorted.
func (s *tagState) all() []tagEntry {
	out := make([]tagEntry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b tagEntry) int {
		if c := strings.Compare(a.Subject, b.Subject); c != 0 {
			return c
		}
		return strings.Compare(a.Tag, b.Tag)
	})
	return out
}

// TagSync is how the engines of a cluster's members keep one state of the tags.
type TagSync struct {
	// Origin names this engine in the entries it makes (a member's address); it breaks ties
	// between entries made at once on two members, so it must differ between members.
	Origin string
	// Relay, when set, is called with the entries of every change made on this engine
	// ([Engine.SetTags]), encoded, after its own clients were told, for the other members to
	// merge with [Engine.MergeTags]. It must not block.
	Relay func(entries []byte)
}

// SetTags sets the tags to setting, for everyone (who "") or for the callers of one principal,
// who being its key (principal.Key: principal.User of a user's subject, principal.Client of a
// client's id), and sends notifications/{tools,resources,prompts}/list_changed to exactly
// the connections and listen streams whose view of that list changed. An empty tag list does
// nothing. Each tag must be a tag (1 to 64 characters from A-Za-z0-9_.-).
func (e *Engine) SetTags(who string, setting TagSetting, list ...string) error {
	if err := tags.CheckAll(list); err != nil {
		return fmt.Errorf("actors: %w", err)
	}
	if _, _, ok := principal.Parse(who); who != "" && !ok {
		return fmt.Errorf("actors: %q is not the key of a principal", who)
	}
	switch setting {
	case TagInherit, TagEnabled, TagDisabled:
	default:
		return fmt.Errorf("actors: invalid tag setting %d", setting)
	}
	if len(list) == 0 {
		return nil
	}
	if who == "" && setting == TagInherit {
		setting = TagEnabled
	}
	e.vis.mu.Lock()
	cur := e.vis.tags.Load()
	clock := cur.clock + 1
	entries := make([]tagEntry, 0, len(list))
	for _, t := range list {
		entries = append(entries, tagEntry{Subject: who, Tag: t, Setting: setting, Clock: clock, Origin: e.cfg.TagSync.Origin})
	}
	next, _ := cur.with(entries)
	old, nw := e.switchTagsLocked(next)
	e.vis.mu.Unlock()
	e.notifyViewChanges(old, nw)
	if relay := e.cfg.TagSync.Relay; relay != nil {
		if b, err := json.Marshal(entries); err == nil {
			relay(b)
		}
	}
	return nil
}

// TagState returns the whole state of the tags, encoded as [Engine.MergeTags] reads it: what a
// member sends one that joins.
func (e *Engine) TagState() []byte {
	b, _ := json.Marshal(e.vis.tags.Load().all())
	return b
}

// MergeTags merges entries another member's engine made ([TagSync].Relay, [Engine.TagState]) into
// this engine's state, and tells this engine's connections and listen streams whose view changed,
// as [Engine.SetTags] does. It relays nothing. Entries older than this engine's own are ignored,
// so that members converge whatever order the entries arrive in.
func (e *Engine) MergeTags(entries []byte) error {
	var list []tagEntry
	if err := json.Unmarshal(entries, &list); err != nil {
		return fmt.Errorf("actors: tag entries: %w", err)
	}
	for _, en := range list {
		_, _, isKey := principal.Parse(en.Subject)
		if tags.Check(en.Tag) != "" || en.Setting < TagDisabled || en.Setting > TagEnabled || en.Subject != "" && !isKey {
			return errors.New("actors: tag entries: invalid entry")
		}
	}
	e.vis.mu.Lock()
	next, changed := e.vis.tags.Load().with(list)
	if !changed {
		if next != e.vis.tags.Load() {
			e.vis.tags.Store(next) // a greater clock only
		}
		e.vis.mu.Unlock()
		return nil
	}
	old, nw := e.switchTagsLocked(next)
	e.vis.mu.Unlock()
	e.notifyViewChanges(old, nw)
	return nil
}

// switchTagsLocked makes next the state of the tags, and returns the indexes before and after,
// of the same components, for notifyViewChanges, which the caller runs once it has released
// e.vis.mu (telling a passive connection takes its lock, under which an index may be built).
// e.vis.mu is held.
func (e *Engine) switchTagsLocked(next *tagState) (old, nw *visIndex) {
	old = e.currentIndexLocked()
	nw = e.buildIndex(old.tools, old.res, old.prm, next)
	e.vis.tags.Store(next)
	e.vis.index.Store(nw)
	return old, nw
}

// listKinds are the lists a change of visibility can change, in the order of viewChange's bits.
var listKinds = [...]string{protocol.MethodToolsListChanged, protocol.MethodResourcesListChanged, protocol.MethodPromptsListChanged}

// viewChange says which lists of a viewer differ between two indexes: bit i for listKinds[i].
type viewChange uint8

// viewChanges compares the views of viewers under two indexes of the same components, once per
// pair of views (viewers with the same keys share them).
type viewChanges struct {
	old, nw *visIndex
	memo    map[[2]*views]viewChange
}

func (d *viewChanges) of(v *viewer) viewChange {
	if d.old.open(v) && d.nw.open(v) {
		return 0
	}
	a, b := d.old.viewsOrAll(v), d.nw.viewsOrAll(v)
	if ch, ok := d.memo[[2]*views{a, b}]; ok {
		return ch
	}
	var ch viewChange
	if !slices.Equal(a.tools, b.tools) {
		ch |= 1
	}
	if !slices.Equal(a.resources, b.resources) || !slices.Equal(a.templates, b.templates) {
		ch |= 2
	}
	if !slices.Equal(a.prompts, b.prompts) {
		ch |= 4
	}
	d.memo[[2]*views{a, b}] = ch
	return ch
}

// viewsOrAll returns v's views, or every component when nothing narrows v's view: the lists of
// the index's snapshots, made once for every request that lists them. Neither may be modified.
func (x *visIndex) viewsOrAll(v *viewer) *views {
	if !x.open(v) {
		return x.viewsFor(v)
	}
	x.allOnce.Do(func() {
		x.all = &views{tools: x.tools.set.List(), resources: x.res.Resources(), templates: x.res.Templates(), prompts: x.prm.List()}
	})
	return x.all
}

// notifyViewChanges sends list_changed to every connection and listen stream whose view of the
// list differs between old and nw.
func (e *Engine) notifyViewChanges(old, nw *visIndex) {
	d := &viewChanges{old: old, nw: nw, memo: make(map[[2]*views]viewChange)}
	var frames [len(listKinds)]*listChanged
	for i, m := range listKinds {
		frames[i] = &listChanged{method: m}
		frames[i].frame = frames[i].encoded()
	}
	e.mu.Lock()
	conns := make([]*Connection, 0, len(e.conns))
	for c := range e.conns {
		if !c.stateless {
			conns = append(conns, c)
		}
	}
	e.mu.Unlock()
	for _, c := range conns {
		v := c.viewer.Load()
		if v == nil {
			v = &viewer{}
		}
		ch := d.of(v)
		for i := range listKinds {
			if ch&(1<<i) != 0 {
				c.broadcast(frames[i])
			}
		}
	}
	var ls []*listener
	e.listeners.each(func(l *listener) { ls = append(ls, l) })
	for _, l := range ls {
		ch := d.of(&l.viewer)
		for i, m := range listKinds {
			if ch&(1<<i) != 0 && l.wants(m, "") {
				l.notify(m, "")
			}
		}
	}
}
