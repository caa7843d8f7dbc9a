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

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		key     string
		subject string
		client  bool
		ok      bool
	}{
		{principal.User("alice"), "alice", false, true},
		{principal.Client("alice"), "alice", true, true},
		{principal.User("client:alice"), "client:alice", false, true},
		{"", "", false, false},
		{"alice", "", false, false},
		{"sub:", "", false, false},
		{"client:", "", false, false},
	} {
		s, c, ok := principal.Parse(tc.key)
		if s != tc.subject || c != tc.client || ok != tc.ok {
			t.Errorf("Parse(%q) = %q, %v, %v; want %q, %v, %v", tc.key, s, c, ok, tc.subject, tc.client, tc.ok)
		}
	}
	id := &tools.Identity{Subject: "alice", Claims: map[string][]string{"client_id": {"alice"}}}
	if k := principal.Key(id); k != principal.Client("alice") {
		t.Errorf("Key of a client %q, Client %q", k, principal.Client("alice"))
	}
	if k := principal.Key(&tools.Identity{Subject: "alice"}); k != principal.User("alice") {
		t.Errorf("Key of a user %q, User %q", k, principal.User("alice"))
	}
}
