package toolgrain_test

import (
	"context"
	"fmt"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// Icons on the server and a tool reach the clients of 2025-11-25 and later; a bad one is an
// error from NewServer.
func Example_icons() {
	logo := []protocol.Icon{{
		Src:      "https://example.com/logo.png",
		MimeType: "image/png",
		Sizes:    []string{"48x48", "96x96"},
		Theme:    protocol.ThemeLight,
	}}
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Name:  "weather",
		Icons: logo,
		Tools: []tools.Tool{{
			Name:        "forecast",
			Description: "Tomorrow's weather.",
			Icons:       []protocol.Icon{{Src: "data:image/svg+xml;base64,PHN2Zy8+", Sizes: []string{"any"}}},
			Handler:     echoTool.Handler,
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	res, err := client.Initialize(ctx) // 2025-11-25
	if err != nil {
		fmt.Println(err)
		return
	}
	list, err := client.ListTools(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.ServerInfo.Icons[0].Src, list[0].Icons[0].Sizes)

	_, err = toolgrain.NewServer(toolgrain.Config{Icons: []protocol.Icon{{Src: "http://example.com/logo.png"}}})
	fmt.Println(err)
	// Output:
	// https://example.com/logo.png [any]
	// toolgrain: server icon 0: src "http://example.com/logo.png" is not an https: or data: URI
}
