package cluster

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// A session id names the member that holds the session (its home) in a form no client can
// forge, nor read, and that every member resolves on its own, without having seen the home in
// the cluster's topology:
//
//	<home> "." 128 random bits (rand.Text) "." base64url(HMAC-SHA256(key, the first two parts)[:16])
//
// <home> is the home's remote address sealed with deterministic authenticated encryption:
// base64url(nonce || AES-256-GCM(address padded with zero bytes to a multiple of homePad)),
// the nonce being the first 12 bytes of an HMAC-SHA256 of the address (a synthetic nonce: the
// same address always seals to the same <home>, so that the ids of one member share it, and two
// addresses never share a nonce, barring a 96-bit collision). key, the MAC's, and the two
// sealing keys are derived from [Config].Secret, which every member shares. A client learns
// nothing of the address but its padded length, and cannot make an id name another address:
// the MAC and the GCM tag both cover it, and a member opens <home> only when its nonce is the
// one its address derives.
//
// An id that does not verify names no home: the member that receives it serves it locally,
// where it is unknown (404). Ids of the earlier forms (the address in clear, or the member's
// task-id reference) do not verify.

// sessionMACSize is the length of the MAC kept in an id, in bytes (128 bits).
const sessionMACSize = 16

// homeNonceSize is the length of a sealed home's synthetic nonce (GCM's standard nonce).
const homeNonceSize = 12

// homePad is the block a home address is padded to before sealing, so that ids tell little of
// its length: an IPv4 address and port seal to one length, most host names to another.
const homePad = 32

// MaxAddrSize is the longest remote address ([Config].Addr, or the host's for [Attach]) a member
// may have, in bytes: its sessions' ids name it sealed, within the 256 characters of an id.
const MaxAddrSize = 96

// b64 decodes strictly: the last character of an unpadded encoding has unused bits, which a
// lenient decoder ignores, so several strings would verify as one id.
var b64 = base64.RawURLEncoding.Strict()

// sessionKey derives the key that signs session ids from the cluster secret, so that the secret
// may also serve other purposes (the request-state key) without the two uses meeting.
func sessionKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("toolgrain cluster session id v1"))
	return m.Sum(nil)
}

// subKey derives a key for one purpose from the session key.
func subKey(key []byte, purpose string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// homeAAD binds a sealed home to its use.
var homeAAD = []byte("toolgrain cluster session home v1")

// idKeys are the keys of a cluster's session ids, derived once from the session key.
type idKeys struct {
	mac   []byte      // the id's MAC
	nonce []byte      // the synthetic nonce's HMAC
	aead  cipher.AEAD // AES-256-GCM, sealing the home
}

// newIDKeys derives the keys of session ids from the session key (sessionKey).
func newIDKeys(key []byte) *idKeys {
	block, err := aes.NewCipher(subKey(key, "toolgrain cluster session home seal v1"))
	if err != nil {
		panic(err) // a 32-byte key: never
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // a standard block size and nonce: never
	}
	return &idKeys{mac: key, nonce: subKey(key, "toolgrain cluster session home nonce v1"), aead: aead}
}

// homeNonce returns the synthetic nonce of addr.
func (k *idKeys) homeNonce(addr string) []byte {
	m := hmac.New(sha256.New, k.nonce)
	m.Write([]byte(addr))
	return m.Sum(nil)[:homeNonceSize]
}

// sealHome returns the <home> part of the session ids of the member at addr, or an error when
// addr is too long for an id (MaxAddrSize) or empty.
func (k *idKeys) sealHome(addr string) (string, error) {
	if addr == "" || len(addr) > MaxAddrSize || strings.IndexByte(addr, 0) >= 0 {
		return "", fmt.Errorf("cluster: remote address %q cannot name a session's home (1 to %d bytes, no NUL)", addr, MaxAddrSize)
	}
	padded := make([]byte, (len(addr)+homePad-1)/homePad*homePad)
	copy(padded, addr)
	nonce := k.homeNonce(addr)
	return b64.EncodeToString(k.aead.Seal(nonce, nonce, padded, homeAAD)), nil
}

// openHome returns the address a sealed home names, and false when it is not one sealHome made
// with these keys.
func (k *idKeys) openHome(home string) (string, bool) {
	sealed, err := b64.DecodeString(home)
	if err != nil || len(sealed) < homeNonceSize+homePad {
		return "", false
	}
	nonce := sealed[:homeNonceSize]
	padded, err := k.aead.Open(nil, nonce, sealed[homeNonceSize:], homeAAD)
	if err != nil || len(padded)%homePad != 0 {
		return "", false
	}
	addr := string(bytes.TrimRight(padded, "\x00"))
	if addr == "" || len(padded)-len(addr) >= homePad || !hmac.Equal(nonce, k.homeNonce(addr)) {
		return "", false // not the one form sealHome gives
	}
	return addr, true
}

// mint returns a new session id homed at the member whose sealed home is home.
func (k *idKeys) mint(home string) string {
	head := home + "." + rand.Text()
	return head + "." + b64.EncodeToString(k.sessionMAC(head))
}

func (k *idKeys) sessionMAC(head string) []byte {
	m := hmac.New(sha256.New, k.mac)
	m.Write([]byte(head))
	return m.Sum(nil)[:sessionMACSize]
}

// homeOf returns the address of the home a session id names, and false when the id is not one
// this cluster minted.
func (k *idKeys) homeOf(sid string) (string, bool) {
	i := strings.LastIndexByte(sid, '.')
	if i < 0 || len(sid) > 256 {
		return "", false
	}
	head := sid[:i]
	mac, err := b64.DecodeString(sid[i+1:])
	if err != nil || !hmac.Equal(mac, k.sessionMAC(head)) {
		return "", false
	}
	home, _, ok := strings.Cut(head, ".")
	if !ok {
		return "", false
	}
	return k.openHome(home)
}
