package toolgrain

import "time"

// RequestStateConfig protects the requestState the server hands a modern client that must
// answer input_required (MCP 2026-07-28 multi-round-trip requests), which the client sends
// back with its answers. The zero value is usable.
type RequestStateConfig struct {
	// Key is the key (at least 32 bytes) that protects a state, with HMAC-SHA256. Servers
	// that share it accept each other's states, which lets any of several server processes
	// (the members of a cluster) take a client's retry. Nil means a random key made by
	// NewServer: a state is then accepted by this server only, and not after a restart.
	Key []byte
	// TTL is how long a state is accepted after it was issued. 0 means 10 minutes.
	TTL time.Duration
}
