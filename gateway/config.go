package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolgrain/toolgrain/internal/tags"
)

// The configuration file: the mcpServers JSON that desktop clients and FastMCP use, each server
// mounted under its key, with this package's own keys for prefixes, filters, transforms and
// limits:
//
//	{"mcpServers": {
//	  "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
//	            "env": {"DEBUG": "0"}, "cwd": "/srv",
//	            "exclude": ["write_*"], "timeout": "30s"},
//	  "search": {"url": "https://search.example.com/mcp", "headers": {"X-Team": "docs"},
//	             "prefix": "web", "tools": {"query": {"description": "Search the web.",
//	               "arguments": {"region": {"hide": true, "default": "eu"}}}}}
//	}}
//
// docs/gateway.md lists every key. Keys other than mcpServers at the top are ignored (a client's
// whole configuration file can be given); inside a server, an unknown key is an error, except
// those other clients write (autoApprove, alwaysAllow, description), which are ignored, and
// "disabled": true leaves the server out.

// ConfigError is an error in a configuration file: Key is the path of the key at fault
// (mcpServers."files".args), Reason what is wrong.
type ConfigError struct {
	Key    string
	Reason string
}

// Error returns "KEY: REASON".
func (e *ConfigError) Error() string { return e.Key + ": " + e.Reason }

// LoadConfig reads a configuration file; see [ParseConfig].
func LoadConfig(path string) ([]Mount, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	mounts, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return mounts, nil
}

// ParseConfig reads the mcpServers JSON into mounts, in the order of the file. Every mount is
// checked as [Gateway.Mount] would check it, so that a bad file fails before anything starts;
// the error is a *ConfigError naming the key.
func ParseConfig(data []byte) ([]Mount, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, &ConfigError{Key: "(file)", Reason: "not a JSON object: " + err.Error()}
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return nil, &ConfigError{Key: "mcpServers", Reason: "missing"}
	}
	keys, servers, err := orderedObject(raw)
	if err != nil {
		return nil, &ConfigError{Key: "mcpServers", Reason: err.Error()}
	}
	var mounts []Mount
	for _, name := range keys {
		m, skip, err := parseServer(name, servers[name])
		if err != nil {
			return nil, err
		}
		if !skip {
			mounts = append(mounts, m)
		}
	}
	return mounts, nil
}

// orderedObject decodes a JSON object, keeping the order of its keys; a key given twice is an
// error.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("must be an object")
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := vals[key]; dup {
			return nil, nil, fmt.Errorf("%q is given twice", key)
		}
		keys = append(keys, key)
		vals[key] = v
	}
	return keys, vals, nil
}

// ignoredKeys are keys other MCP clients write in a server's entry, which mean nothing here.
var ignoredKeys = map[string]bool{"autoApprove": true, "alwaysAllow": true, "description": true}

func parseServer(name string, raw json.RawMessage) (Mount, bool, error) {
	base := "mcpServers." + strconv.Quote(name)
	fail := func(key, format string, args ...any) (Mount, bool, error) {
		k := base
		if key != "" {
			k += "." + key
		}
		return Mount{}, false, &ConfigError{Key: k, Reason: fmt.Sprintf(format, args...)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return fail("", "must be an object")
	}
	if err := checkNamePart("name", name); err != nil {
		return fail("", "the key is the mount's name: %v", err)
	}
	var disabled bool
	if err := decodeField(fields, "disabled", &disabled); err != nil {
		return fail("disabled", "%v", err)
	}
	m := Mount{Name: name}
	var s struct {
		Command, Cwd, URL, Transport, Prefix, Separator, Protocol string
		Args, Include, Exclude, Tags                              []string
		Env, Headers                                              map[string]string
		NoPrefix                                                  bool
		MaxCallsInFlight                                          int
		Tools                                                     map[string]json.RawMessage
		OAuth                                                     *struct {
			TokenURL     string   `json:"tokenUrl"`
			Issuer       string   `json:"issuer"`
			ClientID     string   `json:"clientId"`
			ClientSecret string   `json:"clientSecret"`
			Scopes       []string `json:"scopes"`
			Resource     string   `json:"resource"`
		}
	}
	typed := []struct {
		key string
		dst any
		err string
	}{
		{"command", &s.Command, "must be a string"},
		{"args", &s.Args, "must be an array of strings"},
		{"env", &s.Env, "must be an object of strings"},
		{"cwd", &s.Cwd, "must be a string"},
		{"url", &s.URL, "must be a string"},
		{"headers", &s.Headers, "must be an object of strings"},
		{"prefix", &s.Prefix, "must be a string"},
		{"noPrefix", &s.NoPrefix, "must be true or false"},
		{"separator", &s.Separator, "must be a string"},
		{"include", &s.Include, "must be an array of strings"},
		{"exclude", &s.Exclude, "must be an array of strings"},
		{"tags", &s.Tags, "must be an array of strings"},
		{"protocol", &s.Protocol, "must be a string"},
		{"maxCallsInFlight", &s.MaxCallsInFlight, "must be an integer"},
		{"tools", &s.Tools, "must be an object, by tool name"},
		{"oauth", &s.OAuth, "must be an object with tokenUrl or issuer, clientId, clientSecret, scopes and resource"},
	}
	known := map[string]bool{"disabled": true, "timeout": true, "transport": true, "type": true, "transportType": true}
	for _, f := range typed {
		known[f.key] = true
		if err := decodeField(fields, f.key, f.dst); err != nil {
			return fail(f.key, "%s", f.err)
		}
	}
	var unknown []string
	for k := range fields {
		if !known[k] && !ignoredKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fail(unknown[0], "unknown key")
	}
	if disabled {
		return Mount{}, true, nil
	}
	for _, k := range []string{"transport", "type", "transportType"} {
		if _, ok := fields[k]; !ok {
			continue
		}
		var t string
		if err := decodeField(fields, k, &t); err != nil {
			return fail(k, "must be a string")
		}
		if s.Transport != "" && !strings.EqualFold(s.Transport, t) {
			return fail(k, "%q disagrees with %q given by another key", t, s.Transport)
		}
		s.Transport = t
	}
	if raw, ok := fields["timeout"]; ok {
		d, err := parseDuration(raw)
		if err != nil {
			return fail("timeout", "%v", err)
		}
		m.Timeout = d
	}
	transport := strings.ToLower(s.Transport)
	switch {
	case s.Command != "" && s.URL != "":
		return fail("url", "a server has a command or a url, not both")
	case s.Command != "":
		if transport != "" && transport != "stdio" {
			return fail("transport", "%q with a command: a command speaks stdio", s.Transport)
		}
		if s.Headers != nil {
			return fail("headers", "only for a url")
		}
		if s.OAuth != nil {
			return fail("oauth", "only for a url")
		}
		m.Source = Stdio{Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Cwd}
	case s.URL != "":
		for _, k := range []string{"args", "env", "cwd"} {
			if _, ok := fields[k]; ok {
				return fail(k, "only for a command")
			}
		}
		src := HTTP{URL: s.URL, Transport: transport, Headers: s.Headers}
		if o := s.OAuth; o != nil {
			src.OAuth = &OAuth{TokenURL: o.TokenURL, Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes, Resource: o.Resource}
		}
		if err := src.check(); err != nil {
			key := "url"
			switch msg := err.Error(); {
			case strings.HasPrefix(msg, "headers"):
				key = "headers"
			case strings.HasPrefix(msg, "oauth"):
				key = "oauth"
			case strings.HasPrefix(msg, "transport"):
				key = "transport"
			}
			return fail(key, "%v", err)
		}
		m.Source = src
	default:
		return fail("", "needs a command (stdio) or a url (HTTP)")
	}
	m.Prefix, m.NoPrefix, m.Separator = s.Prefix, s.NoPrefix, s.Separator
	m.Include, m.Exclude, m.Protocol, m.MaxCallsInFlight = s.Include, s.Exclude, s.Protocol, s.MaxCallsInFlight
	if err := tags.CheckAll(s.Tags); err != nil {
		return fail("tags", "%v", err)
	}
	m.Tags = s.Tags
	if len(s.Tools) > 0 {
		m.Tools = make(map[string]ToolTransform, len(s.Tools))
		for tool, raw := range s.Tools {
			t, key, err := parseToolTransform(raw)
			if err != nil {
				return fail("tools."+strconv.Quote(tool)+key, "%v", err)
			}
			m.Tools[tool] = t
		}
	}
	if _, err := checkMount(m); err != nil {
		return fail("", "%v", err)
	}
	return m, false, nil
}

func decodeField(fields map[string]json.RawMessage, key string, dst any) error {
	raw, ok := fields[key]
	if !ok {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}

// parseDuration reads a timeout: a Go duration ("30s", "1m30s") or a number of seconds.
func parseDuration(raw json.RawMessage) (time.Duration, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (\"30s\", \"2m\")", s)
		}
		if d < 0 {
			return 0, errors.New("must not be negative")
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil {
		return 0, errors.New(`must be a duration ("30s") or a number of seconds`)
	}
	if secs < 0 {
		return 0, errors.New("must not be negative")
	}
	return time.Duration(secs * float64(time.Second)), nil
}

func parseToolTransform(raw json.RawMessage) (ToolTransform, string, error) {
	var t struct {
		Name        string                     `json:"name"`
		Title       *string                    `json:"title"`
		Description *string                    `json:"description"`
		Arguments   map[string]json.RawMessage `json:"arguments"`
		Scopes      []string                   `json:"scopes"`
		Tags        []string                   `json:"tags"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return ToolTransform{}, "", fmt.Errorf("must be an object with name, title, description, arguments, scopes and tags: %v", err)
	}
	if err := tags.CheckAll(t.Tags); err != nil {
		return ToolTransform{}, ".tags", err
	}
	out := ToolTransform{Name: t.Name, Title: t.Title, Description: t.Description, Scopes: t.Scopes, Tags: t.Tags}
	if len(t.Arguments) > 0 {
		out.Arguments = make(map[string]ArgumentTransform, len(t.Arguments))
	}
	for arg, raw := range t.Arguments {
		var a struct {
			Hide        bool            `json:"hide"`
			Default     json.RawMessage `json:"default"`
			Description *string         `json:"description"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return ToolTransform{}, ".arguments." + strconv.Quote(arg), fmt.Errorf("must be an object with hide, default and description: %v", err)
		}
		out.Arguments[arg] = ArgumentTransform{Hide: a.Hide, Default: a.Default, Description: a.Description}
	}
	return out, "", nil
}
