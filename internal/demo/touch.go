package demo

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// Changer is what the touch tool changes: the server, once it exists (*toolgrain.Server).
type Changer interface {
	AddTools(defs ...tools.Tool) error
	RemoveTools(names ...string) int
	AddPrompts(defs ...prompts.Prompt) error
	RemovePrompts(names ...string) int
	AddResources(res []resources.Resource, tpls []resources.Template) error
	RemoveResources(keys ...string) int
	NotifyResourceUpdated(uri string)
}

// Touched holds the server the touch tool changes; set it with [Touched.Set] once the server is
// made. Before that the tool fails.
type Touched struct{ c atomic.Pointer[Changer] }

// Set makes c the server the touch tool changes.
func (t *Touched) Set(c Changer) { t.c.Store(&c) }

// The entries the touch tool adds and removes in turn.
const (
	TouchedTool     = "touched"
	TouchedPrompt   = "touched"
	TouchedResource = "demo://touched"
)

// touchIn is the touch tool's arguments: exactly one of list and uri (the oneof_required
// groups of the schema's generator).
type touchIn struct {
	List string `json:"list,omitempty" jsonschema:"oneof_required=list,enum=tools,enum=prompts,enum=resources"`
	URI  string `json:"uri,omitempty" jsonschema:"oneof_required=uri,minLength=1"`
}

// TouchTools returns the demonstration tool touch, served by cmd/server with --touch-tool: it
// makes the server announce a change on demand, which is how a benchmark measures the time a
// change takes to reach every connected client.
//
//   - {"list":"tools"} changes the tool list once: it adds the tool "touched", or removes it if
//     it is there; every client is sent notifications/tools/list_changed. "prompts" and
//     "resources" do the same to the prompt "touched" and the resource demo://touched.
//   - {"uri":U} announces an update of the resource U: every client subscribed to it is sent
//     notifications/resources/updated.
//
// It answers with a text saying what it did. It is kept apart from Tools, whose list is a
// contract.
func TouchTools(t *Touched) []tools.Tool {
	return []tools.Tool{{
		Name:        "touch",
		Description: `Announces a change on demand: {"list":"tools"|"prompts"|"resources"} changes that list once (adds or removes the entry "touched"); {"uri":U} announces an update of the resource U to its subscribers.`,
		Handler: tools.Func(func(ctx context.Context, in touchIn) (*tools.Result, error) {
			p := t.c.Load()
			if p == nil {
				return nil, errors.New("demo: touch has no server yet")
			}
			c := *p
			if in.URI != "" {
				c.NotifyResourceUpdated(in.URI)
				return tools.TextResult("updated " + in.URI), nil
			}
			switch in.List {
			case "tools":
				if c.RemoveTools(TouchedTool) == 0 {
					if err := c.AddTools(tools.Tool{Name: TouchedTool, Description: "Comes and goes with touch.",
						// Any object, as the schema of a map says.
						Handler: tools.Func(func(context.Context, map[string]any) (*tools.Result, error) {
							return tools.TextResult("touched"), nil
						})}); err != nil {
						return nil, err
					}
				}
			case "prompts":
				if c.RemovePrompts(TouchedPrompt) == 0 {
					if err := c.AddPrompts(prompts.Prompt{Name: TouchedPrompt, Description: "Comes and goes with touch.",
						Handler: prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
							return &prompts.GetResult{Messages: []protocol.PromptMessage{prompts.Text(protocol.RoleUser, "touched")}}, nil
						})}); err != nil {
						return nil, err
					}
				}
			case "resources":
				if c.RemoveResources(TouchedResource) == 0 {
					if err := c.AddResources([]resources.Resource{{URI: TouchedResource, Name: "touched",
						Reader: resources.ReaderFunc(func(_ context.Context, req *resources.ReadRequest) (*resources.ReadResult, error) {
							return resources.Text(req.URI, "text/plain", "touched"), nil
						})}}, nil); err != nil {
						return nil, err
					}
				}
			}
			return tools.TextResult(in.List + " list changed"), nil
		}),
	}}
}
