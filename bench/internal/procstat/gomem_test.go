package procstat

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"runtime"
	"strings"
	"testing"
)

func TestPprofHeapURL(t *testing.T) {
	tests := []struct{ give, want string }{
		{"http://127.0.0.1:6060", "http://127.0.0.1:6060/debug/pprof/heap?debug=1"},
		{"http://127.0.0.1:6060/", "http://127.0.0.1:6060/debug/pprof/heap?debug=1"},
		{"http://h:1/debug/pprof/", "http://h:1/debug/pprof/heap?debug=1"},
		{"http://h:1/x/debug/pprof", "http://h:1/x/debug/pprof/heap?debug=1"},
	}
	for _, tt := range tests {
		if got, err := PprofHeapURL(tt.give); err != nil || got != tt.want {
			t.Errorf("PprofHeapURL(%q) = %q, %v; want %q", tt.give, got, err, tt.want)
		}
	}
	for _, bad := range []string{"127.0.0.1:6060", "ftp://h/", "http://"} {
		if got, err := PprofHeapURL(bad); err == nil {
			t.Errorf("PprofHeapURL(%q) = %q, want an error", bad, got)
		}
	}
}

// TestReadGoMem reads this process's own statistics through a real
// net/http/pprof heap handler, before and after allocating a known amount.
func TestReadGoMem(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	u, err := PprofHeapURL(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	before, err := ReadGoMem(context.Background(), hs.Client(), u)
	if err != nil {
		t.Fatal(err)
	}
	const n, size = 100, 64 << 10
	keep := make([][]byte, n)
	for i := range keep {
		keep[i] = make([]byte, size)
	}
	runtime.KeepAlive(keep)
	after, err := ReadGoMem(context.Background(), hs.Client(), u)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got < n*size {
		t.Errorf("TotalAlloc grew by %d, want at least the %d bytes allocated between the reads", got, n*size)
	}
	if after.Mallocs-before.Mallocs < n || after.HeapInuse == 0 {
		t.Errorf("before %+v, after %+v", before, after)
	}
	bad := httptest.NewServer(http.NotFoundHandler())
	defer bad.Close()
	if _, err := ReadGoMem(context.Background(), bad.Client(), bad.URL); err == nil {
		t.Error("a 404 was read as statistics")
	}
}

func TestParseGoMem(t *testing.T) {
	give := "heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 10\n# TotalAlloc = 123456\n# Mallocs = 789\n# HeapInuse = 5\n# NumGC = 6\n"
	m, err := ParseGoMem(strings.NewReader(give))
	if err != nil || m != (GoMem{TotalAlloc: 123456, Mallocs: 789, HeapInuse: 5, NumGC: 6}) {
		t.Errorf("ParseGoMem = %+v, %v", m, err)
	}
	if _, err := ParseGoMem(strings.NewReader("no statistics here\n")); err == nil {
		t.Error("a profile without statistics parsed")
	}
	if _, err := ParseGoMem(strings.NewReader("# TotalAlloc = x\n")); err == nil {
		t.Error("a malformed value parsed")
	}
}
