package httpserve

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/rs/cors"

	"github.com/toolgrain/toolgrain/protocol"
)

// BenchmarkCORS measures the CORS step of a request, through the handler's own (corsPolicy) and
// through github.com/rs/cors configured alike (rsCORS below): a preflight of a POST with the
// headers a client sends, a browser's request, and a request without Origin (any client but a
// browser's page). docs/packages.md has the figures.
//
//	go test -run '^$' -bench BenchmarkCORS -count 6 ./streamable
func BenchmarkCORS(b *testing.B) {
	const origin = "http://app.example.test"
	preflight, _ := http.NewRequest(http.MethodOptions, "http://127.0.0.1/mcp", nil)
	preflight.Header.Set("Origin", origin)
	preflight.Header.Set("Access-Control-Request-Method", "POST")
	preflight.Header.Set("Access-Control-Request-Headers", "accept,content-type,mcp-method,mcp-name,mcp-param-region,mcp-protocol-version,mcp-session-id")
	simple, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	simple.Header.Set("Origin", origin)
	noOrigin, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	rs := newRSCORS([]string{origin})
	hand := newCORS([]string{origin})
	for _, tt := range []struct {
		name  string
		r     *http.Request
		apply func(http.ResponseWriter, *http.Request) bool
	}{
		{"preflight/rs-cors", preflight, rs.apply},
		{"preflight/hand", preflight, hand.apply},
		{"simple/rs-cors", simple, rs.apply},
		{"simple/hand", simple, hand.apply},
		{"no-origin/rs-cors", noOrigin, rs.apply},
		{"no-origin/hand", noOrigin, hand.apply},
	} {
		b.Run(tt.name, func(b *testing.B) {
			w := &headerWriter{h: make(http.Header, 8)}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				tt.apply(w, tt.r)
			}
			if tt.r != noOrigin && w.h.Get("Access-Control-Allow-Origin") != origin {
				b.Fatalf("no CORS headers: %v", w.h)
			}
		})
	}
}

// TestCORSAgreesWithRSCORS: the policy writes what rs/cors writes (header names of the exposed
// list aside, which are case-insensitive), so that the benchmark compares equals.
func TestCORSAgreesWithRSCORS(t *testing.T) {
	const origin = "http://app.example.test"
	rs, hand := newRSCORS([]string{origin}), newCORS([]string{origin})
	for _, hdr := range [][]string{
		{"Origin", origin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type,mcp-param-x"},
		{"Origin", origin, "Access-Control-Request-Method", "DELETE"},
		{"Origin", "http://other.example.test", "Access-Control-Request-Method", "POST"},
		{"Origin", origin},
		{},
	} {
		method := http.MethodPost
		if len(hdr) > 2 {
			method = http.MethodOptions
		}
		r, _ := http.NewRequest(method, "http://127.0.0.1/mcp", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		a, b := &headerWriter{h: http.Header{}}, &headerWriter{h: http.Header{}}
		rs.apply(a, r)
		hand.apply(b, r)
		if a.status != b.status || !equalHeaders(a.h, b.h) {
			t.Errorf("%v:\nrs/cors %d %v\n   hand %d %v", hdr, a.status, a.h, b.status, b.h)
		}
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.EqualFunc(v, b[k], strings.EqualFold) {
			return false
		}
	}
	return true
}

// headerWriter is a ResponseWriter that keeps the header and the status only.
type headerWriter struct {
	h      http.Header
	status int
}

func (w *headerWriter) Header() http.Header         { return w.h }
func (w *headerWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *headerWriter) WriteHeader(status int)      { w.status = status }

// rsCORS is what corsPolicy does, through github.com/rs/cors: the comparison of
// docs/packages.md.
type rsCORS struct{ c *cors.Cors }

func newRSCORS(origins []string) *rsCORS {
	list := make([]string, len(origins))
	for i, o := range origins {
		list[i] = strings.TrimSuffix(o, "/")
	}
	return &rsCORS{c: cors.New(cors.Options{
		AllowedMethods: corsMethods,
		AllowedHeaders: []string{"*"}, // after preflightHeaders, as corsPolicy checks them
		ExposedHeaders: corsExposed,
		MaxAge:         corsMaxAge,
		AllowOriginFunc: func(origin string) bool {
			for _, a := range list {
				if strings.EqualFold(a, origin) {
					return true
				}
			}
			return false
		},
	})}
}

func (p *rsCORS) apply(w http.ResponseWriter, r *http.Request) bool {
	if isPreflight(r) {
		if name, ok := preflightHeaders(r.Header["Access-Control-Request-Headers"]); !ok {
			writeError(w, http.StatusForbidden, protocol.ErrTransport("Forbidden", "request header "+name+" not allowed"))
			return true
		}
	}
	p.c.HandlerFunc(w, r)
	return isPreflight(r)
}
