package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// visibilityOptions are the flags of tags and visibility rules (docs/visibility.md).
type visibilityOptions struct {
	toolTags  listFlag
	tagScopes listFlag
}

func (o *visibilityOptions) register(fs *flag.FlagSet) {
	fs.Var(&o.toolTags, "tool-tag", "give a tool tags, `TOOL=TAG[,TAG...]` (repeatable), for --tag-scope and for the toolsets a client narrows its view to over HTTP: the X-MCP-Toolsets header, or the endpoint /mcp/t/TAG[,TAG...]")
	fs.Var(&o.tagScopes, "tag-scope", "make the components tagged TAG visible only to tokens with every SCOPE, `TAG=SCOPE[,SCOPE...]` (repeatable): to the others they do not exist, lists leave them out and a call of one is answered as a call of an unknown tool (a stdio client, which has no token, sees none of them)")
}

func (o *visibilityOptions) check() error {
	for _, v := range o.toolTags {
		if _, _, err := parseAssignment("--tool-tag", "TOOL=TAG[,TAG...]", v); err != nil {
			return err
		}
	}
	for _, v := range o.tagScopes {
		if _, _, err := parseAssignment("--tag-scope", "TAG=SCOPE[,SCOPE...]", v); err != nil {
			return err
		}
	}
	_, err := o.config()
	return err
}

// parseAssignment reads a NAME=V[,V...] flag value.
func parseAssignment(flagName, form, v string) (string, []string, error) {
	name, list, ok := strings.Cut(v, "=")
	var values []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			values = append(values, s)
		}
	}
	if !ok || strings.TrimSpace(name) == "" || len(values) == 0 {
		return "", nil, fmt.Errorf("%s %q: want %s", flagName, v, form)
	}
	return strings.TrimSpace(name), values, nil
}

// config returns the visibility configuration of the flags.
func (o *visibilityOptions) config() (visibility.Config, error) {
	var cfg visibility.Config
	for _, v := range o.tagScopes {
		tag, scopes, err := parseAssignment("--tag-scope", "TAG=SCOPE[,SCOPE...]", v)
		if err != nil {
			return cfg, err
		}
		cfg.Rules = append(cfg.Rules, visibility.Rule{Tags: []string{tag}, Scopes: scopes})
	}
	if err := cfg.Check(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// applyToolTags adds the tags --tool-tag names to the tools; naming a tool the server does not
// have is an error.
func (o *visibilityOptions) applyToolTags(list []tools.Tool) ([]tools.Tool, error) {
	for _, v := range o.toolTags {
		name, tags, err := parseAssignment("--tool-tag", "TOOL=TAG[,TAG...]", v)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(list, func(t tools.Tool) bool { return t.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("--tool-tag %q: no tool %q", v, name)
		}
		list[i].Tags = append(slices.Clip(list[i].Tags), tags...)
	}
	return list, nil
}
