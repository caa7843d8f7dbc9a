package engine

// Stream is where the answers to one inbound message go: the stdio writer shared by a whole
// connection, or the response of one HTTP POST. Implementations are safe for concurrent use.
type Stream interface {
	// Send queues one encoded JSON-RPC message. It must not block on I/O: it runs under the
	// call's cancellation lock and inside actors.
	Send(frame []byte)
	// Close says that nothing more will be sent for this message: its response went out, or
	// the call was silenced. An HTTP stream ends its response; stdio does nothing. Close may be
	// called more than once.
	Close()
}

// Disconnecter is implemented by a [Stream] whose transport can close the connection carrying it
// without ending it: an HTTP POST answered as a resumable SSE stream. The client reconnects and
// resumes the stream, which goes on carrying the call's messages and its response.
type Disconnecter interface {
	// Disconnect asks the transport to close the stream's current connection once the messages
	// sent so far are written. It reports false when the stream cannot be resumed (a client
	// that takes a JSON answer only) or is already complete.
	Disconnect() bool
}
