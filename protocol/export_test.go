package protocol

// LineBufferCap exposes the capacity of r's line buffer, so tests can check
// that an over-long line is not buffered whole.
func LineBufferCap(r *LineReader) int { return cap(r.line) }
