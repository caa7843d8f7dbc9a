package faults_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain/internal/faults"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSetAndRestore(t *testing.T) {
	faults.Check(faults.RequestStart, "x") // no hook: nothing happens
	var got []string
	restore := faults.Set(func(point, tool string) { got = append(got, point+" "+tool) })
	faults.Check(faults.RequestStart, "a")
	faults.Check(faults.RequestAnswer, "b")
	restore()
	faults.Check(faults.RequestStart, "c")
	if want := []string{"request.start a", "request.answer b"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("hook saw %q, want %q", got, want)
	}
}
