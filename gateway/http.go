package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/toolgrain/toolgrain/internal/upstream"
)

// HTTP is an upstream served over HTTP: Streamable HTTP (either era), or the old HTTP+SSE
// transport of 2024-11-05.
//
// The client's own credentials are never sent upstream (the MCP authorization spec forbids
// token passthrough): a mounted tool's handler never sees the client's HTTP request, and each
// upstream's requests carry only what its mount gives: Headers, and a bearer token that OAuth
// obtains for the gateway itself.
type HTTP struct {
	// URL is the upstream's endpoint: the MCP endpoint of Streamable HTTP (…/mcp), or the
	// SSE stream of the old transport (…/sse).
	URL string
	// Transport is "" or "http" (also "streamable-http", "streamableHttp"): Streamable HTTP;
	// "sse": the old transport.
	Transport string
	// Headers are sent with every request. A value may hold ${env:NAME} (the gateway's
	// environment variable NAME) and ${file:PATH} (the contents of the file, without its
	// final newline): a secret need not be written in the configuration. Both are read when
	// the mount is made (a missing variable or file is an error then) and again every 30 s,
	// so that a rotated secret is picked up.
	Headers map[string]string
	// OAuth, when set, gets the gateway's own access token for the upstream with the client
	// credentials grant, and sends it as Authorization: Bearer.
	OAuth *OAuth
	// Client sends the requests; nil means a client of its own, with no overall timeout
	// (streams last as long as their calls).
	Client *http.Client
}

// OAuth is the OAuth 2.0 client credentials grant (RFC 6749 section 4.4) of a gateway against
// an upstream's authorization server. The token is cached until shortly before it expires.
type OAuth struct {
	// TokenURL is the token endpoint. Empty means the one the Issuer's metadata names (RFC
	// 8414, then OpenID Connect discovery), fetched at the first token request.
	TokenURL string
	// Issuer is the authorization server's issuer URL, when TokenURL is empty.
	Issuer string
	// ClientID and ClientSecret authenticate the gateway; either may hold ${env:NAME} and
	// ${file:PATH}, as Headers values do.
	ClientID, ClientSecret string
	// Scopes are asked for; nil means none.
	Scopes []string
	// Resource is the RFC 8707 resource indicator sent with the request; empty means the
	// upstream's URL.
	Resource string
}

func (h HTTP) kind() (sse bool, err error) {
	switch strings.ToLower(h.Transport) {
	case "", "http", "streamable-http", "streamablehttp", "streamable_http":
		return false, nil
	case "sse":
		return true, nil
	}
	return false, fmt.Errorf("transport %q: want http or sse", h.Transport)
}

func (h HTTP) check() error {
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: want an http or https URL", h.URL)
	}
	if _, err := h.kind(); err != nil {
		return err
	}
	for k, v := range h.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return fmt.Errorf("headers: invalid header name %q", k)
		}
		if _, err := expand(v); err != nil {
			return fmt.Errorf("headers: %s: %w", k, err)
		}
	}
	if o := h.OAuth; o != nil {
		if o.TokenURL == "" && o.Issuer == "" {
			return errors.New("oauth: needs a tokenUrl or an issuer")
		}
		for _, p := range []struct{ key, v string }{{"tokenUrl", o.TokenURL}, {"issuer", o.Issuer}} {
			if p.v == "" {
				continue
			}
			if u, err := url.Parse(p.v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return fmt.Errorf("oauth: %s %q: want an https URL", p.key, p.v)
			}
		}
		if o.ClientID == "" {
			return errors.New("oauth: clientId is empty")
		}
		for _, v := range []string{o.ClientID, o.ClientSecret} {
			if _, err := expand(v); err != nil {
				return fmt.Errorf("oauth: %w", err)
			}
		}
	}
	return nil
}

func (h HTTP) transport(g *Gateway, name string) (upstream.Transport, error) {
	sse, _ := h.kind()
	hc := h.Client
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	creds := &credentials{headers: h.Headers, hc: hc}
	if h.OAuth != nil {
		creds.oauth = newTokenSource(*h.OAuth, h.URL, hc)
	}
	return upstream.HTTP{URL: h.URL, SSE: sse, Client: hc, Header: creds.header}, nil
}

// credentials are an HTTP upstream's own headers.
type credentials struct {
	headers map[string]string
	hc      *http.Client
	oauth   *tokenSource

	mu     sync.Mutex
	cached http.Header
	at     time.Time
}

// headerTTL is how long expanded header values are reused.
const headerTTL = 30 * time.Second

func (c *credentials) header(ctx context.Context) (http.Header, error) {
	c.mu.Lock()
	if c.cached == nil || time.Since(c.at) > headerTTL {
		h := http.Header{}
		keys := make([]string, 0, len(c.headers))
		for k := range c.headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, err := expand(c.headers[k])
			if err != nil {
				c.mu.Unlock()
				return nil, fmt.Errorf("header %s: %w", k, err)
			}
			h.Set(k, v)
		}
		c.cached, c.at = h, time.Now()
	}
	h := c.cached.Clone()
	c.mu.Unlock()
	if c.oauth != nil {
		tok, err := c.oauth.token(ctx)
		if err != nil {
			return nil, err
		}
		h.Set("Authorization", "Bearer "+tok)
	}
	return h, nil
}

var reference = regexp.MustCompile(`\$\{(env|file):([^}]*)\}`)

// expand replaces ${env:NAME} and ${file:PATH} in v.
func expand(v string) (string, error) {
	var err error
	out := reference.ReplaceAllStringFunc(v, func(ref string) string {
		m := reference.FindStringSubmatch(ref)
		switch m[1] {
		case "env":
			val, ok := os.LookupEnv(m[2])
			if !ok {
				err = fmt.Errorf("environment variable %s is not set", m[2])
			}
			return val
		default:
			data, rerr := os.ReadFile(m[2])
			if rerr != nil {
				err = fmt.Errorf("file %s: %w", m[2], errors.Unwrap(rerr))
				return ""
			}
			return strings.TrimRight(string(data), "\r\n")
		}
	})
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(out, "\r\n") {
		return "", errors.New("the value holds a line break")
	}
	return out, nil
}

// tokenSource gets and caches the gateway's access token for one upstream.
type tokenSource struct {
	cfg      OAuth
	resource string
	hc       *http.Client

	mu  sync.Mutex
	src oauth2.TokenSource
}

func newTokenSource(cfg OAuth, upstreamURL string, hc *http.Client) *tokenSource {
	res := cfg.Resource
	if res == "" {
		res = upstreamURL
	}
	return &tokenSource{cfg: cfg, resource: res, hc: hc}
}

// token returns a valid access token, asking the authorization server when the cached one is
// about to expire. Its errors never contain the client secret.
func (t *tokenSource) token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.src == nil {
		tokenURL := t.cfg.TokenURL
		if tokenURL == "" {
			var err error
			if tokenURL, err = discoverTokenURL(ctx, t.hc, t.cfg.Issuer); err != nil {
				return "", fmt.Errorf("oauth: %w", err)
			}
		}
		id, err := expand(t.cfg.ClientID)
		if err != nil {
			return "", fmt.Errorf("oauth: client id: %w", err)
		}
		secret, err := expand(t.cfg.ClientSecret)
		if err != nil {
			return "", fmt.Errorf("oauth: client secret: %w", err)
		}
		cc := &clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: tokenURL, Scopes: t.cfg.Scopes,
			EndpointParams: url.Values{"resource": {t.resource}}}
		// The token source lives as long as the mount: its context carries the HTTP client
		// only, never a request's deadline.
		t.src = oauth2.ReuseTokenSource(nil, cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, t.hc)))
	}
	tok, err := t.src.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return "", fmt.Errorf("oauth: the token endpoint refused: %s %s", re.ErrorCode, re.ErrorDescription)
		}
		return "", fmt.Errorf("oauth: %w", err)
	}
	return tok.AccessToken, nil
}

// discoverTokenURL reads an issuer's token endpoint from its metadata: RFC 8414's well-known
// document, then OpenID Connect's.
func discoverTokenURL(ctx context.Context, hc *http.Client, issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(u.Path, "/")
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		u.Scheme + "://" + u.Host + "/.well-known/openid-configuration" + path,
		strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration",
	}
	var last error
	for _, c := range candidates {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c, nil)
		if err != nil {
			cancel()
			return "", err
		}
		resp, err := hc.Do(req)
		if err != nil {
			cancel()
			last = err
			continue
		}
		var meta struct {
			Issuer        string `json:"issuer"`
			TokenEndpoint string `json:"token_endpoint"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&meta)
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusOK && err == nil && meta.TokenEndpoint != "" {
			return meta.TokenEndpoint, nil
		}
		last = fmt.Errorf("%s: status %d", c, resp.StatusCode)
	}
	return "", fmt.Errorf("no token endpoint in the metadata of issuer %s: %v", issuer, last)
}
