package protocol

// LineBufferCap exposes the capacity of r's line buffer, so tests can check
// that an over-long line is not buffered whole.
func LineBufferCap(r *LineReader) int { return cap(r.line) }

// CachedCapabilities is how many capabilities objects the envelope reader keeps.
func CachedCapabilities() int { return lenOf(capsCache.m.Load()) }

// CapabilitiesCacheMax is the most it keeps.
const CapabilitiesCacheMax = capsCacheMax
