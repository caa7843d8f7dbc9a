package protocol

import "slices"

// LatestLegacyVersion is the newest revision of the legacy era, whose clients open a session
// with the initialize handshake: the revision an initialize is answered with when it asks for
// a version the engine does not support. Later revisions are modern ([LatestModernVersion]);
// none of them has initialize.
const LatestLegacyVersion = "2025-11-25"

// SupportedVersions lists the MCP revisions a legacy session may negotiate,
// newest first: each session is then answered in its own revision's shape
// (see [Revision]). It must not be modified.
var SupportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// IsSupportedVersion reports whether v is one of [SupportedVersions].
func IsSupportedVersion(v string) bool {
	return slices.Contains(SupportedVersions, v)
}

// NegotiateVersion returns the protocol version to put in an initialize
// result: requested when it is supported (legacy), otherwise [LatestLegacyVersion]. This
// is the 2025-11-25 lifecycle rule: the server answers with the requested
// version if it supports it, else with another version it supports, and
// the client disconnects if it cannot use that one.
func NegotiateVersion(requested string) string {
	for _, v := range SupportedVersions {
		if v == requested {
			return v // the constant, not the request's copy
		}
	}
	return LatestLegacyVersion
}
