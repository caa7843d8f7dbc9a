package engine

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/toolgrain/toolgrain/internal/principal"
	"github.com/toolgrain/toolgrain/tools"
)

// TestTagStateConverges: members that make changes at once and learn of each other's in any
// order end with the same state: per tag and subject the entry with the greater clock wins, and
// the greater origin breaks a tie.
func TestTagStateConverges(t *testing.T) {
	ada := principal.User("ada")
	start := initialTags([]string{"beta"})
	// Three members' changes, each stamped as SetTags stamps them: a clock one past the greatest
	// its member had seen, and its origin.
	changes := [][]tagEntry{
		{{Tag: "beta", Setting: TagEnabled, Clock: 1, Origin: "a"}},
		{{Tag: "beta", Setting: TagDisabled, Clock: 1, Origin: "b"}, {Subject: ada, Tag: "ops", Setting: TagDisabled, Clock: 1, Origin: "b"}},
		{{Subject: ada, Tag: "ops", Setting: TagInherit, Clock: 2, Origin: "c"}, {Tag: "ops", Setting: TagDisabled, Clock: 2, Origin: "c"}},
		{{Subject: ada, Tag: "ops", Setting: TagEnabled, Clock: 1, Origin: "z"}},
	}
	var want []tagEntry
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		order := rng.Perm(len(changes))
		st := start
		for _, i := range order {
			st, _ = st.with(changes[i])
			// A member also hears some changes twice (its whole state sent on a join).
			if rng.IntN(2) == 0 {
				st, _ = st.with(changes[i])
			}
		}
		got := st.all()
		if want == nil {
			want = got
			continue
		}
		if !slices.Equal(got, want) {
			t.Fatalf("order %v: %v, want %v", order, got, want)
		}
	}
	st := start
	for _, c := range changes {
		st, _ = st.with(c)
	}
	switch {
	case !st.off["beta"]:
		t.Error("beta: b's disable (origin b > a at clock 1) should win")
	case !st.off["ops"]:
		t.Error("ops should be disabled for everyone")
	case !st.disabled(&tools.Identity{Subject: "ada"}, []string{"ops"}):
		t.Error("ada's inherit at clock 2 wins over z's enable at clock 1, and ops is off for everyone: it is off for ada")
	}
	if st.clock != 2 {
		t.Errorf("clock %d, want 2", st.clock)
	}
	if own, _ := st.own(&tools.Identity{Subject: "ada"}); own != nil {
		t.Error("ada has no setting of her own left")
	}
}

// TestTagStateOwnSettings: a principal's own setting wins over the setting for everyone, both
// ways, and an inherit drops it; a user's and a client's of the same subject are apart.
func TestTagStateOwnSettings(t *testing.T) {
	ada := principal.User("ada")
	st, _ := initialTags([]string{"beta"}).with([]tagEntry{
		{Subject: ada, Tag: "beta", Setting: TagEnabled, Clock: 1},
		{Subject: principal.User("bob"), Tag: "ops", Setting: TagDisabled, Clock: 1},
		{Subject: principal.Client("bob"), Tag: "pub", Setting: TagDisabled, Clock: 1},
	})
	user := func(s string) *tools.Identity { return &tools.Identity{Subject: s} }
	client := func(s string) *tools.Identity {
		return &tools.Identity{Subject: s, Claims: map[string][]string{"client_id": {s}}}
	}
	for _, tc := range []struct {
		name string
		id   *tools.Identity
		tags []string
		off  bool
	}{
		{"anonymous", nil, []string{"beta"}, true},
		{"the user ada", user("ada"), []string{"beta"}, false},
		{"the user ada", user("ada"), []string{"ops", "beta"}, false},
		{"the client ada", client("ada"), []string{"beta"}, true},
		{"the user bob", user("bob"), []string{"ops"}, true},
		{"the user bob", user("bob"), []string{"beta"}, true},
		{"the user bob", user("bob"), []string{"pub"}, false},
		{"the client bob", client("bob"), []string{"ops"}, false},
		{"the client bob", client("bob"), []string{"pub"}, true},
		{"the user cy", user("cy"), []string{"ops"}, false},
	} {
		if got := st.disabled(tc.id, tc.tags); got != tc.off {
			t.Errorf("%s %v: disabled %v, want %v", tc.name, tc.tags, got, tc.off)
		}
	}
	st, changed := st.with([]tagEntry{{Subject: ada, Tag: "beta", Setting: TagInherit, Clock: 2}})
	if !changed || !st.disabled(user("ada"), []string{"beta"}) {
		t.Error("ada's inherit does not bring the setting for everyone back")
	}
	if _, changed := st.with([]tagEntry{{Subject: ada, Tag: "beta", Setting: TagEnabled, Clock: 1}}); changed {
		t.Error("an older entry changed the state")
	}
}

// TestMergeTagsRefuses: entries that do not decode, or that carry a bad tag, setting or
// principal, change nothing.
func TestMergeTagsRefuses(t *testing.T) {
	set, err := tools.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Start(Config{Tools: set})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(t.Context()) }()
	before := e.TagState()
	for _, bad := range []string{`{`, `[{"t":"a b","v":-1,"c":1}]`, `[{"t":"ok","v":7,"c":1}]`, `[{"s":"ada","t":"ok","v":-1,"c":1}]`} {
		if err := e.MergeTags([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if got := e.TagState(); string(got) != string(before) {
		t.Errorf("state changed: %s", got)
	}
	good, _ := json.Marshal([]tagEntry{{Tag: "ok", Setting: TagDisabled, Clock: 5, Origin: "m"}})
	if err := e.MergeTags(good); err != nil {
		t.Fatal(err)
	}
	if got := e.TagState(); string(got) != string(good) {
		t.Errorf("state %s, want %s", got, good)
	}
	if err := e.SetTags("ada", TagDisabled, "ok"); err == nil {
		t.Error("SetTags for a string that is not a principal's key")
	}
	// The next change made here is stamped past what was merged.
	if err := e.SetTags("", TagEnabled, "ok"); err != nil {
		t.Fatal(err)
	}
	var all []tagEntry
	_ = json.Unmarshal(e.TagState(), &all)
	if len(all) != 1 || all[0].Clock != 6 || all[0].Setting != TagEnabled {
		t.Errorf("after a local change: %+v", all)
	}
}
