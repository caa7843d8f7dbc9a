package protocol_test

import (
	"mime"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

// acceptsOracle is Accepts as it was before its fast path: every range through
// mime.ParseMediaType.
func acceptsOracle(accept []string, mediaType string) bool {
	if len(accept) == 0 {
		return true
	}
	typ, _, _ := strings.Cut(mediaType, "/")
	for _, header := range accept {
		for _, r := range strings.Split(header, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(r))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(q, 64); err == nil && v <= 0 {
					continue
				}
			}
			if mt == mediaType || mt == "*/*" || mt == typ+"/*" {
				return true
			}
		}
	}
	return false
}

// FuzzAccepts: Accepts answers as every range parsed by mime.ParseMediaType would.
func FuzzAccepts(f *testing.F) {
	for _, s := range []string{
		"application/json, text/event-stream", "APPLICATION/JSON", "text/*", "*/*;q=0",
		"application/json;q=0, */*", "application/jsoK", " application/json ,", "",
		"text/event-stream;q=0.5", "application/*", "application / json", "Application/*",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		for _, mt := range []string{protocol.MediaTypeJSON, protocol.MediaTypeEventStream} {
			if got, want := protocol.Accepts([]string{header}, mt), acceptsOracle([]string{header}, mt); got != want {
				t.Fatalf("Accepts(%q, %s) = %v, mime.ParseMediaType says %v", header, mt, got, want)
			}
		}
	})
}

func BenchmarkAccepts(b *testing.B) {
	accept := []string{"application/json, text/event-stream"}
	b.ReportAllocs()
	for b.Loop() {
		protocol.Accepts(accept, protocol.MediaTypeJSON)
		protocol.Accepts(accept, protocol.MediaTypeEventStream)
	}
}
