// Package oidctest runs a real OAuth 2.0 / OpenID Connect authorization server for tests:
// oidc-provider (npm, OpenID certified), started by interop/oidc/server.mjs under the Node 22
// that interop/oidc/package.json pins. Without it (interop/oidc/node_modules missing) [Start]
// skips the test, unless TOOLGRAIN_REQUIRE_OIDC=1 (set by .ci/run, which installs it) makes
// that a failure.
package oidctest

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
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
)

// startTimeout bounds the wait for the authorization server to listen: Node loads
// oidc-provider in about half a second on an idle machine, several seconds on a busy one.
const startTimeout = 60 * time.Second

// Key is one key the authorization server signs with, whose private half the test holds: it
// wrote the server's key set.
type Key struct {
	KID  string
	Alg  string
	Priv crypto.Signer
}

// NewRSAKey returns a new RSA 2048 key for RS256 named kid.
func NewRSAKey(t testing.TB, kid string) Key {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return Key{KID: kid, Alg: "RS256", Priv: k}
}

// NewECKey returns a new P-256 key for ES256 named kid.
func NewECKey(t testing.TB, kid string) Key {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Key{KID: kid, Alg: "ES256", Priv: k}
}

// WriteKeySet writes keys as a private JWK Set to a file of dir and returns its path.
func WriteKeySet(t testing.TB, dir, name string, keys ...Key) string {
	set := struct {
		Keys []jwkset.JWKMarshal `json:"keys"`
	}{}
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.Priv, jwkset.JWKOptions{
			Marshal:  jwkset.JWKMarshalOptions{Private: true},
			Metadata: jwkset.JWKMetadataOptions{KID: k.KID, ALG: jwkset.ALG(k.Alg), USE: jwkset.UseSig},
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

// Server is a running oidc-provider. Stop it with [Server.Stop] and [Server.Resume] to stand
// for an issuer that is down; it ends with the test.
type Server struct {
	// Issuer is its issuer identifier, http://127.0.0.1:PORT.
	Issuer string
	// Keys are the keys it signs with now: Keys[0] is RSA (RS256), Keys[1] EC (ES256).
	Keys []Key

	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	dir   string
}

// Dir returns the directory of the server's script and packages, interop/oidc of the module
// the test runs in.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "interop", "oidc")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Start starts the authorization server with a fresh RSA key (kid r1) and EC key (kid e1) on a
// free loopback port, and waits for it to listen. Its clients are listed in server.mjs.
func Start(t testing.TB) *Server {
	t.Helper()
	dir := Dir(t)
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider")); err != nil {
		if os.Getenv("TOOLGRAIN_REQUIRE_OIDC") == "1" {
			t.Fatalf("oidc-provider is not installed in %s (npm ci there), and TOOLGRAIN_REQUIRE_OIDC=1", dir)
		}
		t.Skipf("oidc-provider is not installed: run npm ci in %s", dir)
	}
	as := &Server{t: t, dir: t.TempDir()}
	as.Keys = []Key{NewRSAKey(t, "r1"), NewECKey(t, "e1")}
	keys := WriteKeySet(t, as.dir, "keys.json", as.Keys...)
	as.cmd = exec.Command(node, "server.mjs", keys, "0")
	as.cmd.Dir = dir
	as.cmd.Stderr = &prefixWriter{t: t}
	var err error
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
	first := as.readLine(startTimeout)
	var hello struct{ Issuer string }
	if err := json.Unmarshal([]byte(first), &hello); err != nil || hello.Issuer == "" {
		t.Fatalf("authorization server said %q", first)
	}
	as.Issuer = hello.Issuer
	return as
}

// readLine returns the server's next line of output, failing the test after timeout.
func (as *Server) readLine(timeout time.Duration) string {
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
func (as *Server) command(cmd string) {
	as.t.Helper()
	if _, err := io.WriteString(as.stdin, cmd+"\n"); err != nil {
		as.t.Fatal(err)
	}
	if line := as.readLine(30 * time.Second); line != "ok" {
		as.t.Fatalf("%s: %s", cmd, line)
	}
}

// Stop closes the server's listener and connections: the issuer is down (connection refused).
// Its state (clients, tokens issued, keys) is kept.
func (as *Server) Stop() { as.command("stop") }

// Resume listens again on the same port: the issuer is back.
func (as *Server) Resume() { as.command("start") }

// Rotate makes the server sign with new keys, and publish only those, without a restart.
func (as *Server) Rotate(keys ...Key) {
	as.Keys = keys
	as.command("rotate " + WriteKeySet(as.t, as.dir, fmt.Sprintf("keys-%d.json", time.Now().UnixNano()), keys...))
}

// close ends the server: closing its standard input makes it exit; it is killed if it has
// not within 10 s.
func (as *Server) close() {
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

// Token obtains an access token by the client credentials grant for resource (none when
// empty) with scope (the client's own when empty), failing the test if the server refuses.
func (as *Server) Token(client, secret, scope, resource string) string {
	as.t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	req, err := http.NewRequest(http.MethodPost, as.Issuer+"/token", strings.NewReader(form.Encode()))
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

// Revoke revokes token, issued to client, at the server.
func (as *Server) Revoke(client, secret, token string) {
	as.t.Helper()
	req, err := http.NewRequest(http.MethodPost, as.Issuer+"/token/revocation", strings.NewReader(url.Values{"token": {token}}.Encode()))
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
	resp.Body.Close()
	if resp.StatusCode != 200 {
		as.t.Fatalf("revocation: %d", resp.StatusCode)
	}
}
