package main

import (
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// visibilityOptions are the flags of tags and visibility rules (docs/visibility.md).
type visibilityOptions struct {
	toolTags  listFlag
	tagScopes listFlag
	disabled  listFlag
}

func (o *visibilityOptions) register(fs *flag.FlagSet) {
	fs.Var(&o.disabled, "disable-tag", "disable a `TAG` for everyone at start (repeatable): its components are invisible until it is enabled, with POST /tags/enable?tag=TAG on the admin listener (--admin-addr)")
	fs.Var(&o.toolTags, "tool-tag", "give a tool of the binary's own tags, `TOOL=TAG[,TAG...]` (repeatable), for --tag-scope and for the toolsets a client narrows its view to over HTTP: the X-MCP-Toolsets header, or the endpoint /mcp/t/TAG[,TAG...] (mounted components get theirs in the --mount file, \"tags\")")
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
	cfg.Disabled = o.disabled
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

// changeTags answers the admin listener's /tags/enable, /tags/disable and /tags/reset: POST with
// the tags in tag parameters (repeatable, or comma-separated) and, for one identity alone,
// subject (a user's subject; a token's is token-N) or client (the id of a client acting on its
// own behalf); reset needs one of them. It answers 204 once this server's clients
// were told (and, on a cluster, the change was sent to the other members), 400 for a bad
// request.
func changeTags(w http.ResponseWriter, r *http.Request, srv *toolgrain.Server) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var list []string
	for _, v := range r.URL.Query()["tag"] {
		tags, err := visibility.ParseTags(v)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		list = append(list, tags...)
	}
	if len(list) == 0 {
		http.Error(w, "no tag: give tag=TAG", http.StatusBadRequest)
		return
	}
	subject, client := r.URL.Query().Get("subject"), r.URL.Query().Get("client")
	if subject != "" && client != "" {
		http.Error(w, "give subject or client, not both", http.StatusBadRequest)
		return
	}
	var err error
	switch action := strings.TrimPrefix(r.URL.Path, "/tags/"); {
	case action == "enable" && client != "":
		err = srv.EnableTagsForClient(client, list...)
	case action == "enable" && subject != "":
		err = srv.EnableTagsFor(subject, list...)
	case action == "enable":
		err = srv.EnableTags(list...)
	case action == "disable" && client != "":
		err = srv.DisableTagsForClient(client, list...)
	case action == "disable" && subject != "":
		err = srv.DisableTagsFor(subject, list...)
	case action == "disable":
		err = srv.DisableTags(list...)
	case action == "reset" && client != "":
		err = srv.ResetTagsForClient(client, list...)
	case action == "reset":
		err = srv.ResetTagsFor(subject, list...)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
