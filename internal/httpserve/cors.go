package httpserve

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgrain/toolgrain/protocol"
)

// CORS for browser clients (the Fetch standard's cross-origin requests). A page of an origin
// that [streamable.Config].AllowedOrigins accepts may call the endpoint, the HTTP+SSE transport's paths and
// the protected-resource metadata: a preflight (OPTIONS with Access-Control-Request-Method) is
// answered 204, before authentication, with the origin ("*" when every origin is accepted), the
// method asked for and the request headers asked for when MCP uses each of them; every answer to
// such an origin names the origin and exposes the response headers a client reads. Credentials
// (cookies, TLS client certificates) are never allowed: MCP's bearer token is a header the
// script sets, which needs none. Without AllowedOrigins there is no CORS, and a foreign origin
// gets 403 as before.

// corsMaxAge is how long, in seconds, a browser may keep a preflight's answer: two hours, the
// most Chromium keeps.
const corsMaxAge = 7200

// corsMethods are the methods a page may use.
var corsMethods = []string{http.MethodGet, http.MethodPost, http.MethodDelete}

// corsHeaders are the request headers (lowercase, as browsers list them) a page may send,
// besides the Mcp-Param-* headers of tool arguments (corsParamPrefix).
var corsHeaders = []string{
	"accept", "authorization", "content-type", "last-event-id",
	"mcp-method", "mcp-name", "mcp-protocol-version", "mcp-session-id",
	"x-mcp-toolsets", // visibility.ToolsetsHeader
}

// corsParamPrefix is the prefix of the headers that carry tool arguments (Mcp-Param-<name>).
const corsParamPrefix = "mcp-param-"

// corsExposed are the response headers a page's script may read.
var corsExposed = []string{protocol.HeaderSessionID, protocol.HeaderProtocolVersion, "WWW-Authenticate"}

var (
	// varyOrigin is the Vary header of an answer that depends on the request's Origin.
	varyOrigin = []string{"Origin"}
	// varyPreflight is the Vary header of a preflight's answer.
	varyPreflight = []string{"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"}
	anyOrigin     = []string{"*"}
)

// corsPolicy applies CORS for the allowed origins. nil: none.
type corsPolicy struct {
	any     bool     // every origin: Access-Control-Allow-Origin is *
	origins []string // else these, compared as the Origin check compares them (originAllowed)
	maxAge  []string
	exposed []string
}

// newCORS returns the policy for origins, or nil when there are none.
func newCORS(origins []string) *corsPolicy {
	if len(origins) == 0 {
		return nil
	}
	p := &corsPolicy{
		any:     slices.Contains(origins, "*"),
		maxAge:  []string{strconv.Itoa(corsMaxAge)},
		exposed: []string{strings.Join(corsExposed, ", ")},
	}
	for _, o := range origins {
		p.origins = append(p.origins, strings.TrimSuffix(o, "/"))
	}
	return p
}

// allowed reports whether a page of origin may call the server.
func (p *corsPolicy) allowed(origin string) bool {
	if p.any {
		return true
	}
	for _, a := range p.origins {
		if strings.EqualFold(a, origin) {
			return true
		}
	}
	return false
}

// allowOrigin is the Access-Control-Allow-Origin of an allowed request's answer: * for every
// origin (never with credentials, which are never allowed), else the request's own.
func (p *corsPolicy) allowOrigin(origin []string) []string {
	if p.any {
		return anyOrigin
	}
	return origin
}

// isPreflight reports whether r is a CORS preflight request.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
}

// apply answers a preflight (204, or 403 for a request header MCP does not use) and reports
// true; for any other request it adds the CORS headers of its origin and reports false. The
// origin itself was checked by the caller where it must be (an origin not allowed gets no CORS
// headers here).
func (p *corsPolicy) apply(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	origin := r.Header["Origin"]
	if !isPreflight(r) {
		h["Vary"] = varyOrigin
		if len(origin) == 1 && p.allowed(origin[0]) && slices.Contains(corsMethods, r.Method) {
			h["Access-Control-Allow-Origin"] = p.allowOrigin(origin)
			h["Access-Control-Expose-Headers"] = p.exposed
		}
		return false
	}
	reqHeaders := r.Header["Access-Control-Request-Headers"]
	if name, ok := preflightHeaders(reqHeaders); !ok {
		writeError(w, http.StatusForbidden, protocol.ErrTransport("Forbidden", "request header "+name+" not allowed"))
		return true
	}
	h["Vary"] = varyPreflight
	method := r.Header["Access-Control-Request-Method"]
	if len(origin) == 1 && p.allowed(origin[0]) && slices.Contains(corsMethods, method[0]) {
		h["Access-Control-Allow-Origin"] = p.allowOrigin(origin)
		h["Access-Control-Allow-Methods"] = method[:1]
		if len(reqHeaders) > 0 && reqHeaders[0] != "" {
			h["Access-Control-Allow-Headers"] = reqHeaders
		}
		h["Access-Control-Max-Age"] = p.maxAge
	}
	w.WriteHeader(http.StatusNoContent)
	return true
}

// preflightHeaders checks the header names a preflight asks for; it returns the first one MCP
// does not use.
func preflightHeaders(values []string) (string, bool) {
	for _, v := range values {
		for rest := v; rest != ""; {
			var name string
			name, rest, _ = strings.Cut(rest, ",")
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" || slices.Contains(corsHeaders, name) ||
				(strings.HasPrefix(name, corsParamPrefix) && len(name) > len(corsParamPrefix)) {
				continue
			}
			return name, false
		}
	}
	return "", true
}

// ResourceMetadataHandler's CORS: the document is public, so a page of an allowed origin may
// read it (OAuth discovery from a browser); other origins get it without CORS headers, which
// their browser then withholds from the page.
func (p *corsPolicy) wrap(h http.Handler) http.Handler {
	if p == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.apply(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	})
}
