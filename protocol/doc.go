// Package protocol holds the wire layer of the engine: the JSON-RPC 2.0
// codec ([Decode], [EncodeResult], [EncodeError], [EncodeNotification],
// [EncodeRequest]), request ids that keep their exact JSON text ([ID]), the
// wire error type ([WireError]) and its codes, the MCP types the engine
// reads and writes ([InitializeParams], [Tool], [CallToolResult], ...),
// protocol version negotiation ([NegotiateVersion]) and the stdio framing
// of MCP: one message per line ([LineReader], [StreamWriter]).
//
// The package knows nothing about sessions, tools or actors and imports
// only the standard library. Everything in it is safe for concurrent use
// unless a type's documentation says otherwise.
//
// The types are those of MCP 2026-07-28 ([LatestModernVersion]) and of
// 2025-11-25 ([LatestLegacyVersion]), the newest revisions of the two eras;
// a session of an older revision is answered in that revision's shape
// ([Revision.Shape]). JSON-RPC batches, which 2025-03-26 alone has, are read
// by [DecodeInput] and served or refused by the engine.
package protocol
