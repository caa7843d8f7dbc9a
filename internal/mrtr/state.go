// Package mrtr seals and opens the requestState of multi-round-trip requests (MCP 2026-07-28):
// the state a server hands a client with an input_required result and gets back, byte for byte,
// when the client retries the request with its answers.
//
// The client holds the state, so it is attacker-controlled input: a [Sealer] protects it with
// HMAC-SHA256 under a key of the server's (shared by every process that must accept it), binds
// it to the request it belongs to (method, target, a digest of the arguments, the caller's
// subject) and to an expiry, and bounds its size. A state that fails any check is rejected with
// an error that says which, never opened silently.
package mrtr

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Limits and defaults.
const (
	// MaxSize bounds a sealed state, in bytes: a bigger one is not sealed ([ErrTooLarge]), and
	// one presented bigger is not opened.
	MaxSize = 64 << 10
	// DefaultTTL is how long a state stays valid when [NewSealer] is given no TTL.
	DefaultTTL = 10 * time.Minute
	// KeySize is the size of a key made by [NewKey], and the least a key may have.
	KeySize = 32
)

// Errors of [Sealer.Open] and [Sealer.Seal]; their texts are public (they answer the client).
var (
	ErrTampered = errors.New("requestState failed verification")
	ErrExpired  = errors.New("requestState has expired")
	ErrTooLarge = fmt.Errorf("requestState is larger than %d bytes", MaxSize)
	ErrMismatch = errors.New("requestState belongs to another request")
)

// State is what a sealed requestState holds.
type State struct {
	// Method, Target and Digest name the request: its method, the tool or prompt name or the
	// resource URI, and [Digest] of its arguments.
	Method string `json:"m"`
	Target string `json:"t"`
	Digest string `json:"d"`
	// Subject is the authenticated caller's subject ("" without auth).
	Subject string `json:"s,omitempty"`
	// Expires is the Unix time in seconds after which the state is refused.
	Expires int64 `json:"e"`
	// Round counts the input_required results of this request so far (1 for the first).
	Round int `json:"n"`
	// Responses are the answers the handler has consumed so far, by input key, replayed to it
	// on the next round.
	Responses map[string]json.RawMessage `json:"r,omitempty"`
	// Handler is the handler's own state (client.SetState), carried from round to round.
	Handler []byte `json:"h,omitempty"`
}

// Matches reports whether st belongs to the request given.
func (st *State) Matches(method, target, digest, subject string) bool {
	return st.Method == method && st.Target == target && st.Digest == digest && st.Subject == subject
}

// Sealer seals and opens states. It is safe for concurrent use.
type Sealer struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// NewKey returns a random key of [KeySize] bytes.
func NewKey() []byte {
	k := make([]byte, KeySize)
	_, _ = rand.Read(k) // crypto/rand.Read never fails
	return k
}

// NewSealer returns a sealer with key, which must have at least [KeySize] bytes, and states
// valid for ttl (0 means [DefaultTTL]).
func NewSealer(key []byte, ttl time.Duration) (*Sealer, error) {
	if len(key) < KeySize {
		return nil, fmt.Errorf("mrtr: the request state key has %d bytes; it needs at least %d", len(key), KeySize)
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Sealer{key: bytes.Clone(key), ttl: ttl, now: time.Now}, nil
}

// Seal sets st's expiry and returns it sealed: base64url(JSON) "." base64url(HMAC).
func (s *Sealer) Seal(st *State) (string, error) {
	st.Expires = s.now().Add(s.ttl).Unix()
	payload, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("mrtr: encode state: %w", err)
	}
	enc := base64.RawURLEncoding
	n := enc.EncodedLen(len(payload)) + 1 + enc.EncodedLen(sha256.Size)
	if n > MaxSize {
		return "", ErrTooLarge
	}
	b := make([]byte, n)
	enc.Encode(b, payload)
	i := enc.EncodedLen(len(payload))
	b[i] = '.'
	enc.Encode(b[i+1:], s.mac(payload))
	return string(b), nil
}

// Open verifies a sealed state and returns what it holds: [ErrTooLarge] for one over
// [MaxSize], [ErrTampered] for one that is malformed or whose MAC does not verify, [ErrExpired]
// for one past its expiry.
func (s *Sealer) Open(sealed string) (*State, error) {
	if len(sealed) > MaxSize {
		return nil, ErrTooLarge
	}
	body, sig, ok := strings.Cut(sealed, ".")
	// Strict: a lenient decoder ignores the unused bits of the last character, so several
	// strings would open as one state.
	enc := base64.RawURLEncoding.Strict()
	payload, err1 := enc.DecodeString(body)
	mac, err2 := enc.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac(payload)) {
		return nil, ErrTampered
	}
	var st State
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, ErrTampered // sealed by a key-holder, yet unreadable: not ours to trust
	}
	if s.now().Unix() > st.Expires {
		return nil, ErrExpired
	}
	return &st, nil
}

func (s *Sealer) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("toolgrain/requestState/v1\x00"))
	h.Write(payload)
	return h.Sum(nil)
}

// Digest returns a short digest of a request's arguments that does not depend on their
// spelling: member order and white space do not change it, a changed value does. Absent, null
// and empty-object arguments share one digest.
func Digest(args json.RawMessage) string {
	canon := []byte("{}")
	if len(bytes.TrimSpace(args)) > 0 {
		d := json.NewDecoder(bytes.NewReader(args))
		d.UseNumber()
		var v any
		if d.Decode(&v) == nil && v != nil {
			if b, err := json.Marshal(v); err == nil { // maps encode with sorted keys
				canon = b
			}
		}
	}
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}
