package httpserve

import (
	"strconv"
	"testing"
)

// TestStrictStreamCutNotDropped: the stream of an HTTP+SSE session, which carries its answers,
// is cut once its client falls maxStandaloneQueue messages behind, where a standalone GET
// stream drops the rest.
func TestStrictStreamCutNotDropped(t *testing.T) {
	for _, strict := range []bool{false, true} {
		n := newStandaloneStream()
		n.strict = strict
		n.attach()
		for i := range maxStandaloneQueue + 1 {
			n.Send([]byte(strconv.Itoa(i)))
		}
		frames, over := n.take()
		switch {
		case strict && (!over || len(frames) != 0):
			t.Errorf("strict: %d frames, over %v; want the stream cut", len(frames), over)
		case !strict && (over || len(frames) != maxStandaloneQueue):
			t.Errorf("standalone: %d frames, over %v; want %d and the rest dropped", len(frames), over, maxStandaloneQueue)
		}
	}
}
