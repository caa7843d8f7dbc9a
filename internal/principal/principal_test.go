package principal_test

import (
	"testing"

	"github.com/toolgrain/toolgrain/internal/principal"
	"github.com/toolgrain/toolgrain/tools"
)

func TestKey(t *testing.T) {
	claims := func(kv ...string) map[string][]string {
		m := map[string][]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = []string{kv[i+1]}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		id   *tools.Identity
		want string
	}{
		{"anonymous", nil, ""},
		{"empty subject", &tools.Identity{}, ""},
		{"no claims: the verifier's subject", &tools.Identity{Subject: "alice"}, "sub:alice"},
		{"a user through a client", &tools.Identity{Subject: "alice", Claims: claims("sub", "alice", "client_id", "web-app")}, "sub:alice"},
		{"a client, no sub", &tools.Identity{Subject: "alice", Claims: claims("client_id", "alice")}, "client:alice"},
		{"a client, sub its own id", &tools.Identity{Subject: "alice", Claims: claims("sub", "alice", "client_id", "alice")}, "client:alice"},
		{"a subject that looks like a key", &tools.Identity{Subject: "client:alice", Claims: claims("sub", "client:alice", "client_id", "x")}, "sub:client:alice"},
	} {
		if got := principal.Key(tc.id); got != tc.want {
			t.Errorf("%s: Key = %q, want %q", tc.name, got, tc.want)
		}
	}
}
