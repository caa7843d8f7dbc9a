package mcptest

import "fmt"

// The protocol revisions the harness speaks: the last of the session era and the stateless one.
const (
	LegacyVersion = "2025-11-25"
	ModernVersion = "2026-07-28"
)

// InitRequest is the initialize request (id 0) of a client of 2025-11-25 that declares no
// capabilities.
const InitRequest = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// Initialized is the notification that ends a client's handshake.
const Initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// InitializeAt is an initialize request (id 0) asking for version, declaring the client
// capabilities caps (a JSON object).
func InitializeAt(version, caps string) string {
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":` + caps + `,"clientInfo":{"name":"test","version":"1"}}}`
}

// CancelFor is the cancellation of the request with the JSON id id.
func CancelFor(id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`, id)
}
