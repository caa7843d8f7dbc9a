package toolgrain

import (
	"errors"

	"github.com/toolgrain/toolgrain/actors"
)

// Tags enabled and disabled while the server runs (docs/visibility.md). A component with a tag
// that is disabled for a caller is invisible to it, as by a rule (Config.Visibility): lists
// leave it out and a call, read or get of it is answered as one of a component nobody serves. A
// subject's own setting of a tag wins over the setting for everyone; enabling a tag never shows
// what a rule hides. Each change sends notifications/tools/list_changed (and resources/...,
// prompts/...) exactly to the connections (stdio, in memory, legacy HTTP sessions) and
// subscriptions/listen streams whose view of that list changed, and to no other; a connection's
// view is that of its latest request. With Config.Cluster the change reaches every member,
// those that join later included, and each tells its own clients.

// DisableTags disables the tags for everyone but the subjects that enabled them for themselves
// (EnableTagsFor). An empty list does nothing; a tag must be 1 to 64 characters from
// A-Za-z0-9_.- .
func (s *Server) DisableTags(tags ...string) error {
	return s.eng.SetTags("", actors.TagDisabled, tags...)
}

// EnableTags enables the tags for everyone but the subjects that disabled them for themselves
// (DisableTagsFor); Config.Visibility.Disabled are enabled so too.
func (s *Server) EnableTags(tags ...string) error {
	return s.eng.SetTags("", actors.TagEnabled, tags...)
}

// DisableTagsFor disables the tags for the callers whose identity has the subject, whatever
// they are for everyone.
func (s *Server) DisableTagsFor(subject string, tags ...string) error {
	if subject == "" {
		return errNoSubject
	}
	return s.eng.SetTags(subject, actors.TagDisabled, tags...)
}

// EnableTagsFor enables the tags for the callers whose identity has the subject, whatever they
// are for everyone (the rules still apply).
func (s *Server) EnableTagsFor(subject string, tags ...string) error {
	if subject == "" {
		return errNoSubject
	}
	return s.eng.SetTags(subject, actors.TagEnabled, tags...)
}

// ResetTagsFor drops the subject's own settings of the tags: the settings for everyone apply
// to it again.
func (s *Server) ResetTagsFor(subject string, tags ...string) error {
	if subject == "" {
		return errNoSubject
	}
	return s.eng.SetTags(subject, actors.TagInherit, tags...)
}

var errNoSubject = errors.New("toolgrain: a subject is required (the tags of everyone are changed with EnableTags and DisableTags)")
