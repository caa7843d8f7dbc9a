package auth_test

import (
	"bufio"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
)

// The authorization server of these tests is oidc-provider (npm, OpenID certified), run by
// interop/oidc/server.mjs under the Node 22 that interop/oidc/package.json pins. Without it
// (interop/oidc/node_modules missing) the tests that need it skip, unless
// TOOLGRAIN_REQUIRE_OIDC=1 (set by .ci/run, which installs it) makes that a failure.

// asDir is the directory of the authorization server's script and packages.
var asDir = filepath.Join("..", "interop", "oidc")

// asStartTimeout bounds the wait for the authorization server to listen: Node loads
// oidc-provider in about half a second on an idle machine, several seconds on a busy one.
const asStartTimeout = 60 * time.Second

// signingKey is one key the authorization server signs with, whose private half the test holds:
// it wrote the server's key set.
type signingKey struct {
	kid  string
	alg  string
	priv crypto.Signer
}

func newRSAKey(t testing.TB, kid string) signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: "RS256", priv: k}
}

func newECKey(t testing.TB, kid string) signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: "ES256", priv: k}
}

// writeKeySet writes keys as a private JWK Set to a file of dir and returns its path.
func writeKeySet(t testing.TB, dir, name string, keys ...signingKey) string {
	set := struct {
		Keys []jwkset.JWKMarshal `json:"keys"`
	}{}
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.priv, jwkset.JWKOptions{
			Marshal:  jwkset.JWKMarshalOptions{Private: true},
			Metadata: jwkset.JWKMetadataOptions{KID: k.kid, ALG: jwkset.ALG(k.alg), USE: jwkset.UseSig},
		})
		if err != nil {
			t.Fatal(err)
		}
		set.Keys = append(set.Keys, jwk.Marshal())
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// authServer is a running oidc-provider.
type authServer struct {
	t      testing.TB
	issuer string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	dir    string
	// keys are the keys it signs with now: keys[0] is RSA, keys[1] EC.
	keys []signingKey
}

// startAS starts the authorization server with a fresh RSA key (kid r1) and EC key (kid e1).
func startAS(t testing.TB) *authServer {
	t.Helper()
	dir, err := filepath.Abs(asDir)
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(filepath.Join(asDir, "node_modules", "oidc-provider")); err != nil {
		if os.Getenv("TOOLGRAIN_REQUIRE_OIDC") == "1" {
			t.Fatalf("oidc-provider is not installed in %s (npm ci there), and TOOLGRAIN_REQUIRE_OIDC=1", asDir)
		}
		t.Skipf("oidc-provider is not installed: run npm ci in %s", asDir)
	}
	as := &authServer{t: t, dir: t.TempDir()}
	as.keys = []signingKey{newRSAKey(t, "r1"), newECKey(t, "e1")}
	keys := writeKeySet(t, as.dir, "keys.json", as.keys...)
	as.cmd = exec.Command(node, "server.mjs", keys, "0")
	as.cmd.Dir = dir
	as.cmd.Stderr = &prefixWriter{t: t}
	if as.stdin, err = as.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := as.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := as.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.close)
	as.lines = bufio.NewScanner(out)
	first := as.readLine(asStartTimeout)
	var hello struct{ Issuer string }
	if err := json.Unmarshal([]byte(first), &hello); err != nil || hello.Issuer == "" {
		t.Fatalf("authorization server said %q", first)
	}
	as.issuer = hello.Issuer
	return as
}

// readLine returns the server's next line of output, failing the test after timeout.
func (as *authServer) readLine(timeout time.Duration) string {
	as.t.Helper()
	got := make(chan string, 1)
	// Owned by readLine, which waits for it or kills the server (ending the read) on timeout.
	go func() {
		if as.lines.Scan() {
			got <- as.lines.Text()
			return
		}
		got <- ""
	}()
	select {
	case line := <-got:
		if line == "" {
			as.t.Fatal("the authorization server exited")
		}
		return line
	case <-time.After(timeout):
		_ = as.cmd.Process.Kill()
		<-got
		as.t.Fatalf("the authorization server said nothing for %s", timeout)
		return ""
	}
}

// command sends the server one command and waits for its "ok"; commands are quick (closing or
// opening a listener, building a provider), so 30 s is only there for a machine under load.
func (as *authServer) command(cmd string) {
	as.t.Helper()
	if _, err := io.WriteString(as.stdin, cmd+"\n"); err != nil {
		as.t.Fatal(err)
	}
	if line := as.readLine(30 * time.Second); line != "ok" {
		as.t.Fatalf("%s: %s", cmd, line)
	}
}

func (as *authServer) stop()  { as.command("stop") }
func (as *authServer) start() { as.command("start") }

// rotate makes the server sign with new keys (and publish only those).
func (as *authServer) rotate(keys ...signingKey) {
	as.keys = keys
	as.command("rotate " + writeKeySet(as.t, as.dir, fmt.Sprintf("keys-%d.json", time.Now().UnixNano()), keys...))
}

// close ends the server: closing its standard input makes it exit; it is killed if it has
// not within 10 s.
func (as *authServer) close() {
	_ = as.stdin.Close()
	done := make(chan struct{})
	// Owned by close, which waits for it.
	go func() {
		_ = as.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = as.cmd.Process.Kill()
		<-done
	}
}

// token obtains an access token by the client credentials grant for resource (none when
// empty) with scope (the client's own when empty).
func (as *authServer) token(client, secret, scope, resource string) string {
	as.t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	req, err := http.NewRequest(http.MethodPost, as.issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		as.t.Fatal(err)
	}
	req.SetBasicAuth(client, secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		as.t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		as.t.Fatalf("token for %s: %d %v %s %s", client, resp.StatusCode, err, tok.Error, tok.Description)
	}
	return tok.AccessToken
}

// prefixWriter copies a child process's standard error into the test log.
type prefixWriter struct{ t testing.TB }

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.t.Logf("authorization server: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

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
