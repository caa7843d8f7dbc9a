package cluster

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestSessionIDNamesItsHome(t *testing.T) {
	key := sessionKey(bytes.Repeat([]byte{7}, 32))
	sid := mintSessionID(key, "127.0.0.1:7001")
	if !protocol.ValidSessionID(sid) {
		t.Fatalf("minted id %q is not a valid session id", sid)
	}
	home, ok := homeOf(key, sid)
	if !ok || home != "127.0.0.1:7001" {
		t.Fatalf("homeOf(%q) = %q, %v; want 127.0.0.1:7001, true", sid, home, ok)
	}
	if other := mintSessionID(key, "127.0.0.1:7001"); other == sid {
		t.Fatalf("two ids are equal: %q", sid)
	}
}

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func TestSessionIDForgeriesNameNoHome(t *testing.T) {
	key := sessionKey(bytes.Repeat([]byte{7}, 32))
	sid := mintSessionID(key, "127.0.0.1:7001")
	parts := strings.Split(sid, ".")
	forgedHome := b64.EncodeToString([]byte("10.0.0.9:7001")) + "." + parts[1] + "." + parts[2]
	// The MAC's last character carries 2 bits of the MAC and 4 unused bits: changing an unused
	// bit must not give a second string that verifies as the same id.
	lastBits := sid[:len(sid)-1] + string(b64Alphabet[strings.IndexByte(b64Alphabet, sid[len(sid)-1])^1])
	otherKey := mintSessionID(sessionKey(bytes.Repeat([]byte{8}, 32)), "127.0.0.1:7001")
	tests := []struct {
		name string
		give string
	}{
		{"empty", ""},
		{"plain_random", protocol.NewSessionID()},
		{"home_swapped", forgedHome},
		{"mac_cut", sid[:len(sid)-1]},
		{"mac_unused_bits", lastBits},
		{"mac_dropped", parts[0] + "." + parts[1]},
		{"random_changed", parts[0] + ".AAAA" + parts[1][4:] + "." + parts[2]},
		{"other_secret", otherKey},
		{"too_long", sid + strings.Repeat("A", 300)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if home, ok := homeOf(key, tt.give); ok {
				t.Fatalf("homeOf(%q) = %q, true; want no home", tt.give, home)
			}
		})
	}
}
