package auth_test

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// countingTransport counts the requests a verifier sends to the authorization server, by path.
type countingTransport struct {
	base  *http.Transport
	total atomic.Int64
	jwks  atomic.Int64
	intro atomic.Int64
}

func newCountingTransport() *countingTransport {
	return &countingTransport{base: &http.Transport{}}
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.total.Add(1)
	switch {
	case strings.HasSuffix(r.URL.Path, "/jwks"):
		c.jwks.Add(1)
	case strings.HasSuffix(r.URL.Path, "/introspection"):
		c.intro.Add(1)
	}
	return c.base.RoundTrip(r)
}
