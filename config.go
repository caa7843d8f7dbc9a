package toolgrain

import "time"

// DiagnosticsConfig bounds the delivery of unexpected failures to [Config].OnError, which runs
// one report at a time, off the path of the calls: a callback that blocks or is slow costs
// reports, never calls. The zero value is usable.
type DiagnosticsConfig struct {
	// Queue bounds the reports waiting for OnError; further ones are dropped and counted
	// ([Stats].DroppedReports). 0 means 1024.
	Queue int
	// CallbackTimeout bounds one OnError call; a slower one is abandoned (left to finish on
	// its own, counted in [Stats].AbandonedCallbacks) and the next report starts. 0 means
	// [DefaultCallbackTimeout].
	CallbackTimeout time.Duration
}

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
