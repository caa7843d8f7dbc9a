package protocol_test

import (
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

func TestNegotiateVersion(t *testing.T) {
	tests := []struct {
		give          string
		want          string
		wantSupported bool
	}{
		{"2025-11-25", "2025-11-25", true},
		{"2025-06-18", "2025-06-18", true},
		{"2025-03-26", "2025-03-26", true},
		{"2024-11-05", "2024-11-05", true},
		{"2024-10-07", protocol.LatestLegacyVersion, false},
		{"2026-07-28", protocol.LatestLegacyVersion, false},
		{"", protocol.LatestLegacyVersion, false},
		{"garbage", protocol.LatestLegacyVersion, false},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			if got := protocol.NegotiateVersion(tt.give); got != tt.want {
				t.Errorf("NegotiateVersion(%q) = %q, want %q", tt.give, got, tt.want)
			}
			if got := protocol.IsSupportedVersion(tt.give); got != tt.wantSupported {
				t.Errorf("IsSupportedVersion(%q) = %v, want %v", tt.give, got, tt.wantSupported)
			}
		})
	}
}

func TestSupportedVersionsNewestFirst(t *testing.T) {
	if protocol.SupportedVersions[0] != protocol.LatestLegacyVersion {
		t.Errorf("SupportedVersions[0] = %q, want LatestLegacyVersion %q", protocol.SupportedVersions[0], protocol.LatestLegacyVersion)
	}
	for i := 1; i < len(protocol.SupportedVersions); i++ {
		if protocol.SupportedVersions[i-1] <= protocol.SupportedVersions[i] {
			t.Errorf("SupportedVersions not newest first: %q", protocol.SupportedVersions)
		}
	}
}
