package cluster

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestStartRefusesBadConfig(t *testing.T) {
	secret := bytes.Repeat([]byte{1}, MinSecretSize)
	auto := func(c Config) Config {
		c.Members, c.HealthPort = []string{"127.0.0.1:6330"}, 6330
		return c
	}
	tests := []struct {
		name string
		give Config
		want string
	}{
		{"short_secret", auto(Config{Addr: "127.0.0.1:7001", Secret: secret[:31]}), "secret of 31 bytes (want at least 32)"},
		{"no_port", auto(Config{Addr: "127.0.0.1", Secret: secret}), `addr "127.0.0.1"`},
		{"port_zero", auto(Config{Addr: "127.0.0.1:0", Secret: secret}), "port must be 1..65535"},
		{"beyond_loopback_plain", auto(Config{Addr: "0.0.0.0:7001", Secret: secret}), "beyond loopback: remote traffic would be plain text"},
		{"beyond_loopback_named", auto(Config{Addr: "node1.example.com:7001", Secret: secret}), "beyond loopback"},
		{"automanaged_without_members", Config{Addr: "127.0.0.1:7001", Secret: secret}, "needs Members and HealthPort"},
	}
	// A health port in use: the provider would only log that it cannot listen.
	busy, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	tests = append(tests, struct {
		name string
		give Config
		want string
	}{"health_port_in_use", Config{Addr: "127.0.0.1:7001", Secret: secret, Members: []string{"127.0.0.1:" + strconv.Itoa(port)}, HealthPort: port},
		"cluster: health endpoint: listen tcp 0.0.0.0:" + strconv.Itoa(port) + ": bind: address already in use"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Start(tt.give)
			if err == nil {
				n.Close()
				t.Fatalf("Start succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestAttachRefusesShortSecret(t *testing.T) {
	if _, err := Attach(nil, []byte("short"), nil); err == nil || !strings.Contains(err.Error(), "secret of 5 bytes") {
		t.Fatalf("Attach: %v, want a short-secret error", err)
	}
}
