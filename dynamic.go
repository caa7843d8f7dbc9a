package toolgrain

import (
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// AddTools adds tools while the server runs. They are compiled as [NewServer] compiles
// Config.Tools; a name already served is a *tools.ToolNameError with Reason "duplicate", and on
// any error nothing is added. Every initialized client is then sent
// notifications/tools/list_changed: over stdio on the connection's output, over HTTP on the
// session's standalone stream. A tool with a tools.TaskSupport needs a server that offers tasks
// (see [TaskConfig]).
func (s *Server) AddTools(defs ...tools.Tool) error {
	if err := s.checkTaskTools(defs); err != nil {
		return err
	}
	return s.eng.AddTools(defs...)
}

// RemoveTools stops serving the named tools and returns how many were removed. Calls already
// running finish normally. When any was removed, every initialized client is sent
// notifications/tools/list_changed.
func (s *Server) RemoveTools(names ...string) int { return s.eng.RemoveTools(names...) }

// AddResources adds resources and resource templates while the server runs; a URI or URI
// template already served is a *resources.DefinitionError, and on any error nothing is added.
// Every initialized client is then sent notifications/resources/list_changed.
func (s *Server) AddResources(res []resources.Resource, tpls []resources.Template) error {
	return s.eng.AddResources(res, tpls)
}

// RemoveResources removes the resources whose URI, and the templates whose URI template, is one
// of keys, and returns how many were removed; when any was, every initialized client is sent
// notifications/resources/list_changed.
func (s *Server) RemoveResources(keys ...string) int { return s.eng.RemoveResources(keys...) }

// AddPrompts adds prompts while the server runs; a name already served is a
// *prompts.DefinitionError, and on any error nothing is added. Every initialized client is then
// sent notifications/prompts/list_changed.
func (s *Server) AddPrompts(defs ...prompts.Prompt) error { return s.eng.AddPrompts(defs...) }

// RemovePrompts removes the named prompts and returns how many were removed; when any was, every
// initialized client is sent notifications/prompts/list_changed.
func (s *Server) RemovePrompts(names ...string) int { return s.eng.RemovePrompts(names...) }

// NotifyElicitationComplete tells the client that asked the user to visit a URL
// (client.Elicit in URL mode, with params.ElicitationID id) that the interaction finished, with
// notifications/elicitation/complete on its connection's notification path. Ids the server did
// not send, or already completed, are ignored. It never blocks.
func (s *Server) NotifyElicitationComplete(id string) { s.eng.ElicitationComplete(id) }

// NotifyResourceUpdated tells every client that subscribed to uri (resources/subscribe) that the
// resource changed, with notifications/resources/updated on the connection's notification path.
// It never blocks.
func (s *Server) NotifyResourceUpdated(uri string) { s.eng.ResourceUpdated(uri) }
