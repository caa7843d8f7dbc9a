package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/toolgrain/toolgrain/internal/tags"
)

// ToolTransform changes one tool of an upstream as the gateway serves it.
type ToolTransform struct {
	// Name replaces the tool's name (the prefix still applies); empty keeps it.
	Name string
	// Title and Description, when set, replace the tool's.
	Title       *string
	Description *string
	// Arguments change the tool's arguments, by the upstream's argument name.
	Arguments map[string]ArgumentTransform
	// Scopes are OAuth scopes a call of the tool needs (tools.Tool.Scopes: refused with the
	// step-up challenge over HTTP with auth, when the caller lacks one). Nil means none.
	Scopes []string
	// Tags are put on the tool beside the mount's (Mount.Tags) and the upstream's own, as
	// tools.Tool.Tags.
	Tags []string
}

// ArgumentTransform changes one argument of a tool.
type ArgumentTransform struct {
	// Hide removes the argument from the tool's input schema: clients neither see nor send
	// it. The upstream then gets Default, or nothing when Default is nil; hiding an argument
	// the upstream requires needs a Default.
	Hide bool
	// Default is a JSON value. With Hide it is the argument's fixed value; without, it is
	// sent when the client gives no value, and the schema shows it as the default (and no
	// longer requires the argument).
	Default json.RawMessage
	// Description, when set, replaces the argument's description.
	Description *string
}

// filter says which of an upstream's tools are served.
type filter struct {
	include, exclude []string
}

// checkPatterns reports a malformed pattern.
func checkPatterns(key string, patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%s: pattern %q: %w", key, p, err)
		}
	}
	return nil
}

func (f filter) keeps(name string) bool {
	if len(f.include) > 0 && !matchAny(f.include, name) {
		return false
	}
	return !matchAny(f.exclude, name)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// checkTransform reports a transform that cannot work whatever the upstream lists.
func checkTransform(tool string, t ToolTransform) error {
	if t.Name != "" {
		if err := checkNamePart("name", t.Name); err != nil {
			return fmt.Errorf("tool %q: %w", tool, err)
		}
	}
	for _, sc := range t.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \"\\") {
			return fmt.Errorf("tool %q: scope %q: not an OAuth scope token", tool, sc)
		}
	}
	if err := tags.CheckAll(t.Tags); err != nil {
		return fmt.Errorf("tool %q: %w", tool, err)
	}
	for arg, at := range t.Arguments {
		if len(at.Default) > 0 && !json.Valid(at.Default) {
			return fmt.Errorf("tool %q: argument %q: default is not valid JSON", tool, arg)
		}
	}
	return nil
}

// argPlan is what a tool's handler does to the arguments on the way to the upstream: the
// values it sets always (hidden arguments) and those it sets when absent (defaults).
type argPlan struct {
	fixed    map[string]json.RawMessage
	defaults map[string]json.RawMessage
}

func (p *argPlan) empty() bool { return p == nil || (len(p.fixed) == 0 && len(p.defaults) == 0) }

// apply returns the arguments for the upstream.
func (p *argPlan) apply(args json.RawMessage) (json.RawMessage, error) {
	if p.empty() {
		return args, nil
	}
	m := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(args); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
	}
	for k, v := range p.fixed {
		m[k] = v
	}
	for k, v := range p.defaults {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// transformSchema applies the argument transforms to an input schema, and returns the new
// schema and the plan for the arguments. An argument the schema does not declare, or a required
// one hidden without a default, is an error.
func transformSchema(schema json.RawMessage, args map[string]ArgumentTransform) (json.RawMessage, *argPlan, error) {
	if len(args) == 0 {
		return schema, nil, nil
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(schema, &root); err != nil || root == nil {
		return nil, nil, errors.New("input schema is not an object")
	}
	props := map[string]json.RawMessage{}
	if raw, ok := root["properties"]; ok {
		if err := json.Unmarshal(raw, &props); err != nil {
			return nil, nil, errors.New("input schema: properties is not an object")
		}
	}
	var required []string
	if raw, ok := root["required"]; ok {
		_ = json.Unmarshal(raw, &required)
	}
	plan := &argPlan{fixed: map[string]json.RawMessage{}, defaults: map[string]json.RawMessage{}}
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		at := args[name]
		prop, ok := props[name]
		if !ok {
			return nil, nil, fmt.Errorf("argument %q: the tool has no such argument", name)
		}
		isRequired := slices.Contains(required, name)
		if at.Hide {
			if len(at.Default) == 0 && isRequired {
				return nil, nil, fmt.Errorf("argument %q: required by the tool, so hiding it needs a default", name)
			}
			delete(props, name)
			required = slices.DeleteFunc(required, func(s string) bool { return s == name })
			if len(at.Default) > 0 {
				plan.fixed[name] = at.Default
			}
			continue
		}
		var p map[string]json.RawMessage
		if err := json.Unmarshal(prop, &p); err != nil || p == nil {
			return nil, nil, fmt.Errorf("argument %q: its schema is not an object", name)
		}
		if len(at.Default) > 0 {
			p["default"] = at.Default
			plan.defaults[name] = at.Default
			required = slices.DeleteFunc(required, func(s string) bool { return s == name })
		}
		if at.Description != nil {
			d, _ := json.Marshal(*at.Description)
			p["description"] = d
		}
		props[name], _ = json.Marshal(p)
	}
	root["properties"], _ = json.Marshal(props)
	if len(required) > 0 {
		root["required"], _ = json.Marshal(required)
	} else {
		delete(root, "required")
	}
	out, err := json.Marshal(root)
	return out, plan, err
}
