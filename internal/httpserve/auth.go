package httpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// maxTokenLength is the longest bearer token passed to the verifier, 16 KiB: twice a JWT with
// a large claims set. A longer one gets 401 invalid_token without a call of the verifier, so
// that a flood of huge made-up tokens reaches no authorization server.
const maxTokenLength = 16 << 10

// authRetryAfter is the Retry-After, in seconds, of a 503 for a failed verification.
const authRetryAfter = "5"

// errNoIdentity is reported when a verifier returns neither an identity nor an error.
var errNoIdentity = errors.New("token verifier returned neither an identity nor an error")

// authenticator applies an AuthConfig to requests.
type authenticator struct {
	cfg     streamable.AuthConfig
	report  func(error)
	timeout time.Duration
	hosts   []string // streamable.Config.AllowedHosts: the names a Resource that is a path may take
	// ssePath and messagesPath are the HTTP+SSE transport's paths, whose requests have the
	// resource of the SSE stream (sseResource); "" when the transport is off or the metadata
	// is not the handler's to serve (ResourceMetadataURL set).
	ssePath, messagesPath string
}

func newAuthenticator(cfg *streamable.AuthConfig, report func(error)) (*authenticator, error) {
	if cfg == nil {
		return nil, nil
	}
	if cfg.Verifier == nil {
		// The text names the field as toolgrain.NewServer's callers spell it, and is kept.
		return nil, errors.New("toolgrain: HTTPConfig.Auth.Verifier is nil")
	}
	a := &authenticator{cfg: *cfg, report: report, timeout: cfg.VerifyTimeout}
	if a.timeout <= 0 {
		a.timeout = streamable.DefaultVerifyTimeout
	}
	if a.cfg.ScopesSupported == nil {
		a.cfg.ScopesSupported = a.cfg.Scopes
	}
	return a, nil
}

// authenticate checks the request's bearer token. It returns the caller's identity and true, or
// writes the auth response (401, 403 or 503) and returns false. A nil authenticator accepts
// every request with no identity.
func (a *authenticator) authenticate(w http.ResponseWriter, r *http.Request) (*tools.Identity, bool) {
	if a == nil {
		return nil, true
	}
	token, ok := bearerToken(r.Header)
	if !ok {
		// RFC 6750 §3.1: a request without credentials gets a challenge with no error code.
		a.challenge(w, r, http.StatusUnauthorized, "", "authentication required")
		return nil, false
	}
	resource, ok := a.resourceOf(r, endpointPath(r.URL.Path))
	if !ok {
		writeError(w, http.StatusForbidden, protocol.ErrTransport("Forbidden", "host not allowed"))
		return nil, false
	}
	if len(token) > maxTokenLength {
		a.challenge(w, r, http.StatusUnauthorized, "invalid_token", "the access token is invalid or expired")
		return nil, false
	}
	id, err := a.verify(streamable.WithResource(r.Context(), resource), token)
	switch {
	case err == nil:
	case errors.Is(err, streamable.ErrInvalidToken):
		a.challenge(w, r, http.StatusUnauthorized, "invalid_token", "the access token is invalid or expired")
		return nil, false
	case r.Context().Err() != nil:
		// The client went away during verification: nobody to answer, nothing unexpected.
		return nil, false
	default:
		a.report(err)
		w.Header().Set("Retry-After", authRetryAfter)
		writeError(w, http.StatusServiceUnavailable, protocol.ErrTransport("Service Unavailable", "authentication is temporarily unavailable"))
		return nil, false
	}
	for _, s := range a.cfg.Scopes {
		if !id.HasScope(s) {
			a.challenge(w, r, http.StatusForbidden, "insufficient_scope", "the access token lacks a required scope")
			return nil, false
		}
	}
	return id, true
}

// verify runs the verifier with its timeout, turning a panic and a (nil, nil) answer into
// unexpected failures.
func (a *authenticator) verify(ctx context.Context, token string) (id *tools.Identity, err error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			id, err = nil, &streamable.VerifierPanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	id, err = a.cfg.Verifier.VerifyToken(ctx, token)
	if err == nil && id == nil {
		err = errNoIdentity
	}
	return id, err
}

// challenge writes a 401 or 403 with its WWW-Authenticate header (RFC 6750 §3, RFC 9728 §5.1,
// MCP's scope step-up).
func (a *authenticator) challenge(w http.ResponseWriter, r *http.Request, status int, code, description string) {
	params := []string{`resource_metadata="` + quoteParam(a.metadataURL(r)) + `"`}
	if len(a.cfg.Scopes) > 0 {
		params = append(params, `scope="`+quoteParam(strings.Join(a.cfg.Scopes, " "))+`"`)
	}
	if code != "" {
		params = append(params, `error="`+code+`"`, `error_description="`+quoteParam(description)+`"`)
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	writeError(w, status, protocol.ErrTransport(http.StatusText(status), description))
}

// quoteParam escapes a value for an RFC 9110 quoted-string.
func quoteParam(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header. The scheme is
// case-insensitive; a missing, repeated or other-scheme header is no token.
func bearerToken(h http.Header) (string, bool) {
	values := h.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// checkResource is what [New] checks of the resource: an absolute http(s) URL, or a path (or
// empty) with at least one name in AllowedHosts. Otherwise the tokens' audience would come
// from the Host header a client chooses on any connection that is not a loopback one (the
// confused deputy of RFC 8707: a token issued for another server, replayed here with that
// server's name in Host), and the handler cannot tell before its first request whether its
// listener is loopback.
func (a *authenticator) checkResource() error {
	res := a.cfg.Resource
	if res != "" && !strings.HasPrefix(res, "/") {
		u, err := url.Parse(res)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("toolgrain: HTTPConfig.Auth.Resource %q is neither an absolute http(s) URL nor a path", res)
		}
		return nil
	}
	if len(a.hosts) == 0 {
		return fmt.Errorf("toolgrain: HTTPConfig.Auth.Resource %q is not an absolute URL and HTTPConfig.AllowedHosts is empty, "+
			"so the tokens' audience would be taken from the Host header the client sends: set Resource to the endpoint's URL "+
			"(https://mcp.example.com/mcp), or list the names the endpoint is reached by in AllowedHosts", res)
	}
	return nil
}

// resource returns the canonical URI of the endpoint for request r to the endpoint, and false
// when the configured Resource leaves its host to the request and r names none the client may
// (see endpointHost).
func (a *authenticator) resource(r *http.Request, path string) (string, bool) {
	res := a.cfg.Resource
	if res == "" {
		res = path
	}
	if !strings.HasPrefix(res, "/") {
		return res, true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host, ok := a.endpointHost(r, scheme)
	if !ok {
		return "", false
	}
	return scheme + "://" + host + res, true
}

// endpointHost is the host of the endpoint's URI for a request whose Resource is a path, never
// a value the client chose and the operator did not list: the request's Host when an entry of
// AllowedHosts is that host and port exactly; on a loopback connection, a loopback name in Host
// with the connection's own port (a Host naming another port there names another server on
// the machine); otherwise the Host when an entry of AllowedHosts without a port is its name;
// else none.
func (a *authenticator) endpointHost(r *http.Request, scheme string) (string, bool) {
	host := strings.ToLower(r.Host)
	for _, h := range a.hosts {
		if strings.EqualFold(h, host) {
			return host, true
		}
	}
	name := hostname(host)
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if tcp, ok := local.(*net.TCPAddr); ok && tcp.IP.IsLoopback() && isLoopbackName(name) {
		if (scheme == "http" && tcp.Port == 80) || (scheme == "https" && tcp.Port == 443) {
			if strings.Contains(name, ":") {
				return "[" + name + "]", true
			}
			return name, true
		}
		return net.JoinHostPort(name, strconv.Itoa(tcp.Port)), true
	}
	for _, h := range a.hosts {
		if strings.EqualFold(h, name) {
			return host, true
		}
	}
	return "", false
}

// resourceOf is the resource of request r to path: the SSE stream's (sseResource) on the paths
// of the HTTP+SSE transport, the endpoint's ([authenticator.resource]) on every other.
func (a *authenticator) resourceOf(r *http.Request, path string) (string, bool) {
	if a.ssePath == "" || (path != a.ssePath && path != a.messagesPath) {
		return a.resource(r, path)
	}
	return a.sseResource(r)
}

// sseResource is the resource of the HTTP+SSE transport's stream path, which its GET and the
// POSTs of its sessions to the messages path are checked for: the URL its clients connect to,
// whose metadata they read and for which they ask a token (the TypeScript SDK's
// SSEClientTransport takes the URL it was given as the resource, and refuses metadata whose
// resource is neither that URL nor a prefix of it). It is the endpoint's resource with the SSE
// path as its path: the scheme and host of Resource when it is an absolute URL, else those
// [authenticator.resource] takes from the request.
func (a *authenticator) sseResource(r *http.Request) (string, bool) {
	res, ok := a.resource(r, a.ssePath)
	if !ok || a.cfg.Resource == "" {
		return res, ok // the request's own host with the SSE path already
	}
	u, err := url.Parse(res)
	if err != nil {
		return res, ok // not reached: Resource is checked by checkResource
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment = a.ssePath, "", "", ""
	return u.String(), true
}

// metadataURL is the resource_metadata of challenges to requests on the endpoint.
func (a *authenticator) metadataURL(r *http.Request) string {
	if a.cfg.ResourceMetadataURL != "" {
		return a.cfg.ResourceMetadataURL
	}
	res, _ := a.resourceOf(r, endpointPath(r.URL.Path)) // checked by authenticate before any challenge
	u, err := url.Parse(res)
	if err != nil {
		return res
	}
	u.Path = wellKnownPRM + strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String()
}

// wellKnownPRM is the RFC 9728 well-known path of protected-resource metadata.
const wellKnownPRM = "/.well-known/oauth-protected-resource"

// resourceMetadata is the RFC 9728 protected-resource metadata document.
type resourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// serveMetadata answers GET (and HEAD) of the metadata document. The resource is the configured
// one or, when that is empty, the path that follows the well-known prefix; for the paths of the
// HTTP+SSE transport it is the SSE stream's (sseResource).
func (a *authenticator) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	suffix := strings.TrimPrefix(r.URL.Path, wellKnownPRM)
	if suffix == "" {
		suffix = "/"
	}
	resource, ok := a.resourceOf(r, suffix)
	if !ok {
		writeError(w, http.StatusForbidden, protocol.ErrTransport("Forbidden", "host not allowed"))
		return
	}
	doc := resourceMetadata{
		Resource:               resource,
		AuthorizationServers:   a.cfg.AuthorizationServers,
		ScopesSupported:        a.cfg.ScopesSupported,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           a.cfg.ResourceName,
	}
	body, err := json.Marshal(doc)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", protocol.MediaTypeJSON)
	w.Header().Set("Cache-Control", "max-age=3600")
	_, _ = w.Write(body)
}

// denyToolScopes answers a tools/call request whose caller's identity lacks a scope of the
// tool (tools.Tool.Scopes) with 403 and the step-up challenge, before anything runs, and
// reports whether it did. Without auth it leaves the refusal to the engine (a JSON-RPC error).
func (h *Handler) denyToolScopes(w http.ResponseWriter, r *http.Request, msg *protocol.Message, id *tools.Identity, modern bool) bool {
	if h.auth == nil || !msg.IsRequest() || msg.Method != protocol.MethodToolsCall {
		return false
	}
	p, err := msg.CallToolParams()
	if err != nil {
		return false
	}
	tool, ok := h.eng.ToolFor(p.Name, id, engine.ToolsetsFromContext(r.Context()))
	if !ok {
		return false // unknown, or hidden from the caller: the engine answers both alike
	}
	missing := tool.MissingScopes(id)
	if missing == nil {
		return false
	}
	werr := protocol.ErrInsufficientScope(tool.Name(), missing)
	params := []string{`error="insufficient_scope"`,
		`scope="` + quoteParam(strings.Join(h.auth.stepUpScopes(id, tool.Scopes(), modern), " ")) + `"`,
		`resource_metadata="` + quoteParam(h.auth.metadataURL(r)) + `"`,
		`error_description="` + quoteParam(werr.Message) + `"`}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	writeFrame(w, http.StatusForbidden, protocol.EncodeError(msg.ID, werr))
	return true
}

// stepUpScopes returns the scope of a step-up challenge for an operation that needs the
// endpoint's scopes and the tool's, as each revision says. MCP 2026-07-28 names the scopes the
// operation needs, all of them in one challenge, and leaves it to the client to add those it
// already holds. MCP 2025-11-25 recommends naming the scopes already granted as well, so that a
// client that asks for exactly the challenge's scopes does not lose them.
func (a *authenticator) stepUpScopes(id *tools.Identity, tool []string, modern bool) []string {
	var out []string
	add := func(list []string) {
		for _, s := range list {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	if !modern && id != nil {
		add(id.Scopes)
	}
	add(a.cfg.Scopes)
	add(tool)
	return out
}
