package gateway_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/gateway"
)

// Transforms in code: include and exclude by pattern, a tool renamed and redescribed, an
// argument hidden with a fixed value, another given a default.
func TestTransformsInCode(t *testing.T) {
	t.Parallel()
	m := fake("fk", nil)
	m.Include = []string{"e*", "goodout", "public"}
	m.Exclude = []string{"elicit"}
	desc := "Says the text back."
	m.Tools = map[string]gateway.ToolTransform{
		"echo":   {Name: "say", Description: &desc, Arguments: map[string]gateway.ArgumentTransform{"text": {Default: json.RawMessage(`"default text"`)}}},
		"public": {Arguments: map[string]gateway.ArgumentTransform{}},
	}
	m2 := fake("fixed", nil)
	m2.Include = []string{"echo", "public", "goodout"}
	m2.Tools = map[string]gateway.ToolTransform{
		"echo": {Arguments: map[string]gateway.ArgumentTransform{"text": {Hide: true, Default: json.RawMessage(`"always this"`)}}},
		// Transforms that do not fit their tool leave it out (and say so in the log).
		"public":  {Arguments: map[string]gateway.ArgumentTransform{"nope": {Hide: true}}},
		"goodout": {Arguments: map[string]gateway.ArgumentTransform{"n": {Description: new(string)}}},
	}
	f := newFront(t, toolgrain.Config{}, m, m2)
	list, err := f.c.ListTools(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]string{}
	for _, tl := range list {
		names = append(names, tl.Name)
		raw, _ := json.Marshal(tl)
		byName[tl.Name] = string(raw)
	}
	slices.Sort(names)
	if want := []string{"fixed_echo", "fk_goodout", "fk_public", "fk_say"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	if got := byName["fk_say"]; got != `{"name":"fk_say","description":"Says the text back.","inputSchema":{"properties":{"text":{"default":"default text","type":"string"}},"type":"object"}}` {
		t.Errorf("say: %s", got)
	}
	if got := byName["fixed_echo"]; got != `{"name":"fixed_echo","description":"echo","inputSchema":{"properties":{},"type":"object"}}` {
		t.Errorf("fixed echo: %s", got)
	}
	if got := text(f.call(t, "fk_say", `{}`)); got != "default text" {
		t.Errorf("say with the default: %q", got)
	}
	if got := text(f.call(t, "fk_say", `{"text":"mine"}`)); got != "mine" {
		t.Errorf("say: %q", got)
	}
	if got := text(f.call(t, "fixed_echo", `{}`)); got != "always this" {
		t.Errorf("fixed echo: %q", got)
	}
	if got := text(f.call(t, "fixed_echo", `{"text":"ignored"}`)); got != "always this" {
		t.Errorf("fixed echo given the hidden argument: %q", got)
	}
}

// The same from a configuration file, and the server's tool left alone.
func TestTransformsInConfig(t *testing.T) {
	t.Parallel()
	cfg := `{"globalShortcut": "x", "mcpServers": {
	  "fk": {"command": ` + quote(os.Args[0]) + `, "env": {"GATEWAY_FAKE_UPSTREAM": "1"},
	         "prefix": "f", "separator": ".", "include": ["echo", "goodout"], "timeout": "5s",
	         "tools": {"echo": {"name": "say", "arguments": {"text": {"hide": true, "default": "from the file"}}}},
	         "autoApprove": ["echo"]},
	  "off": {"command": "/nonexistent", "disabled": true}
	}}`
	mounts, err := gateway.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 1 || mounts[0].Name != "fk" || mounts[0].Prefix != "f" || mounts[0].Timeout.Seconds() != 5 {
		t.Fatalf("mounts: %+v", mounts)
	}
	f := newFront(t, toolgrain.Config{}, mounts...)
	if names := toolNames(t, f.c); !slices.Equal(names, []string{"f.say", "f.goodout"}) {
		t.Errorf("tools: %v", names)
	}
	if got := text(f.call(t, "f.say", `{}`)); got != "from the file" {
		t.Errorf("say: %q", got)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// Tags in the file: the server's for each of its components, a tool's in its transform.
func TestTagsInConfig(t *testing.T) {
	t.Parallel()
	mounts, err := gateway.ParseConfig([]byte(`{"mcpServers": {
	  "fk": {"command": ` + quote(os.Args[0]) + `, "env": {"GATEWAY_FAKE_UPSTREAM": "1"}, "include": ["echo", "public"],
	         "tags": ["up", "ext"], "tools": {"echo": {"tags": ["ops"]}}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 1 || !slices.Equal(mounts[0].Tags, []string{"up", "ext"}) || !slices.Equal(mounts[0].Tools["echo"].Tags, []string{"ops"}) {
		t.Fatalf("mounts: %+v", mounts)
	}
	f := newFront(t, toolgrain.Config{}, mounts...)
	list, err := f.c.Call(ctxT(t), "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"name":"fk_echo","description":"echo","inputSchema":{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"},"_meta":{"io.github.toolgrain/tags":["ext","ops","up"]}}`,
		`"name":"fk_public","description":"a public error","inputSchema":{"type":"object"},"_meta":{"io.github.toolgrain/tags":["ext","up"]}}`,
	} {
		if !strings.Contains(string(list), want) {
			t.Errorf("tools/list lacks %s:\n%s", want, list)
		}
	}
}

// A url entry is an HTTP source with its headers and OAuth settings.
func TestConfigHTTP(t *testing.T) {
	t.Setenv("GATEWAY_TEST_TOKEN", "t0k")
	mounts, err := gateway.ParseConfig([]byte(`{"mcpServers": {
	  "web": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:GATEWAY_TEST_TOKEN}"}},
	  "old": {"url": "https://old.example.com/sse", "type": "sse"},
	  "auth": {"url": "https://a.example.com/mcp", "oauth": {"issuer": "https://id.example.com", "clientId": "gw", "clientSecret": "${env:GATEWAY_TEST_TOKEN}", "scopes": ["mcp"]}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 3 {
		t.Fatalf("mounts: %+v", mounts)
	}
	web, ok := mounts[0].Source.(gateway.HTTP)
	if !ok || web.URL != "https://mcp.example.com/mcp" || web.Headers["Authorization"] != "Bearer ${env:GATEWAY_TEST_TOKEN}" {
		t.Errorf("web: %+v", mounts[0].Source)
	}
	if old, ok := mounts[1].Source.(gateway.HTTP); !ok || old.Transport != "sse" {
		t.Errorf("old: %+v", mounts[1].Source)
	}
	if a, ok := mounts[2].Source.(gateway.HTTP); !ok || a.OAuth == nil || a.OAuth.ClientID != "gw" || len(a.OAuth.Scopes) != 1 {
		t.Errorf("auth: %+v", mounts[2].Source)
	}
}

// A bad file is an error naming the key.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, want string }{
		{`[]`, `(file): not a JSON object`},
		{`{}`, `mcpServers: missing`},
		{`{"mcpServers": []}`, `mcpServers: must be an object`},
		{`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `mcpServers: "a" is given twice`},
		{`{"mcpServers": {"a b": {"command": "x"}}}`, `mcpServers."a b": the key is the mount's name: name "a b": invalid character ' '`},
		{`{"mcpServers": {"a": {}}}`, `mcpServers."a": needs a command (stdio) or a url (HTTP)`},
		{`{"mcpServers": {"a": 3}}`, `mcpServers."a": must be an object`},
		{`{"mcpServers": {"a": {"command": "x", "comand": "y"}}}`, `mcpServers."a".comand: unknown key`},
		{`{"mcpServers": {"a": {"command": 7}}}`, `mcpServers."a".command: must be a string`},
		{`{"mcpServers": {"a": {"command": "x", "args": "-v"}}}`, `mcpServers."a".args: must be an array of strings`},
		{`{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}`, `mcpServers."a".env: must be an object of strings`},
		{`{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`, `mcpServers."a".url: a server has a command or a url, not both`},
		{`{"mcpServers": {"a": {"command": "x", "transport": "sse"}}}`, `mcpServers."a".transport: "sse" with a command`},
		{`{"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}`, `mcpServers."a".timeout: "soon" is not a duration`},
		{`{"mcpServers": {"a": {"command": "x", "timeout": -1}}}`, `mcpServers."a".timeout: must not be negative`},
		{`{"mcpServers": {"a": {"command": "x", "prefix": "a/b"}}}`, `mcpServers."a": prefix "a/b": invalid character '/'`},
		{`{"mcpServers": {"a": {"command": "x", "include": ["[a"]}}}`, `mcpServers."a": include: pattern "[a": syntax error in pattern`},
		{`{"mcpServers": {"a": {"command": "x", "protocol": "2023"}}}`, `mcpServers."a": protocol "2023": want auto, legacy or modern`},
		{`{"mcpServers": {"a": {"command": "x", "tools": {"t": {"rename": "u"}}}}}`, `mcpServers."a".tools."t": must be an object with name, title, description, arguments, scopes and tags`},
		{`{"mcpServers": {"a": {"command": "x", "tags": "ops"}}}`, `mcpServers."a".tags: must be an array of strings`},
		{`{"mcpServers": {"a": {"command": "x", "tags": ["o/ps"]}}}`, `mcpServers."a".tags: tag "o/ps": invalid character '/' at position 1`},
		{`{"mcpServers": {"a": {"command": "x", "tools": {"t": {"tags": [""]}}}}}`, `mcpServers."a".tools."t".tags: tag "": empty`},
		{`{"mcpServers": {"a": {"command": "x", "tools": {"t": {"arguments": {"x": {"hidden": true}}}}}}}`, `mcpServers."a".tools."t".arguments."x": must be an object with hide, default and description`},
		{`{"mcpServers": {"a": {"command": "x", "tools": {"t": {"name": "u v"}}}}}`, `mcpServers."a": tools: tool "t": name "u v": invalid character ' '`},
		{`{"mcpServers": {"a": {"url": "ftp://x"}}}`, `mcpServers."a".url: url "ftp://x": want an http or https URL`},
		{`{"mcpServers": {"a": {"url": "http://h/mcp", "headers": {"A": "${env:GATEWAY_TEST_UNSET}"}}}}`, `mcpServers."a".headers: headers: A: environment variable GATEWAY_TEST_UNSET is not set`},
		{`{"mcpServers": {"a": {"url": "http://h/mcp", "headers": {"A": "${file:/nonexistent/token}"}}}}`, `mcpServers."a".headers: headers: A: file /nonexistent/token: no such file or directory`},
		{`{"mcpServers": {"a": {"url": "http://h/mcp", "transport": "ws"}}}`, `mcpServers."a".transport: transport "ws": want http or sse`},
		{`{"mcpServers": {"a": {"url": "http://h/mcp", "type": "sse", "transport": "http"}}}`, `mcpServers."a".type: "sse" disagrees with "http"`},
		{`{"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"issuer": "https://i"}}}}`, `mcpServers."a".oauth: oauth: clientId is empty`},
		{`{"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"clientId": "c"}}}}`, `mcpServers."a".oauth: oauth: needs a tokenUrl or an issuer`},
		{`{"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"clientId": "c", "secret": "s"}}}}`, `mcpServers."a".oauth: must be an object with tokenUrl`},
		{`{"mcpServers": {"a": {"url": "http://h/mcp", "args": []}}}`, `mcpServers."a".args: only for a command`},
		{`{"mcpServers": {"a": {"command": "x", "headers": {}}}}`, `mcpServers."a".headers: only for a url`},
		{`{"mcpServers": {"a": {"url": "http://h/sse", "transport": "sse", "protocol": "modern"}}}`, `mcpServers."a": protocol modern: the HTTP+SSE transport speaks the initialize era only`},
	} {
		_, err := gateway.ParseConfig([]byte(c.file))
		var ce *gateway.ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s...", c.file, err, c.want)
		}
	}
}
