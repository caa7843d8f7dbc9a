package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// DefaultFetchTimeout bounds each HTTP request to the authorization server (metadata, JWKS,
// introspection) when the configuration's FetchTimeout is zero.
const DefaultFetchTimeout = 5 * time.Second

// maxDocument bounds the body of a metadata document, a JWK Set or an introspection answer.
const maxDocument = 1 << 20

// StatusError is the error of an answer from the authorization server whose HTTP status is not
// the one expected (a metadata document or JWK Set not found, an introspection endpoint
// answering 5xx or refusing the server's credentials). It is an unexpected failure (503), never
// a rejection: the provider did not say anything about the token.
type StatusError struct {
	URL    string // the URL requested, without query
	Status int    // the HTTP status of the answer
	// Code is the OAuth error code of the answer's JSON body (RFC 6749 §5.2: invalid_client,
	// unauthorized_client, invalid_request, ...), "" when it has none (or one that is not made
	// of letters, digits, '_', '-' and '.', at most 64 of them).
	Code string
}

// Error returns "auth: <URL> answered <status> <text>", followed by " (<code>)" when the answer
// named an OAuth error code.
func (e *StatusError) Error() string {
	s := fmt.Sprintf("auth: %s answered %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	return s
}

// maxErrorBody bounds the part of a non-200 answer read for its error code.
const maxErrorBody = 16 << 10

// errorCode returns the OAuth error code of an error answer's body, "" when it has none or one
// that is not a plain token (so that an answer cannot put arbitrary text into a log line).
func errorCode(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) > 64 {
		return ""
	}
	for _, c := range []byte(e.Error) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return ""
		}
	}
	return e.Error
}

// doJSON sends req with timeout and decodes a 200 answer's JSON body, of at most maxDocument
// bytes, into v. Another status is a [*StatusError], with the error code of its body.
func doJSON(ctx context.Context, client *http.Client, timeout time.Duration, req *http.Request, v any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req = req.WithContext(ctx)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("auth: %s %s: %w", req.Method, redact(req.URL), redactErr(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocument))
		return &StatusError{URL: redact(req.URL), Status: resp.StatusCode, Code: errorCode(body)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("auth: reading %s: %w", redact(req.URL), err)
	}
	if len(body) > maxDocument {
		return fmt.Errorf("auth: %s: answer larger than %d bytes", redact(req.URL), maxDocument)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("auth: %s: not a JSON document: %w", redact(req.URL), err)
	}
	return nil
}

// redact returns u without its query, user information and fragment, for error texts.
func redact(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	c.ForceQuery = false
	return c.String()
}

// redactString is [redact] for a URL given as text, which may not even parse: then everything
// from the first '?' or '#' is cut, and so is user information.
func redactString(s string) string {
	if u, err := url.Parse(s); err == nil {
		return redact(u)
	}
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		host, path, _ := strings.Cut(rest, "/")
		if i := strings.LastIndex(host, "@"); i >= 0 {
			host = host[i+1:]
		}
		s = scheme + "://" + host
		if path != "" {
			s += "/" + path
		}
	}
	return s
}

// redactErr returns err with the URL of a *url.Error (what http.Client.Do fails with, naming
// the URL it was sending to, a redirect's target included) redacted.
func redactErr(err error) error {
	if ue, ok := err.(*url.Error); ok {
		c := *ue
		c.URL = redactString(ue.URL)
		return &c
	}
	return err
}

// isLoopback reports whether a URL's host is a loopback name: localhost or a loopback IP.
func isLoopback(u *url.URL) bool {
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkURL checks that s is an absolute https URL without fragment, or an http one on a
// loopback host (a development issuer, a test's).
func checkURL(what, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("auth: %s %q: not a URL", what, redactString(s))
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("auth: %s %q: want an absolute https URL without fragment", what, redact(u))
	}
	if u.Scheme == "http" && !isLoopback(u) {
		return nil, fmt.Errorf("auth: %s %q: want https (http only on a loopback host: localhost, 127.0.0.1, ::1)", what, redact(u))
	}
	return u, nil
}

// origin returns the scheme, host and port of u, lowercased, the port explicit.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// maxRedirects bounds the redirects a request to the authorization server follows, as
// net/http's default policy does.
const maxRedirects = 10

// guard returns a copy of c (a new client when c is nil) that follows a redirect only within
// the origin of the request it started from: a redirect to another host, port or scheme (https
// to http above all) is refused, so that neither the introspection request's body (the token)
// nor the server's credentials are sent anywhere but where the configuration says, and a key set
// cannot come from elsewhere. c's own CheckRedirect, when set, is applied after that.
func guard(c *http.Client) *http.Client {
	if c == nil {
		c = &http.Client{}
	}
	g := *c
	next := c.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		from, to := via[0].URL, req.URL
		switch {
		case from.Scheme == "https" && to.Scheme != "https":
			return fmt.Errorf("auth: redirect from %s to %s refused: a downgrade from https", redact(via[len(via)-1].URL), redact(to))
		case origin(from) != origin(to):
			return fmt.Errorf("auth: redirect from %s to %s refused: another origin", redact(via[len(via)-1].URL), redact(to))
		case next != nil:
			return next(req, via)
		case len(via) >= maxRedirects:
			return fmt.Errorf("auth: stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &g
}

// metadataURLs returns the locations of the authorization server metadata of issuer, in the
// order MCP clients try them: RFC 8414 with the well-known part inserted after the host, OpenID
// Connect Discovery inserted the same way, then OpenID Connect Discovery appended to a
// path-bearing issuer.
func metadataURLs(issuer *url.URL) []string {
	path := strings.TrimSuffix(issuer.EscapedPath(), "/")
	base := issuer.Scheme + "://" + issuer.Host
	urls := []string{
		base + "/.well-known/oauth-authorization-server" + path,
		base + "/.well-known/openid-configuration" + path,
	}
	if path != "" {
		urls = append(urls, base+path+"/.well-known/openid-configuration")
	}
	return urls
}

// serverMetadata is what the verifiers read of an authorization server's metadata.
type serverMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// discover fetches issuer's metadata, trying each location of [metadataURLs] until one exists
// (404 and other 4xx move on to the next; a failure to reach the server, a 5xx or a malformed
// document ends the search). The document's issuer must be the configured one, character for
// character (RFC 8414 §3.3).
func discover(ctx context.Context, client *http.Client, timeout time.Duration, issuer string) (*serverMetadata, error) {
	u, err := checkURL("issuer", issuer)
	if err != nil {
		return nil, err
	}
	var last error
	for _, loc := range metadataURLs(u) {
		req, err := http.NewRequest(http.MethodGet, loc, nil)
		if err != nil {
			return nil, fmt.Errorf("auth: metadata of %s: %w", issuer, err)
		}
		var md serverMetadata
		err = doJSON(ctx, client, timeout, req, &md)
		var se *StatusError
		if errors.As(err, &se) && se.Status >= 400 && se.Status < 500 {
			last = err
			continue
		}
		if err != nil {
			return nil, err
		}
		if md.Issuer != issuer {
			return nil, fmt.Errorf("auth: %s names the issuer %q, not %q", loc, md.Issuer, issuer)
		}
		return &md, nil
	}
	return nil, fmt.Errorf("auth: no authorization server metadata for %s: %w", issuer, last)
}

// flight is one fetch in progress, which the requests that need its result wait for.
type flight struct {
	done chan struct{}
	// abandoned: the request running it went away before it ended, so it decided nothing and
	// a waiting request must start its own.
	abandoned bool
	err       error
}

// flights runs at most one introspection per token at a time: the first request that needs
// one runs it on its own goroutine, the others wait for its result or for their own context to
// end. Unlike a JWK Set fetch ([keyCache.refresh]), an introspection is the starter's: when
// its request goes away it is cancelled (its place among MaxInFlight freed at once) and a
// waiter runs it again, for each distinct token costs one request anyway, and there is no
// refresh clock to keep. (golang.org/x/sync/singleflight lets a waiter neither give up when
// its context ends nor take over a run its starter abandoned.)
type flights[K comparable] struct {
	mu sync.Mutex
	m  map[K]*flight
}

// do runs fetch for key, or waits for the run already in progress and returns its error.
// fetch's context is ctx: when ctx ends during it, the run is abandoned and a waiter runs
// fetch again.
func (g *flights[K]) do(ctx context.Context, key K, fetch func(context.Context) error) error {
	for {
		g.mu.Lock()
		if f, ok := g.m[key]; ok {
			g.mu.Unlock()
			select {
			case <-f.done:
				if f.abandoned {
					continue
				}
				return f.err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if g.m == nil {
			g.m = make(map[K]*flight)
		}
		f := &flight{done: make(chan struct{})}
		g.m[key] = f
		g.mu.Unlock()

		f.err = fetch(ctx)
		f.abandoned = f.err != nil && ctx.Err() != nil
		g.mu.Lock()
		delete(g.m, key)
		g.mu.Unlock()
		close(f.done)
		return f.err
	}
}
