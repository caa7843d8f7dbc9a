package toolgrain

import (
	"errors"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/principal"
)

// Tags enabled and disabled while the server runs (docs/visibility.md). A component with a tag
// that is disabled for a caller is invisible to it, as by a rule (Config.Visibility): lists
// leave it out and a call, read or get of it is answered as one of a component nobody serves. An
// identity's own setting of a tag wins over the setting for everyone; enabling a tag never shows
// what a rule hides. Each change sends notifications/tools/list_changed (and resources/...,
// prompts/...) exactly to the connections (stdio, in memory, legacy HTTP sessions) and
// subscriptions/listen streams whose view of that list changed, and to no other; a connection's
// view is that of its latest request. With Config.Cluster the change reaches every member,
// those that join later included, and each tells its own clients.
//
// An identity's own settings are those of its principal, the one its sessions and tasks are
// bound to: a user, named by its Subject (the ...For methods), or a client acting on its own
// behalf, named by its client id (the ...ForClient methods). An identity is a client's when its
// client_id claim (Identity.Claim) is its Subject, as in a token of the client credentials grant;
// every other identity, those whose verifier gives no claims included, is a user's. The user
// alice and the client alice are two identities: a setting for one is not the other's.

// DisableTags disables the tags for everyone but the identities that enabled them for
// themselves (EnableTagsFor, EnableTagsForClient). An empty list does nothing; a tag must be 1
// to 64 characters from A-Za-z0-9_.- .
func (s *Server) DisableTags(tags ...string) error {
	return s.eng.SetTags("", engine.TagDisabled, tags...)
}

// EnableTags enables the tags for everyone but the identities that disabled them for themselves
// (DisableTagsFor, DisableTagsForClient); Config.Visibility.Disabled are enabled so too.
func (s *Server) EnableTags(tags ...string) error {
	return s.eng.SetTags("", engine.TagEnabled, tags...)
}

// DisableTagsFor disables the tags for the user whose Subject is subject, whatever they are for
// everyone. It does not touch a client whose id is subject (DisableTagsForClient).
func (s *Server) DisableTagsFor(subject string, tags ...string) error {
	return s.setFor(subject, false, engine.TagDisabled, tags)
}

// EnableTagsFor enables the tags for the user whose Subject is subject, whatever they are for
// everyone (the rules still apply).
func (s *Server) EnableTagsFor(subject string, tags ...string) error {
	return s.setFor(subject, false, engine.TagEnabled, tags)
}

// ResetTagsFor drops the own settings of the tags of the user whose Subject is subject: the
// settings for everyone apply to it again.
func (s *Server) ResetTagsFor(subject string, tags ...string) error {
	return s.setFor(subject, false, engine.TagInherit, tags)
}

// DisableTagsForClient disables the tags for the client whose id is clientID when it acts on
// its own behalf (its identity's client_id claim is its Subject), whatever they are for
// everyone. The users who sign in through that client keep their own settings.
func (s *Server) DisableTagsForClient(clientID string, tags ...string) error {
	return s.setFor(clientID, true, engine.TagDisabled, tags)
}

// EnableTagsForClient enables the tags for the client whose id is clientID, as
// DisableTagsForClient disables them (the rules still apply).
func (s *Server) EnableTagsForClient(clientID string, tags ...string) error {
	return s.setFor(clientID, true, engine.TagEnabled, tags)
}

// ResetTagsForClient drops the own settings of the tags of the client whose id is clientID.
func (s *Server) ResetTagsForClient(clientID string, tags ...string) error {
	return s.setFor(clientID, true, engine.TagInherit, tags)
}

// setFor sets the tags for one principal.
func (s *Server) setFor(subject string, client bool, setting engine.TagSetting, tags []string) error {
	if subject == "" {
		return errNoSubject
	}
	key := principal.User(subject)
	if client {
		key = principal.Client(subject)
	}
	return s.eng.SetTags(key, setting, tags...)
}

var errNoSubject = errors.New("toolgrain: a subject or client id is required (the tags of everyone are changed with EnableTags and DisableTags)")
