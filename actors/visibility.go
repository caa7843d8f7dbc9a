package actors

import (
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// Which tools a caller sees. With Config.HideForbiddenTools a tool whose Scopes the caller's
// identity lacks is hidden from it, and a hidden tool is a tool that does not exist: tools/list
// leaves it out, a tools/call of it gets the unknown tool's answer byte for byte (in both eras,
// before its arguments, task support or anything else of it is looked at), and its tasks are
// tasks the caller does not have. Every place that answers a client about a tool by name asks
// here: [Engine.ToolFor] for a name, [Engine.visible] for a tool in hand, taskVisible for the
// tool of a task; the HTTP transport's own checks of a tools/call (the step-up challenge, the
// Mcp-Param headers) ask [Engine.ToolFor] too.

// visible reports whether caller may see tool: always, unless the engine hides the tools a
// caller may not call and caller lacks one of tool's scopes.
func (e *Engine) visible(tool *tools.Compiled, caller *tools.Identity) bool {
	return !e.cfg.HideForbiddenTools || tool.MissingScopes(caller) == nil
}

// ToolFor returns the tool named name from the tools served now as caller sees it: false when
// none has that name, and false too when the tool is hidden from caller (see
// Config.HideForbiddenTools), so that whoever answers the caller answers both alike.
func (e *Engine) ToolFor(name string, caller *tools.Identity) (*tools.Compiled, bool) {
	return e.lookupTool(e.reg.tools.Load(), name, caller)
}

// lookupTool is [Engine.ToolFor] in the snapshot snap.
func (e *Engine) lookupTool(snap *toolSnapshot, name string, caller *tools.Identity) (*tools.Compiled, bool) {
	tool, ok := snap.set.Lookup(name)
	if !ok || !e.visible(tool, caller) {
		return nil, false
	}
	return tool, true
}

// taskVisible reports whether caller may know of a task that runs the tool named tool: unless
// that tool, as served now, is hidden from caller. A task whose tool is no longer served stays
// visible to its owner, as without hiding.
func (e *Engine) taskVisible(tool string, caller *tools.Identity) bool {
	if !e.cfg.HideForbiddenTools {
		return true
	}
	t, ok := e.Tool(tool)
	return !ok || e.visible(t, caller)
}

// errUnknownTool answers a tools/call of a tool the caller cannot see: none has that name, or
// it is hidden from the caller. The message names the name requested.
func errUnknownTool(name string) *protocol.WireError {
	return protocol.ErrInvalidParams("unknown tool %q", name)
}
