package protocol_test

import (
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestCheckIconsAccepts(t *testing.T) {
	for _, ic := range []protocol.Icon{
		{Src: "https://example.com/icon.png"},
		{Src: "HTTPS://example.com:8443/i?v=2", MimeType: "image/png", Sizes: []string{"16x16", "any", "512x512"}, Theme: protocol.ThemeDark},
		{Src: "data:image/png;base64,iVBORw0KGgo=", Theme: protocol.ThemeLight},
		{Src: "data:image/svg+xml;charset=utf-8;base64,PHN2Zy8+", MimeType: "image/svg+xml"},
		{Src: "data:image/webp;base64,UklGRg"}, // unpadded
	} {
		if err := protocol.CheckIcons([]protocol.Icon{ic}); err != nil {
			t.Errorf("%+v: %v", ic, err)
		}
	}
	if err := protocol.CheckIcons(nil); err != nil {
		t.Errorf("no icons: %v", err)
	}
}
