package e2e_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

const (
	iconJSON     = `[{"src":"https://example.com/icon.png","mimeType":"image/png","sizes":["48x48","96x96"],"theme":"light"}]`
	dataIconJSON = `[{"src":"data:image/svg+xml;base64,PHN2Zy8+","sizes":["any"]}]`
)

// icon and dataIcon return fresh icon lists, which a test may change.
func icon() []protocol.Icon {
	return []protocol.Icon{{Src: "https://example.com/icon.png", MimeType: "image/png", Sizes: []string{"48x48", "96x96"}, Theme: protocol.ThemeLight}}
}

func dataIcon() []protocol.Icon {
	return []protocol.Icon{{Src: "data:image/svg+xml;base64,PHN2Zy8+", Sizes: []string{"any"}}}
}

// iconConfig has icons on the server, a tool, a resource, a template and a prompt.
func iconConfig() toolgrain.Config {
	read := resources.ReaderFunc(func(ctx context.Context, req *resources.ReadRequest) (*resources.ReadResult, error) {
		return resources.Text(req.URI, "text/plain", "x"), nil
	})
	return toolgrain.Config{
		Name: "icons", Version: "1", Icons: icon(),
		Tools:             []tools.Tool{{Name: "echo", Description: "Echoes.", Icons: dataIcon(), Handler: demo.Tools()[0].Handler}},
		Resources:         []resources.Resource{{URI: "file:///a", Name: "a", Icons: icon(), Reader: read}},
		ResourceTemplates: []resources.Template{{URITemplate: "file:///t/{id}", Name: "t", Icons: dataIcon(), Reader: read}},
		Prompts: []prompts.Prompt{{Name: "p", Description: "P.", Icons: icon(),
			Handler: prompts.HandlerFunc(func(ctx context.Context, req *prompts.GetRequest) (*prompts.GetResult, error) {
				return &prompts.GetResult{Messages: []protocol.PromptMessage{prompts.Text(protocol.RoleUser, "p")}}, nil
			})}},
	}
}

func TestIconsByRevision(t *testing.T) {
	t.Parallel()
	const caps = `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{}}`
	lists := []struct{ method, with, without string }{
		{"tools/list", `{"tools":[{"name":"echo","description":"Echoes.","inputSchema":{"properties":{"text":{"type":"string"}},"additionalProperties":false,"type":"object","required":["text"]},"icons":` + dataIconJSON + `}]}`,
			`{"tools":[{"name":"echo","description":"Echoes.","inputSchema":{"properties":{"text":{"type":"string"}},"additionalProperties":false,"type":"object","required":["text"]}}]}`},
		{"resources/list", `{"resources":[{"uri":"file:///a","name":"a","icons":` + iconJSON + `}]}`, `{"resources":[{"uri":"file:///a","name":"a"}]}`},
		{"resources/templates/list", `{"resourceTemplates":[{"uriTemplate":"file:///t/{id}","name":"t","icons":` + dataIconJSON + `}]}`,
			`{"resourceTemplates":[{"uriTemplate":"file:///t/{id}","name":"t"}]}`},
		{"prompts/list", `{"prompts":[{"name":"p","description":"P.","icons":` + iconJSON + `}]}`, `{"prompts":[{"name":"p","description":"P."}]}`},
	}
	for _, version := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			has := version == "2025-11-25"
			c := startStdio(t, iconConfig())
			info := `{"name":"icons","version":"1"}`
			if has {
				info = `{"name":"icons","version":"1","icons":` + iconJSON + `}`
			}
			wantCaps := caps
			if version == "2024-11-05" {
				wantCaps = strings.Replace(caps, `,"completions":{}`, "", 1)
			}
			c.Expect(mcptest.InitializeAt(version, `{}`), `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"`+version+`","capabilities":`+wantCaps+`,"serverInfo":`+info+`}}`)
			for i, l := range lists {
				want := l.without
				if has {
					want = l.with
				}
				id := string(rune('1' + i))
				c.Expect(`{"jsonrpc":"2.0","id":`+id+`,"method":"`+l.method+`"}`, `{"jsonrpc":"2.0","id":`+id+`,"result":`+want+`}`)
			}
		})
	}
	t.Run("2026-07-28", func(t *testing.T) {
		c := startStdio(t, iconConfig())
		serverInfo := `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"icons","version":"1","icons":` + iconJSON + `}}`
		c.Send(modernRequest(`"d"`, "server/discover", ""))
		if got := c.Recv(); !strings.Contains(got, serverInfo) {
			t.Errorf("server/discover: %s", got)
		}
		for i, l := range lists {
			id := string(rune('1' + i))
			c.Send(modernRequest(id, l.method, ""))
			got := c.Recv()
			if !strings.Contains(got, `"icons":`+iconJSON) && !strings.Contains(got, `"icons":`+dataIconJSON) || !strings.Contains(got, serverInfo) {
				t.Errorf("%s: %s", l.method, got)
			}
		}
	})
}

func TestIconConstructionErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give []protocol.Icon
		want string // the reason, after "icon N: "
	}{
		{"http", []protocol.Icon{{Src: "http://example.com/i.png"}}, `src "http://example.com/i.png" is not an https: or data: URI`},
		{"javascript", []protocol.Icon{{Src: "javascript:alert(1)"}}, `src "javascript:alert(1)" is not an https: or data: URI`},
		{"file", []protocol.Icon{{Src: "file:///etc/passwd"}}, `src "file:///etc/passwd" is not an https: or data: URI`},
		{"relative", []protocol.Icon{{Src: "/icon.png"}}, `src "/icon.png" is not an https: or data: URI`},
		{"no host", []protocol.Icon{{Src: "https:///icon.png"}}, `src "https:///icon.png" is not an https: URL with a host`},
		{"data not base64", []protocol.Icon{{Src: "data:image/png,abc"}}, `src: a data: URI must hold base64 data (data:image/png;base64,...)`},
		{"data not an image", []protocol.Icon{{Src: "data:text/html;base64,PGI+"}}, `src: the media type "text/html" of the data: URI is not an image type (image/...)`},
		{"data bad base64", []protocol.Icon{{Src: "data:image/png;base64,!!!"}}, `src: the data of the data: URI is not valid base64`},
		{"mime type", []protocol.Icon{{Src: "https://example.com/i", MimeType: "text/html"}}, `mimeType "text/html" is not an image type (image/...)`},
		{"size", []protocol.Icon{{Src: "https://example.com/i", Sizes: []string{"48"}}}, `size "48" is neither WxH (as 48x48) nor any`},
		{"size zero", []protocol.Icon{{Src: "https://example.com/i", Sizes: []string{"0x48"}}}, `size "0x48" is neither WxH (as 48x48) nor any`},
		{"theme", []protocol.Icon{{Src: "https://example.com/i", Theme: "blue"}}, `theme "blue" is neither "light" nor "dark"`},
		{"second", []protocol.Icon{icon()[0], {Src: ""}}, `src is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index := "icon 0: "
			if len(tt.give) > 1 {
				index = "icon 1: "
			}
			places := []struct {
				where string
				cfg   func(*toolgrain.Config)
				want  string
			}{
				{"server", func(c *toolgrain.Config) { c.Icons = tt.give }, "toolgrain: server " + index + tt.want},
				{"tool", func(c *toolgrain.Config) { c.Tools[0].Icons = tt.give }, `tool "echo": ` + index + tt.want},
				{"resource", func(c *toolgrain.Config) { c.Resources[0].Icons = tt.give }, `resource "file:///a": ` + index + tt.want},
				{"template", func(c *toolgrain.Config) { c.ResourceTemplates[0].Icons = tt.give }, `template "file:///t/{id}": ` + index + tt.want},
				{"prompt", func(c *toolgrain.Config) { c.Prompts[0].Icons = tt.give }, `prompt "p": ` + index + tt.want},
			}
			for _, p := range places {
				cfg := iconConfig()
				p.cfg(&cfg)
				srv, err := toolgrain.NewServer(cfg)
				if err == nil {
					srv.Close()
					t.Fatalf("%s: NewServer accepted %+v", p.where, tt.give)
				}
				if err.Error() != p.want {
					t.Errorf("%s:\n got %v\nwant %s", p.where, err, p.want)
				}
				var ie *protocol.IconError
				if (p.where == "server" || p.where == "tool") && !errors.As(err, &ie) {
					t.Errorf("%s: %v does not wrap a *protocol.IconError", p.where, err)
				}
			}
		})
	}
}

// TestIconsAreCopied: the definitions' icons can change after NewServer without changing what
// is served.
func TestIconsAreCopied(t *testing.T) {
	t.Parallel()
	cfg := iconConfig()
	cfg.Icons = []protocol.Icon{{Src: "https://example.com/a.png", Sizes: []string{"16x16"}}}
	c := startStdio(t, cfg)
	cfg.Icons[0].Sizes[0] = "32x32"
	cfg.Tools[0].Icons[0].Src = "https://evil.example/x.png"
	c.Send(mcptest.InitializeAt("2025-11-25", `{}`))
	if got := c.Recv(); !strings.Contains(got, `"icons":[{"src":"https://example.com/a.png","sizes":["16x16"]}]`) {
		t.Errorf("initialize: %s", got)
	}
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if got := c.Recv(); strings.Contains(got, "evil") {
		t.Errorf("tools/list: %s", got)
	}
}
