package demo_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// changer records what the touch tool does to the server.
type changer struct {
	tools, prompts, resources map[string]bool
	updated                   []string
}

func newChanger() *changer {
	return &changer{tools: map[string]bool{}, prompts: map[string]bool{}, resources: map[string]bool{}}
}

func (c *changer) AddTools(defs ...tools.Tool) error {
	for _, d := range defs {
		c.tools[d.Name] = true
	}
	return nil
}

func (c *changer) RemoveTools(names ...string) int { return remove(c.tools, names) }

func (c *changer) AddPrompts(defs ...prompts.Prompt) error {
	for _, d := range defs {
		c.prompts[d.Name] = true
	}
	return nil
}

func (c *changer) RemovePrompts(names ...string) int { return remove(c.prompts, names) }

func (c *changer) AddResources(res []resources.Resource, _ []resources.Template) error {
	for _, r := range res {
		c.resources[r.URI] = true
	}
	return nil
}

func (c *changer) RemoveResources(keys ...string) int { return remove(c.resources, keys) }

func (c *changer) NotifyResourceUpdated(uri string) { c.updated = append(c.updated, uri) }

func remove(m map[string]bool, keys []string) int {
	n := 0
	for _, k := range keys {
		if m[k] {
			delete(m, k)
			n++
		}
	}
	return n
}

// TestTouch: each list call adds the touched entry or takes it away again, a uri call announces
// an update, and arguments outside the schema are refused; before Set, the tool fails.
func TestTouch(t *testing.T) {
	var touched demo.Touched
	defs := demo.TouchTools(&touched)
	set, err := tools.Compile(defs)
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := set.Lookup("touch")
	call := func(args string) (*tools.Result, error) {
		return defs[0].Handler.Handle(context.Background(), &tools.Request{Tool: "touch", Arguments: json.RawMessage(args)})
	}
	if _, err := call(`{"list":"tools"}`); err == nil || !strings.Contains(err.Error(), "no server") {
		t.Fatalf("before Set: err = %v", err)
	}
	c := newChanger()
	touched.Set(c)
	for i, want := range []bool{true, false, true} {
		if _, err := call(`{"list":"tools"}`); err != nil {
			t.Fatal(err)
		}
		if c.tools[demo.TouchedTool] != want {
			t.Errorf("after call %d: tool present = %v, want %v", i+1, !want, want)
		}
	}
	for _, list := range []string{"prompts", "resources"} {
		if _, err := call(`{"list":"` + list + `"}`); err != nil {
			t.Fatal(err)
		}
	}
	if !c.prompts[demo.TouchedPrompt] || !c.resources[demo.TouchedResource] {
		t.Errorf("prompts %v, resources %v: want the touched entries", c.prompts, c.resources)
	}
	res, err := call(`{"uri":"demo://x"}`)
	if err != nil || len(c.updated) != 1 || c.updated[0] != "demo://x" {
		t.Fatalf("uri: res %v err %v, updated %v", res, err, c.updated)
	}
	if got, want := string(tool.Descriptor().InputSchema), `{"oneOf":[{"required":["list"],"title":"list"},{"required":["uri"],"title":"uri"}],`+
		`"properties":{"list":{"type":"string","enum":["tools","prompts","resources"]},"uri":{"type":"string","minLength":1}},`+
		`"additionalProperties":false,"type":"object"}`; got != want {
		t.Errorf("schema\n got: %s\nwant: %s", got, want)
	}
	for _, bad := range []string{`{}`, `{"list":"tools","uri":"demo://x"}`, `{"list":"other"}`, `{"uri":""}`, `{"list":"tools","x":1}`} {
		if _, feedback := tool.ValidateInput(json.RawMessage(bad)); feedback == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
