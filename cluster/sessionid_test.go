package cluster

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

// TestSessionIDNamesItsHome: every member resolves a session id to its home's address, a member
// that has never seen the home in the topology included (its address is in the id, sealed).
func TestSessionIDNamesItsHome(t *testing.T) {
	a := testNode("127.0.0.1:7001", "127.0.0.1:7002")
	b := testNode("127.0.0.1:7002", "127.0.0.1:7001")
	stranger := testNode("127.0.0.1:7003") // it has seen no other member
	sid := a.newSessionID()
	if !protocol.ValidSessionID(sid) {
		t.Fatalf("minted id %q is not a valid session id", sid)
	}
	for _, n := range []*Node{a, b, stranger} {
		if home, ok := n.sessionHome(sid); !ok || home != "127.0.0.1:7001" {
			t.Fatalf("Home(%q) on %s = %q, %v; want 127.0.0.1:7001, true", sid, n.addr, home, ok)
		}
	}
	other := a.newSessionID()
	if other == sid {
		t.Fatalf("two ids are equal: %q", sid)
	}
	// One member's ids share their home part (a load balancer may route by it); another's differ.
	first := func(s string) string { h, _, _ := strings.Cut(s, "."); return h }
	if first(other) != first(sid) {
		t.Errorf("two ids of one member name their home differently: %q, %q", sid, other)
	}
	if first(b.newSessionID()) == first(sid) {
		t.Errorf("ids of two members name the same home: %q", first(sid))
	}
}

// TestSessionIDHidesItsHome: a session id names its home by the member's address sealed under a
// key of the cluster's, not by its address in any encoding a client could read, nor by its
// task-id reference; and IPv4 addresses of every length seal to one length.
func TestSessionIDHidesItsHome(t *testing.T) {
	const addr = "127.0.0.1:7001"
	a := testNode(addr)
	sid := a.newSessionID()
	home, _, _ := strings.Cut(sid, ".")
	if home == a.ownTaskHome() {
		t.Errorf("session id %q names its home by the member's task-id reference", sid)
	}
	for _, part := range strings.Split(sid, ".") {
		for _, dec := range []func(string) ([]byte, error){
			base64.RawURLEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
			base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString, taskHomeEncoding.DecodeString,
		} {
			if b, err := dec(part); err == nil && (bytes.Contains(b, []byte("127.0.0.1")) || bytes.Contains(b, []byte("7001"))) {
				t.Errorf("session id %q carries the home's address: %q", sid, b)
			}
		}
		if strings.Contains(part, "127") || strings.Contains(part, "7001") {
			t.Errorf("session id %q carries the home's address in clear", sid)
		}
	}
	short, _ := a.ids.sealHome("1.2.3.4:5")
	long, _ := a.ids.sealHome("255.255.255.255:65535")
	if len(short) != len(long) || len(short) != len(home) {
		t.Errorf("IPv4 homes seal to lengths %d, %d and %d, want one length", len(short), len(long), len(home))
	}
}

// TestSessionIDLongestAddress: the longest address a member may have names its sessions within
// the 256 characters of an id; a longer one is refused (Start and Attach fail with it).
func TestSessionIDLongestAddress(t *testing.T) {
	k := newIDKeys(sessionKey(bytes.Repeat([]byte{7}, 32)))
	addr := strings.Repeat("h", MaxAddrSize-5) + ":7001"
	home, err := k.sealHome(addr)
	if err != nil {
		t.Fatal(err)
	}
	sid := k.mint(home)
	if !protocol.ValidSessionID(sid) {
		t.Fatalf("id of a %d-byte address is not a valid session id (%d characters)", len(addr), len(sid))
	}
	if got, ok := k.homeOf(sid); !ok || got != addr {
		t.Fatalf("homeOf = %q, %v; want %q", got, ok, addr)
	}
	for _, bad := range []string{"", "h" + addr, "127.0.0.1:7001\x00"} {
		if home, err := k.sealHome(bad); err == nil {
			t.Errorf("sealHome(%q) = %q, want an error", bad, home)
		}
	}
}

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func TestSessionIDForgeriesNameNoHome(t *testing.T) {
	a := testNode("127.0.0.1:7001", "127.0.0.1:7002")
	sid := a.newSessionID()
	parts := strings.Split(sid, ".")
	// signed returns head signed with a's key: a forgery by a client that had the MAC key but
	// not the sealing keys, to show that the sealed home stands on its own too.
	signed := func(head string) string { return head + "." + b64.EncodeToString(a.ids.sessionMAC(head)) }
	// Another member's home in place of this one's: the MAC covers it.
	b, _ := a.ids.sealHome("127.0.0.1:7002")
	swapped := b + "." + parts[1] + "." + parts[2]
	// The MAC's last character carries 2 bits of the MAC and 4 unused bits: changing an unused
	// bit must not give a second string that verifies as the same id.
	lastBits := sid[:len(sid)-1] + string(b64Alphabet[strings.IndexByte(b64Alphabet, sid[len(sid)-1])^1])
	other := testNodeKey(sessionKey(bytes.Repeat([]byte{8}, 32)), "127.0.0.1:7001")
	// The sealed home with one bit of its ciphertext flipped, then signed.
	raw, _ := b64.DecodeString(parts[0])
	raw[homeNonceSize] ^= 1
	flipped := signed(b64.EncodeToString(raw) + "." + parts[1])
	// The right nonce and key, but the address padded with a zero block too many: not the one
	// form of that address.
	nonce := a.ids.homeNonce("127.0.0.1:7001")
	padded := make([]byte, 2*homePad)
	copy(padded, "127.0.0.1:7001")
	overPadded := signed(b64.EncodeToString(a.ids.aead.Seal(nonce, nonce, padded, homeAAD)) + "." + parts[1])
	// A nonce that is not the address's: not the one form either.
	padded = padded[:homePad]
	wrongNonce := bytes.Repeat([]byte{1}, homeNonceSize)
	otherNonce := signed(b64.EncodeToString(a.ids.aead.Seal(wrongNonce, wrongNonce, padded, homeAAD)) + "." + parts[1])
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
		{"other_secret", other.newSessionID()},
		{"home_of_other_secret_signed", signed(other.home + "." + parts[1])},
		{"home_bit_flipped_signed", flipped},
		{"home_over_padded_signed", overPadded},
		{"home_other_nonce_signed", otherNonce},
		// The earlier forms, signed with the right key: they name no home any more.
		{"address_in_clear", signed(b64.EncodeToString([]byte("127.0.0.1:7001")) + "." + parts[1])},
		{"task_reference", signed(a.ownTaskHome() + "." + parts[1])},
		{"too_long", sid + strings.Repeat("A", 300)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if home, ok := a.sessionHome(tt.give); ok {
				t.Fatalf("Home(%q) = %q, true; want no home", tt.give, home)
			}
		})
	}
}

// BenchmarkSessionIDHome is the cost a member pays to resolve a legacy request's session id to
// its home (the MAC, then opening the sealed address).
func BenchmarkSessionIDHome(b *testing.B) {
	n := testNode("127.0.0.1:7001")
	sid := n.newSessionID()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := n.sessionHome(sid); !ok {
			b.Fatal("no home")
		}
	}
}
