package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/toolgrain/toolgrain/cluster"
)

// clusterOptions are the settings of a cluster member (--cluster-addr) and of a local cluster
// (--cluster-local).
type clusterOptions struct {
	local      int
	addr       string
	members    listFlag
	etcd       listFlag
	healthPort int
	secretFile string
	insecure   bool
	tlsCert    string
	tlsKey     string
	tlsCA      string
	refresh    time.Duration
	worker     bool
	remoteTool string
}

func (o *clusterOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&o.local, "cluster-local", 0, "HTTP: start a local cluster of `N` member processes on loopback, serving /mcp on the --addr port and the N-1 ports after it (see docs/cluster.md)")
	fs.StringVar(&o.addr, "cluster-addr", "", "HTTP: be a cluster member whose remote (gRPC) listens on `HOST:PORT` (at most 96 bytes: session ids carry it sealed); the other members reach it there")
	fs.Var(&o.members, "cluster-member", "cluster: the automanaged health endpoint `HOST:PORT` of a member, this one included (repeatable, or comma-separated): a fixed fleet")
	fs.Var(&o.etcd, "cluster-etcd", "cluster: find the members through etcd at the client `URL` (repeatable, or comma-separated) instead of --cluster-member: protoactor-go's etcd provider")
	fs.IntVar(&o.healthPort, "cluster-health-port", 0, "cluster: the `port` of this member's automanaged health endpoint (GET /_health, on every interface)")
	fs.StringVar(&o.secretFile, "cluster-secret-file", "", "cluster: read the secret that signs session ids from `PATH` (at least 32 bytes, the same on every member; default: the --request-state-key-file)")
	fs.BoolVar(&o.insecure, "cluster-insecure", false, "cluster: allow a --cluster-addr beyond loopback without TLS (member traffic in plain text)")
	fs.StringVar(&o.tlsCert, "cluster-tls-cert", "", "cluster: this member's certificate `PATH` (PEM) for mutual TLS between members")
	fs.StringVar(&o.tlsKey, "cluster-tls-key", "", "cluster: the key `PATH` (PEM) of --cluster-tls-cert")
	fs.StringVar(&o.tlsCA, "cluster-tls-ca", "", "cluster: the CA certificates `PATH` (PEM) that sign the members' certificates")
	fs.DurationVar(&o.refresh, "cluster-refresh", 0, "cluster: how often the automanaged provider polls the members (0: 1s)")
	fs.BoolVar(&o.worker, "cluster-worker", false, "cluster: host the demonstration worker actor that runs the remote_sleep tool's calls")
	fs.StringVar(&o.remoteTool, "cluster-remote-tools", "", "cluster: serve the tool remote_sleep, whose calls run on the workers of the members at remote addresses `HOST:PORT[,...]`, round robin over those alive")
}

func (o *clusterOptions) check(transport, stateKeyFile string) error {
	if o.local == 0 && o.addr == "" {
		if len(o.members) > 0 || len(o.etcd) > 0 || o.healthPort != 0 || o.secretFile != "" || o.tlsCert != "" || o.worker || o.remoteTool != "" {
			return errors.New("--cluster-member, --cluster-etcd, --cluster-health-port, --cluster-secret-file, --cluster-tls-*, --cluster-worker and --cluster-remote-tools need --cluster-addr")
		}
		return nil
	}
	if transport != "http" {
		return errors.New("a cluster needs --transport http")
	}
	if o.local < 0 || o.local > 64 {
		return fmt.Errorf("--cluster-local %d: want 1..64", o.local)
	}
	if o.local > 0 && o.addr != "" {
		return errors.New("--cluster-local starts its own members: leave out --cluster-addr")
	}
	if o.addr != "" {
		if o.secretFile == "" && stateKeyFile == "" {
			return errors.New("--cluster-addr needs a shared secret: --cluster-secret-file or --request-state-key-file")
		}
		switch {
		case len(o.etcd) > 0 && (len(o.members) > 0 || o.healthPort != 0):
			return errors.New("--cluster-etcd finds the members itself: leave out --cluster-member and --cluster-health-port")
		case len(o.etcd) == 0 && (len(o.members) == 0 || o.healthPort == 0):
			return errors.New("--cluster-addr needs --cluster-member (every member's health endpoint) and --cluster-health-port, or --cluster-etcd")
		}
		if (o.tlsCert == "") != (o.tlsKey == "") || (o.tlsCert != "" && o.tlsCA == "") {
			return errors.New("--cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca go together")
		}
	}
	return nil
}

// memberList returns --cluster-member with comma-separated values split.
func (o *clusterOptions) memberList() []string { return splitList(o.members) }

// splitList returns the values of a repeatable flag with comma-separated values split.
func splitList(values []string) []string {
	var out []string
	for _, m := range values {
		for _, s := range strings.Split(m, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// startMember joins the cluster as --cluster-addr says.
func (o *clusterOptions) startMember(stateKeyFile string, log *zap.Logger) (*cluster.Node, error) {
	file := o.secretFile
	if file == "" {
		file = stateKeyFile
	}
	secret, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	cfg := cluster.Config{
		Addr:          o.addr,
		Members:       o.memberList(),
		HealthPort:    o.healthPort,
		Refresh:       o.refresh,
		Secret:        secret,
		AllowInsecure: o.insecure,
		Logger:        log,
	}
	if len(o.etcd) > 0 {
		cfg.Provider, err = etcd.NewWithConfig(etcdPrefix, clientv3.Config{Endpoints: splitList(o.etcd), DialTimeout: etcdDialTimeout})
		if err != nil {
			return nil, fmt.Errorf("cluster etcd: %w", err)
		}
	}
	if o.tlsCert != "" {
		if cfg.TLS, err = loadTLS(o.tlsCert, o.tlsKey, o.tlsCA); err != nil {
			return nil, err
		}
	}
	return cluster.Start(cfg)
}

// etcdPrefix is the key prefix under which the members register in etcd, and etcdDialTimeout
// bounds the connection to it.
const (
	etcdPrefix      = "/toolgrain"
	etcdDialTimeout = 5 * time.Second
)

// loadTLS returns a mutual-TLS configuration: this member's certificate, and the CA that must
// have signed every other member's, as client and as server.
func loadTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster tls: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("cluster tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cluster tls: no certificate in %s", caFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// runLocalCluster starts o.cluster.local members of this program as child processes on
// loopback, member i serving /mcp on the --addr port + i, with free loopback ports for their
// remote and health endpoints and one request-state key (a fresh one in a temporary file when
// --request-state-key-file is not given) that also signs session ids. Every member gets the
// other flags as given (--diagnostics-file, --auth-token, ...). It writes one line per member to
// stderr ("member I pid P url URL"), forwards SIGINT/SIGTERM (ctx) to the members and returns
// when all have exited; a member that dies leaves the others running.
//
// Separate processes rather than members in one process: a member's death then is a real
// process death (the failure the cluster exists to survive), and protoactor's automanaged
// provider keeps its state in package-level variables, so that one process holds one member.
func runLocalCluster(ctx context.Context, o *options, args []string, stderr io.Writer) error {
	host, portText, _ := net.SplitHostPort(o.http.addr)
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port+o.cluster.local-1 > 65535 {
		return fmt.Errorf("--cluster-local needs an --addr with a fixed port, got %q", o.http.addr)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	keyFile := o.stateKeyFile
	if keyFile == "" {
		f, err := os.CreateTemp("", "toolgrain-cluster-key-*")
		if err != nil {
			return fmt.Errorf("cluster key: %w", err)
		}
		defer os.Remove(f.Name())
		key := make([]byte, 32)
		_, _ = rand.Read(key) // crypto/rand.Read never fails
		_, err = f.Write(key)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("cluster key: %w", err)
		}
		keyFile = f.Name()
	}
	n := o.cluster.local
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	var health []string
	for i := 0; i < n; i++ {
		health = append(health, net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[n+i])))
	}
	base := withoutFlags(args, "cluster-local", "addr", "request-state-key-file")
	type exit struct {
		i   int
		err error
	}
	exits := make(chan exit, n)
	cmds := make([]*exec.Cmd, 0, n)
	for i := 0; i < n; i++ {
		margs := append(append([]string(nil), base...),
			"--addr", net.JoinHostPort(host, strconv.Itoa(port+i)),
			"--cluster-addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])),
			"--cluster-health-port", strconv.Itoa(ports[n+i]),
			"--cluster-member", strings.Join(health, ","),
			"--request-state-key-file", keyFile,
		)
		cmd := exec.Command(self, margs...)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		cmd.SysProcAttr = memberProcAttr()
		if err := cmd.Start(); err != nil {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
			return fmt.Errorf("cluster: start member %d: %w", i, err)
		}
		fmt.Fprintf(stderr, "member %d pid %d url http://%s%s\n", i, cmd.Process.Pid, net.JoinHostPort(host, strconv.Itoa(port+i)), endpoint)
		cmds = append(cmds, cmd)
		// Owned by runLocalCluster, which receives every exit before it returns.
		go func(i int, cmd *exec.Cmd) { exits <- exit{i, cmd.Wait()} }(i, cmd)
	}
	var failed error
	live, signalled := n, false
	done := ctx.Done()
	for live > 0 {
		select {
		case <-done:
			done, signalled = nil, true
			for _, c := range cmds {
				_ = c.Process.Signal(syscall.SIGTERM)
			}
		case e := <-exits:
			live--
			if e.err != nil && !signalled {
				fmt.Fprintf(stderr, "member %d exited: %v\n", e.i, e.err)
				failed = fmt.Errorf("member %d: %w", e.i, e.err)
			}
		}
	}
	if signalled {
		return nil
	}
	return failed
}

// freePorts returns n distinct TCP ports free now on every interface, drawn between 10000 and
// the start of the kernel's ephemeral range. A port from the ephemeral range (what listening on
// port 0 gives) is no good here: once released for the member to bind, the kernel may give it
// again, as the local port of any process's next outgoing connection, before the member has bound
// it, and protoactor's health endpoint then fails to listen (it only logs that) and the member
// never joins the cluster.
func freePorts(n int) ([]int, error) {
	low, high := 10000, ephemeralStart()
	taken := make(map[int]bool, n)
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("cluster: found %d free ports of %d between %d and %d", len(ports), n, low, high)
		}
		port := low + mrand.IntN(high-low)
		if taken[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		taken[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range (Linux), or 32768.
func ephemeralStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var first int
	if _, err := fmt.Sscan(string(data), &first); err != nil || first <= 11000 {
		return 32768
	}
	return first
}

// withoutFlags returns args without the named flags and their values (-name v, --name v,
// -name=v, --name=v).
func withoutFlags(args []string, names ...string) []string {
	drop := func(a string) (bool, bool) { // matched, takes the next argument
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		for _, n := range names {
			if a == n {
				return true, true
			}
			if strings.HasPrefix(a, n+"=") {
				return true, false
			}
		}
		return false, false
	}
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			out = append(out, args[i:]...)
			break
		}
		if m, next := drop(args[i]); m {
			if next {
				i++
			}
			continue
		}
		out = append(out, args[i])
	}
	return out
}
