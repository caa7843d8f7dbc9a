package procstat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// GoMem is what a Go server's runtime says about its allocations: a few
// fields of runtime.MemStats, read from outside through its net/http/pprof
// handlers, whose heap profile in text form (debug=1) ends with them.
type GoMem struct {
	TotalAlloc uint64 // bytes allocated so far, freed or not
	Mallocs    uint64 // heap objects allocated so far
	HeapInuse  uint64 // bytes in in-use spans
	NumGC      uint64 // completed GC cycles
}

// PprofHeapURL turns the base URL of a server's net/http/pprof handlers
// (http://HOST:PORT, http://HOST:PORT/debug/pprof or .../debug/pprof/) into
// the URL of its heap profile in text form.
func PprofHeapURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("want an http:// URL of net/http/pprof, got %q", base)
	}
	p := strings.TrimSuffix(u.Path, "/")
	if p == "" {
		p = "/debug/pprof"
	}
	u.Path, u.RawQuery = p+"/heap", "debug=1"
	return u.String(), nil
}

// ReadGoMem fetches the heap profile at heapURL (see [PprofHeapURL]) and
// parses its memory statistics. The server builds the whole profile to
// answer, which costs it some CPU time and allocation: read it outside the
// span being measured, or make the span long.
func ReadGoMem(ctx context.Context, hc *http.Client, heapURL string) (GoMem, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, heapURL, nil)
	if err != nil {
		return GoMem{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return GoMem{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return GoMem{}, fmt.Errorf("procstat: %s: HTTP status %d", heapURL, resp.StatusCode)
	}
	return ParseGoMem(resp.Body)
}

// ParseGoMem reads the "# Name = value" lines of runtime.MemStats that a
// heap profile in text form ends with.
func ParseGoMem(r io.Reader) (GoMem, error) {
	var (
		m    GoMem
		seen int
	)
	fields := map[string]*uint64{"TotalAlloc": &m.TotalAlloc, "Mallocs": &m.Mallocs, "HeapInuse": &m.HeapInuse, "NumGC": &m.NumGC}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), " = ")
		dst := fields[name]
		if !ok || dst == nil {
			continue
		}
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return m, fmt.Errorf("procstat: heap profile: %s = %q: %w", name, value, err)
		}
		*dst = n
		seen++
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if seen < len(fields) {
		return m, errors.New("procstat: no runtime.MemStats in the heap profile (is it a Go net/http/pprof heap profile with debug=1?)")
	}
	return m, nil
}

// ReadGoroutines fetches the goroutine profile of a Go server with net/http/pprof (base as for
// [PprofHeapURL]) and returns its goroutine count.
func ReadGoroutines(ctx context.Context, hc *http.Client, base string) (int64, error) {
	heap, err := PprofHeapURL(base)
	if err != nil {
		return 0, err
	}
	u := strings.TrimSuffix(heap, "/heap?debug=1") + "/goroutine?debug=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("procstat: %s: HTTP status %d", u, resp.StatusCode)
	}
	line, err := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("procstat: %s: %w", u, err)
	}
	// "goroutine profile: total 12"
	_, n, ok := strings.Cut(strings.TrimSpace(line), "total ")
	if !ok {
		return 0, fmt.Errorf("procstat: %s: unexpected first line %q", u, line)
	}
	return strconv.ParseInt(n, 10, 64)
}
