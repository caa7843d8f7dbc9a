package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// A session id names the member that holds the session (its home) in a form no client can forge,
// nor read:
//
//	<home> "." 128 random bits (rand.Text) "." base64url(HMAC-SHA256(key, the first two parts)[:16])
//
// <home> is the member's opaque reference, the one task ids name it by (taskid.go: "m" and 120
// bits of an HMAC of its address), which a member resolves to the address of a member it has
// seen in the cluster's topology. key is derived from [Config].Secret, which every member
// shares. An id whose MAC does not verify, or whose home names no member seen, names no home:
// the member that receives it serves it locally, where it is unknown (404).

// sessionMACSize is the length of the MAC kept in an id, in bytes (128 bits).
const sessionMACSize = 16

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

// mintSessionID returns a new session id homed at the member whose reference is home.
func mintSessionID(key []byte, home string) string {
	head := home + "." + rand.Text()
	return head + "." + b64.EncodeToString(sessionMAC(key, head))
}

func sessionMAC(key []byte, head string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(head))
	return m.Sum(nil)[:sessionMACSize]
}

// homeOf returns the reference of the home a session id names, and false when the id is not
// one this cluster minted.
func homeOf(key []byte, sid string) (string, bool) {
	i := strings.LastIndexByte(sid, '.')
	if i < 0 || len(sid) > 256 {
		return "", false
	}
	head := sid[:i]
	mac, err := b64.DecodeString(sid[i+1:])
	if err != nil || !hmac.Equal(mac, sessionMAC(key, head)) {
		return "", false
	}
	home, _, ok := strings.Cut(head, ".")
	if !ok || home == "" {
		return "", false
	}
	return home, true
}
