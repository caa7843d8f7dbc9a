package protocol_test

import (
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestCheckMethodName(t *testing.T) {
	for _, name := range []string{"acme/reindex", "com.example/search/rebuild", "a-b.c2/x_y.z", "io.modelcontextprotocol/ui-x", "toolsx/list"} {
		if err := protocol.CheckMethodName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", "initialize", "ping", "tools/call", "tools/acme", "tasks/list", "server/discover",
		"notifications/acme/x", "reindex", "/x", "acme/", "acme/x/", "-acme/x", "acme-/x", "ac me/x", "acme/x y", "rpc.x/y", "acme..b/x", "é/x"} {
		if err := protocol.CheckMethodName(name); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
}

func TestCheckExtensionID(t *testing.T) {
	for _, id := range []string{"com.example/search", "io.modelcontextprotocol/ui", "acme/x.y_z-1"} {
		if err := protocol.CheckExtensionID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", "search", "/search", "com.example/", "com.example/a/b", "com..example/x", "1com/x", "com.example/-x"} {
		if err := protocol.CheckExtensionID(id); err == nil {
			t.Errorf("%q accepted", id)
		}
	}
}
