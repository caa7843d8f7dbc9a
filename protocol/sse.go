package protocol

// SSESessionParam is the query parameter that names the session in the POST URL of the
// HTTP+SSE transport (MCP 2024-11-05), which the stream's endpoint event gives the client: for
// example /messages?sessionId=....
const SSESessionParam = "sessionId"
