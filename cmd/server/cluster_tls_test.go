package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeTLS writes a CA and a member certificate it signs (for 127.0.0.1, as server and client)
// to dir, and returns the paths of the certificate, its key and the CA.
func writeTLS(t *testing.T, dir string) (cert, key, ca string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolgrain test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	memberKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "member"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &memberKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(memberKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("member.pem", "CERTIFICATE", der), write("member.key", "EC PRIVATE KEY", keyDER), write("ca.pem", "CERTIFICATE", caDER)
}

// TestClusterMutualTLS runs two members whose remote traffic is mutual TLS: a session opened
// on one is served through the other.
func TestClusterMutualTLS(t *testing.T) {
	t.Parallel()
	cert, key, ca := writeTLS(t, t.TempDir())
	c := startClusterWith(t, 2, func(int, []string) []string {
		return []string{"--cluster-tls-cert", cert, "--cluster-tls-key", key, "--cluster-tls-ca", ca}
	})
	sid, _ := c.initialize(c.members[0].base)
	c.expect(c.members[1].base, request{session: sid, body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over tls"}}}`},
		200, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"over tls"}]}}`)

	// The remote port speaks TLS, and only to a client with a certificate the CA signed.
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(ca)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	handshake := func(certs []tls.Certificate) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", c.members[0].remote,
			&tls.Config{RootCAs: roots, Certificates: certs, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS13})
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = conn.Read(make([]byte, 1)) // TLS 1.3 reports a refused client certificate here
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return nil // accepted: the server waits for the client's HTTP/2 preface
		}
		return err
	}
	if err := handshake([]tls.Certificate{pair}); err != nil {
		t.Fatalf("TLS with the member certificate: %v", err)
	}
	if err := handshake(nil); err == nil {
		t.Fatal("TLS without a client certificate was accepted")
	}
}
