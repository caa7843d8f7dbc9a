// Package principal names who the state a server keeps for a caller belongs to: its legacy
// HTTP sessions (and their places under the per-subject limit), its tasks, the requestState of
// its modern input rounds, its rate limit.
//
// A verifier's Subject is not one namespace: package auth takes a token's sub, and, for a token
// without one (client credentials), its client_id. A client whose client_id equals a user's sub
// would otherwise share that user's sessions, tasks and requests. [Key] keeps them apart: the
// subject of a token whose client_id claim is the subject itself (a client acting on its own
// behalf, with or without a sub: RFC 9068 has client-credentials tokens carry the client's id
// in sub too) is a client's, every other subject a user's.
package principal

import (
	"strings"

	"github.com/toolgrain/toolgrain/tools"
)

// Key returns the key the state of the caller id is bound to: "" without an identity (or with
// an empty subject); "client:" and the subject when the identity's client_id claim
// ([tools.Identity.Claim]) is its subject; "sub:" and the subject otherwise, which is every
// identity whose verifier gives no claims. Two keys are equal only when the callers are.
func Key(id *tools.Identity) string {
	if id == nil || id.Subject == "" {
		return ""
	}
	if IsClient(id) {
		return Client(id.Subject)
	}
	return User(id.Subject)
}

// IsClient reports whether the subject of id is the id of the client the token was issued to,
// as its client_id claim says.
func IsClient(id *tools.Identity) bool {
	cid := id.Claim("client_id")
	return len(cid) == 1 && cid[0] == id.Subject
}

// The prefixes of the keys of a user's and a client's subjects.
const (
	userPrefix   = "sub:"
	clientPrefix = "client:"
)

// User returns the key of the user whose subject is subject: what Key returns for every identity
// with that subject but a client's own.
func User(subject string) string { return userPrefix + subject }

// Client returns the key of the client whose id is id, acting on its own behalf: what Key
// returns for an identity with that subject and that client_id.
func Client(id string) string { return clientPrefix + id }

// Parse returns the subject of a key of Key, User or Client and whether it is a client's; ok is
// false for a string that is no such key (the empty one included).
func Parse(key string) (subject string, client, ok bool) {
	if s, ok := strings.CutPrefix(key, userPrefix); ok && s != "" {
		return s, false, true
	}
	if s, ok := strings.CutPrefix(key, clientPrefix); ok && s != "" {
		return s, true, true
	}
	return "", false, false
}
