package cluster

import (
	"testing"
	"time"
)

func TestPickerSkipsMembersNotAlive(t *testing.T) {
	n := &Node{addr: "self:1", members: map[string]bool{"self:1": true, "a:1": true, "b:1": true}, dead: map[string]time.Time{}}
	pick := n.Picker("w", "a:1", "b:1", "c:1") // c:1 is not a member
	got := map[string]int{}
	for i := 0; i < 6; i++ {
		pid := pick()
		if pid == nil || pid.Id != "w" {
			t.Fatalf("pick %d = %v, want an actor named w", i, pid)
		}
		got[pid.Address]++
	}
	if got["a:1"] != 3 || got["b:1"] != 3 {
		t.Fatalf("picks %v, want 3 each on a:1 and b:1", got)
	}
	n.dead["a:1"] = time.Now() // its connection broke
	for i := 0; i < 3; i++ {
		if pid := pick(); pid == nil || pid.Address != "b:1" {
			t.Fatalf("pick after a:1 broke = %v, want b:1", pid)
		}
	}
	delete(n.members, "b:1") // left
	if pid := pick(); pid != nil {
		t.Fatalf("pick with no live worker = %v, want nil", pid)
	}
}
