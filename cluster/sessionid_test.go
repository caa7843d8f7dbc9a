package cluster

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestSessionIDNamesItsHome(t *testing.T) {
	a := testNode("127.0.0.1:7001", "127.0.0.1:7002")
	b := testNode("127.0.0.1:7002", "127.0.0.1:7001")
	sid := a.NewSessionID()
	if !protocol.ValidSessionID(sid) {
		t.Fatalf("minted id %q is not a valid session id", sid)
	}
	for _, n := range []*Node{a, b} {
		if home, ok := n.Home(sid); !ok || home != "127.0.0.1:7001" {
			t.Fatalf("Home(%q) on %s = %q, %v; want 127.0.0.1:7001, true", sid, n.addr, home, ok)
		}
	}
	if other := a.NewSessionID(); other == sid {
		t.Fatalf("two ids are equal: %q", sid)
	}
	// A member that has not seen the home in the topology cannot resolve it.
	if home, ok := testNode("127.0.0.1:7003").Home(sid); ok {
		t.Fatalf("a member that never saw the home resolves it to %q", home)
	}
}

// TestSessionIDHidesItsHome: a session id names its home by the member's opaque reference, the
// one task ids use, not by its address in any encoding a client could read.
func TestSessionIDHidesItsHome(t *testing.T) {
	const addr = "127.0.0.1:7001"
	a := testNode(addr)
	sid := a.NewSessionID()
	home, _, _ := strings.Cut(sid, ".")
	if home != a.TaskHome() {
		t.Errorf("session id %q names its home %q, want the member's reference %q", sid, home, a.TaskHome())
	}
	for _, part := range strings.Split(sid, ".") {
		for _, dec := range []func(string) ([]byte, error){
			base64.RawURLEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
			base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString, taskHomeEncoding.DecodeString,
		} {
			if b, err := dec(part); err == nil && bytes.Contains(b, []byte("127.0.0.1")) {
				t.Errorf("session id %q carries the home's address: %q", sid, b)
			}
		}
		if strings.Contains(part, "127") {
			t.Errorf("session id %q carries the home's address in clear", sid)
		}
	}
}

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func TestSessionIDForgeriesNameNoHome(t *testing.T) {
	a := testNode("127.0.0.1:7001", "127.0.0.1:7002")
	sid := a.NewSessionID()
	parts := strings.Split(sid, ".")
	// Another member's reference in place of the home's: the MAC covers it.
	swapped := taskHome(a.key, "127.0.0.1:7002") + "." + parts[1] + "." + parts[2]
	// The MAC's last character carries 2 bits of the MAC and 4 unused bits: changing an unused
	// bit must not give a second string that verifies as the same id.
	lastBits := sid[:len(sid)-1] + string(b64Alphabet[strings.IndexByte(b64Alphabet, sid[len(sid)-1])^1])
	other := testNode("127.0.0.1:7001")
	other.key = sessionKey(bytes.Repeat([]byte{8}, 32))
	other.ref = taskHome(other.key, other.addr)
	// The address in clear, signed with the right key: the old form names no home any more.
	plain := b64.EncodeToString([]byte("127.0.0.1:7001")) + "." + parts[1]
	plain += "." + b64.EncodeToString(sessionMAC(a.key, plain))
	tests := []struct {
		name string
		give string
	}{
		{"empty", ""},
		{"plain_random", protocol.NewSessionID()},
		{"home_swapped", swapped},
		{"mac_cut", sid[:len(sid)-1]},
		{"mac_unused_bits", lastBits},
		{"mac_dropped", parts[0] + "." + parts[1]},
		{"random_changed", parts[0] + ".AAAA" + parts[1][4:] + "." + parts[2]},
		{"other_secret", other.NewSessionID()},
		{"address_in_clear", plain},
		{"too_long", sid + strings.Repeat("A", 300)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if home, ok := a.Home(tt.give); ok {
				t.Fatalf("Home(%q) = %q, true; want no home", tt.give, home)
			}
		})
	}
}
