package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/auth"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/visibility"
)

// httpSpanName names an HTTP server span "{method} {route}" as the HTTP conventions do, the
// route being one of the mux's paths; another path is left out, and a method outside HTTP's
// own is "HTTP", so that a client cannot choose span names.
func httpSpanName(_ string, r *http.Request) string {
	method := r.Method
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
	default:
		return "HTTP"
	}
	switch p := r.URL.Path; p {
	case endpoint, ssePath, messagesPath, "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource" + endpoint,
		"/.well-known/oauth-protected-resource" + ssePath:
		return method + " " + p
	}
	return method
}

// maxHeaderBytes bounds the request line and header of every request to the binary's
// listeners (net/http's default is 1 MiB; it reads up to 4 KiB more before it answers 431).
// The largest header of a real MCP request is its bearer token, which the transport refuses
// past 16 KiB; 64 KiB leaves room beside it for Mcp-Param-* headers (a 2026-07-28 call's
// annotated arguments), tracing and a proxy's own headers.
const maxHeaderBytes = 64 << 10

// endpoint is the path of the MCP endpoint.
const endpoint = "/mcp"

// The paths of the HTTP+SSE transport (MCP 2024-11-05), served unless --sse=false.
const (
	ssePath      = toolgrain.DefaultSSEPath
	messagesPath = toolgrain.DefaultMessagesPath
)

// outageToken is the demo token whose verification fails unexpectedly.
const outageToken = "auth-outage"

// httpOptions are the settings of --transport http.
type httpOptions struct {
	addr                 string
	tokens               listFlag
	scopes               listFlag
	authorizationServers listFlag
	resource             string
	issuer               string
	audience             string
	introspectionURL     string
	clientID             string
	clientSecretFile     string
	toolScopes           listFlag
	hideForbidden        bool
	allowedOrigins       listFlag
	allowedHosts         listFlag
	idleTimeout          time.Duration
	maxSessions          int
	maxSessionsPerSubj   int
	sse                  bool
	allowBound           bool
	log                  *zap.Logger // the verifiers' (nil: none)
}

func (o *httpOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "HTTP: listen `address`; the endpoint is /mcp")
	fs.Var(&o.tokens, "auth-token", "HTTP: accept the bearer `TOKEN[:SCOPE,...]` (repeatable; turns auth on). A token without a scope list has every --auth-scope; auth-outage makes the verifier fail unexpectedly")
	fs.Var(&o.scopes, "auth-scope", "HTTP with auth: a `scope` every request needs (repeatable); tokens without it get 403 insufficient_scope")
	fs.StringVar(&o.issuer, "auth-issuer", "", "HTTP: accept JWT access tokens of the issuer `URL` (RFC 8414 or OpenID metadata, its JWKS); turns auth on and is listed in the protected-resource metadata")
	fs.StringVar(&o.audience, "auth-audience", "", "HTTP with --auth-issuer or --auth-introspection-url: the audience `URL` tokens must be issued for (default: the resource of each request: --resource, else the endpoint URL; the URL of /sse for /sse and /messages)")
	fs.StringVar(&o.introspectionURL, "auth-introspection-url", "", "HTTP: accept opaque tokens the introspection endpoint `URL` (RFC 7662) says are active; turns auth on (with --auth-issuer too, JWTs go to the JWT verifier)")
	fs.StringVar(&o.clientID, "auth-client-id", "", "HTTP with --auth-introspection-url: this server's client `ID` at the authorization server")
	fs.BoolVar(&o.allowBound, "auth-allow-sender-constrained", false, "HTTP with --auth-issuer or --auth-introspection-url: accept sender-constrained tokens (a cnf claim: DPoP, mutual TLS) as bearer tokens, only behind a gateway that checks their proof of possession (default: 401)")
	fs.StringVar(&o.clientSecretFile, "auth-client-secret-file", "", "HTTP with --auth-introspection-url: a file holding this server's client secret (`PATH`; a trailing newline is ignored)")
	fs.Var(&o.toolScopes, "tool-scope", "HTTP with auth: `TOOL=SCOPE[,SCOPE...]`, the scopes a call of TOOL needs (repeatable); a token without them gets 403 and the step-up challenge")
	fs.BoolVar(&o.hideForbidden, "hide-forbidden-tools", false, "HTTP with auth: hide from each token the tools whose --tool-scope scopes it lacks: its tools/list leaves them out, and a call of one is answered exactly as a call of a tool that does not exist (no step-up challenge)")
	fs.Var(&o.authorizationServers, "authorization-server", "HTTP with auth: issuer `URL` listed in the protected-resource metadata (repeatable)")
	fs.StringVar(&o.resource, "resource", "", "HTTP with auth: the public `URL` of the endpoint, for tokens' audience and the metadata; needed beyond loopback unless --allowed-host lists the names it is reached by (default: the request's loopback name or --allowed-host name, and /mcp)")
	fs.Var(&o.allowedOrigins, "allowed-origin", "HTTP: a browser `origin` accepted besides the endpoint's own, with CORS: its pages may call /mcp, /sse, /messages and read the protected-resource metadata (repeatable; * for any, never with credentials)")
	fs.Var(&o.allowedHosts, "allowed-host", "HTTP: a Host header `name` accepted besides loopback names (repeatable; for reverse proxies)")
	fs.DurationVar(&o.idleTimeout, "session-idle-timeout", toolgrain.DefaultSessionIdleTimeout, "HTTP: end sessions idle this long")
	fs.IntVar(&o.maxSessions, "max-sessions", 0, "HTTP: sessions open at once before an initialize is refused with 503 (0: 10000, -1: no limit)")
	fs.BoolVar(&o.sse, "sse", true, "HTTP: also serve the HTTP+SSE transport of MCP 2024-11-05: GET /sse (or GET /mcp without a session) opens the stream, whose endpoint event names the POST URL (/messages, or /mcp, with ?sessionId=)")
	fs.IntVar(&o.maxSessionsPerSubj, "max-sessions-per-subject", 0, "HTTP with auth: sessions one token's subject may have open before its initialize is refused with 429 (0: 1000, -1: no limit)")
}

func (o *httpOptions) check() error {
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return fmt.Errorf("--addr %q: %w", o.addr, err)
	}
	for _, t := range o.tokens {
		if tok, _, _ := strings.Cut(t, ":"); tok == "" {
			return fmt.Errorf("--auth-token %q: empty token", t)
		}
	}
	if len(o.tokens) > 0 && (o.issuer != "" || o.introspectionURL != "") {
		return errors.New("--auth-token (static demo tokens) cannot be combined with --auth-issuer or --auth-introspection-url")
	}
	if o.introspectionURL != "" && (o.clientID == "" || o.clientSecretFile == "") {
		return errors.New("--auth-introspection-url needs --auth-client-id and --auth-client-secret-file")
	}
	if o.introspectionURL == "" && (o.clientID != "" || o.clientSecretFile != "") {
		return errors.New("--auth-client-id and --auth-client-secret-file need --auth-introspection-url")
	}
	if o.allowBound && o.issuer == "" && o.introspectionURL == "" {
		return errors.New("--auth-allow-sender-constrained needs --auth-issuer or --auth-introspection-url")
	}
	if o.audience != "" && o.issuer == "" && o.introspectionURL == "" {
		return errors.New("--auth-audience needs --auth-issuer or --auth-introspection-url")
	}
	if !o.authOn() && (len(o.scopes) > 0 || len(o.authorizationServers) > 0 || o.resource != "" || len(o.toolScopes) > 0 || o.hideForbidden) {
		return errors.New("--auth-scope, --authorization-server, --resource, --tool-scope and --hide-forbidden-tools need --auth-token, --auth-issuer or --auth-introspection-url")
	}
	for _, ts := range o.toolScopes {
		if _, _, err := parseToolScope(ts); err != nil {
			return err
		}
	}
	if o.authOn() && !absoluteURL(o.resource) && len(o.allowedHosts) == 0 && !o.loopback() {
		return fmt.Errorf("--addr %s is not a loopback address: with auth on, set --resource to the endpoint's public URL "+
			"(https://HOST/mcp), or list the names it is reached by with --allowed-host, so that the tokens' audience "+
			"is never taken from the Host header a client sends", o.addr)
	}
	return nil
}

// loopback reports whether --addr listens on loopback only.
func (o *httpOptions) loopback() bool {
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// absoluteURL reports whether s is an absolute http(s) URL with a host.
func absoluteURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// loopbackNames are the Host names of a loopback listener: with auth and no --resource they are
// the names the endpoint's URI may take (each with the listener's own port).
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// authOn reports whether a flag turns bearer auth on.
func (o *httpOptions) authOn() bool {
	return len(o.tokens) > 0 || o.issuer != "" || o.introspectionURL != ""
}

// parseToolScope reads a --tool-scope value, TOOL=SCOPE[,SCOPE...].
func parseToolScope(v string) (string, []string, error) {
	tool, list, ok := strings.Cut(v, "=")
	var scopes []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopes = append(scopes, s)
		}
	}
	if !ok || tool == "" || len(scopes) == 0 {
		return "", nil, fmt.Errorf("--tool-scope %q: want TOOL=SCOPE[,SCOPE...]", v)
	}
	return tool, scopes, nil
}

// applyToolScopes sets the Scopes of the tools --tool-scope names; naming a tool the server
// does not have is an error.
func (o *httpOptions) applyToolScopes(list []tools.Tool) ([]tools.Tool, error) {
	for _, v := range o.toolScopes {
		name, scopes, err := parseToolScope(v)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(list, func(t tools.Tool) bool { return t.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("--tool-scope %q: no tool %q", v, name)
		}
		list[i].Scopes = append(list[i].Scopes, scopes...)
	}
	return list, nil
}

func (o *httpOptions) config() (toolgrain.HTTPConfig, error) {
	cfg := toolgrain.HTTPConfig{
		SessionIdleTimeout:    o.idleTimeout,
		MaxSessions:           o.maxSessions,
		MaxSessionsPerSubject: o.maxSessionsPerSubj,
		AllowedOrigins:        o.allowedOrigins,
		AllowedHosts:          o.allowedHosts,
		DisableSSE:            !o.sse,
	}
	if !o.authOn() {
		return cfg, nil
	}
	resource := o.resource
	if resource == "" {
		resource = endpoint
	}
	if !absoluteURL(resource) && len(cfg.AllowedHosts) == 0 {
		// check refused this beyond loopback: the endpoint's URI takes the loopback name of
		// each request, with the listener's port.
		cfg.AllowedHosts = loopbackNames
	}
	servers := o.authorizationServers
	if o.issuer != "" && !slices.Contains(servers, o.issuer) {
		servers = append([]string{o.issuer}, servers...)
	}
	verifier, err := o.verifier()
	if err != nil {
		return cfg, err
	}
	cfg.Auth = &toolgrain.AuthConfig{
		Verifier:             verifier,
		Scopes:               o.scopes,
		Resource:             resource,
		AuthorizationServers: servers,
		ResourceName:         "Toolgrain demo",
	}
	return cfg, nil
}

// verifier returns the token verifier the flags ask for: the static demo tokens, the JWT
// verifier of --auth-issuer, the introspection verifier of --auth-introspection-url, or both of
// these, JWTs (three dot-separated parts) going to the first and other tokens to the second.
func (o *httpOptions) verifier() (toolgrain.TokenVerifier, error) {
	if len(o.tokens) > 0 {
		return newStaticVerifier(o.tokens, o.scopes), nil
	}
	// "" leaves it to the resource of each request: --resource (or the endpoint URL), and for
	// the HTTP+SSE transport's requests the URL of /sse.
	audience := o.audience
	var jwtV, introV toolgrain.TokenVerifier
	if o.issuer != "" {
		v, err := auth.NewJWTVerifier(auth.JWTConfig{Issuer: o.issuer, Audience: audience, Logger: o.log,
			AllowSenderConstrained: o.allowBound})
		if err != nil {
			return nil, fmt.Errorf("--auth-issuer: %w", err)
		}
		jwtV = v
	}
	if o.introspectionURL != "" {
		secret, err := os.ReadFile(o.clientSecretFile)
		if err != nil {
			return nil, fmt.Errorf("--auth-client-secret-file: %w", err)
		}
		v, err := auth.NewIntrospectionVerifier(auth.IntrospectionConfig{URL: o.introspectionURL, ClientID: o.clientID,
			ClientSecret: strings.TrimRight(string(secret), "\r\n"), Issuer: o.issuer, Audience: audience,
			AllowSenderConstrained: o.allowBound})
		if err != nil {
			return nil, fmt.Errorf("--auth-introspection-url: %w", err)
		}
		introV = v
	}
	switch {
	case introV == nil:
		return jwtV, nil
	case jwtV == nil:
		return introV, nil
	}
	return toolgrain.TokenVerifierFunc(func(ctx context.Context, token string) (*toolgrain.Identity, error) {
		if strings.Count(token, ".") == 2 {
			return jwtV.VerifyToken(ctx, token)
		}
		return introV.VerifyToken(ctx, token)
	}), nil
}

// staticVerifier is the demo verifier: a fixed set of tokens, each standing for the subject
// "token-N" (N its position on the command line, so the token itself appears nowhere).
type staticVerifier map[string]*toolgrain.Identity

// errOutage is what the demo verifier fails with for the auth-outage token: an internal error
// whose text must reach the operator only.
var errOutage = errors.New("identity provider unreachable: dial tcp 10.0.0.9:443: " + demo.Marker)

func newStaticVerifier(tokens, scopes []string) staticVerifier {
	v := make(staticVerifier, len(tokens))
	for i, t := range tokens {
		tok, list, hasList := strings.Cut(t, ":")
		granted := scopes
		if hasList {
			granted = nil
			for _, s := range strings.Split(list, ",") {
				if s != "" {
					granted = append(granted, s)
				}
			}
		}
		v[tok] = &toolgrain.Identity{Subject: fmt.Sprintf("token-%d", i+1), Scopes: granted}
	}
	return v
}

func (v staticVerifier) VerifyToken(ctx context.Context, token string) (*toolgrain.Identity, error) {
	if token == outageToken {
		return nil, errOutage
	}
	if id, ok := v[token]; ok {
		return id, nil
	}
	return nil, toolgrain.ErrInvalidToken
}

// serveHTTP serves srv on o.http.addr until ctx ends or the listener fails, then shuts down:
// the server first (every call in flight is cancelled and its response ends, sessions end,
// diagnostics are flushed) within the handler grace plus the diagnostics callback's timeout,
// then the HTTP server (the listener closes and the last responses finish) within the output
// grace.
//
// With tracing on, every HTTP request gets an HTTP server span (otelhttp), which the MCP span of
// each message it carries links to.
func serveHTTP(ctx context.Context, srv *toolgrain.Server, o *options, tel *telemetry, log *zap.Logger) error {
	mux := http.NewServeMux()
	mux.Handle(endpoint, srv.Handler())
	mux.Handle(endpoint+"/"+visibility.ToolsetsPath+"/", srv.Handler()) // /mcp/t/TAG[,TAG...]: a narrowed view
	if o.http.sse {
		mux.Handle(ssePath, srv.Handler())
		mux.Handle(messagesPath, srv.Handler())
	}
	meta := srv.ResourceMetadataHandler()
	mux.Handle("/.well-known/oauth-protected-resource", meta)
	mux.Handle("/.well-known/oauth-protected-resource"+endpoint, meta)
	if o.http.sse {
		// The old transport's stream path is a resource of its own: its challenges name this.
		mux.Handle("/.well-known/oauth-protected-resource"+ssePath, meta)
	}

	ln, err := net.Listen("tcp", o.http.addr)
	if err != nil {
		_ = srv.Close()
		return err
	}
	if tcp, ok := ln.(*net.TCPListener); ok {
		ln = newFDGuard(tcp, log.Named("http")) // out of descriptors: refuse, and say so
	}
	var handler http.Handler = mux
	if tel.tp != nil {
		var mp metric.MeterProvider = noop.NewMeterProvider()
		if tel.mp != nil {
			mp = tel.mp
		}
		handler = otelhttp.NewHandler(mux, "mcp", otelhttp.WithTracerProvider(tel.tp),
			otelhttp.WithMeterProvider(mp), otelhttp.WithPropagators(tel.prop),
			otelhttp.WithSpanNameFormatter(httpSpanName))
	}
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && !o.http.authOn() {
		log.Warn("serving beyond loopback without authentication", zap.String("addr", ln.Addr().String()))
	}
	log.Info("serving", zap.String("transport", "http"), zap.String("url", "http://"+ln.Addr().String()+endpoint))

	served := make(chan error, 1)
	// Owned by serveHTTP, which waits for it before returning; it ends when hs shuts down or
	// the listener fails.
	go func() { served <- hs.Serve(ln) }()

	var result error
	select {
	case <-ctx.Done():
	case err := <-served:
		served <- err // read again below
		result = err
	}

	srvCtx, cancel := context.WithTimeout(context.Background(), o.handlerGrace+toolgrain.DefaultCallbackTimeout)
	defer cancel()
	if err := srv.Shutdown(srvCtx); err != nil {
		log.Warn("shutdown", zap.Error(err))
	}
	httpCtx, cancelHTTP := context.WithTimeout(context.Background(), o.outputGrace)
	defer cancelHTTP()
	if err := hs.Shutdown(httpCtx); err != nil {
		log.Warn("http shutdown", zap.Error(err))
		_ = hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) && result == nil {
		result = err
	}
	if errors.Is(result, http.ErrServerClosed) {
		result = nil
	}
	log.Info("stopped")
	return result
}
