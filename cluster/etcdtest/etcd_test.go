package etcdtest

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/cluster"
	"github.com/toolgrain/toolgrain/tools"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts an embedded etcd server on loopback and returns its client URL.
func startEtcd(t *testing.T) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.LogLevel = "error"
	client, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(freePort(t)))
	peer, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(freePort(t)))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		t.Fatal("etcd not ready within 20 s")
	}
	return client.String()
}

// member is one in-process member: its node, server and HTTP endpoint.
type member struct {
	node *cluster.Node
	srv  *toolgrain.Server
	http *httptest.Server
	host *pcluster.Cluster // the host's cluster, for a member made with Attach
}

// startMember starts a member: with cluster.Start, or, when host, as a host does that runs
// its own protoactor cluster and plugs the engine into it with cluster.Attach.
func startMember(t *testing.T, etcdURL string, secret []byte, host bool) *member {
	t.Helper()
	provider, err := etcd.NewWithConfig("/toolgrain-test", clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var node *cluster.Node
	var hostCluster *pcluster.Cluster
	if host {
		system := actor.NewActorSystem()
		hostCluster = pcluster.New(system, pcluster.Configure("toolgrain", provider, disthash.New(), remote.Configure("127.0.0.1", freePort(t))))
		hostCluster.StartMember()
		node, err = cluster.Attach(hostCluster, secret, nil)
	} else {
		node, err = cluster.Start(cluster.Config{Addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), Provider: provider, Secret: secret})
	}
	if err != nil {
		t.Fatal(err)
	}
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Cluster:      node,
		RequestState: toolgrain.RequestStateConfig{Key: secret},
		Tools: []tools.Tool{{Name: "echo", InputSchema: []byte(`{"type":"object","properties":{"text":{"type":"string"}}}`),
			Handler: tools.Func(func(_ context.Context, in struct {
				Text string `json:"text"`
			}) (*tools.Result, error) {
				return tools.TextResult(in.Text), nil
			})}},
	})
	if err != nil {
		node.Close()
		t.Fatal(err)
	}
	m := &member{node: node, srv: srv, http: httptest.NewServer(srv.Handler()), host: hostCluster}
	return m
}

func (m *member) stop() {
	m.http.Close()
	_ = m.srv.Close()
	m.node.Close()
	if m.host != nil {
		m.host.Shutdown(true) // the host's own cluster, which Close leaves running
	}
}

func post(t *testing.T, base, sid, body string) (int, string, string) {
	t.Helper()
	status, id, data, err := tryPost(base, sid, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, id, data
}

// tryPost posts body to a 2025-11-25 endpoint at base, in session sid when it is not empty, and
// returns the status, the session id answered and the body; err when no answer came within 10 s.
func tryPost(base, sid, body string) (status int, id, data string, err error) {
	req, _ := http.NewRequest(http.MethodPost, base, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b), nil
}

// TestClusterOnEtcd forms a cluster of two members through protoactor-go's etcd provider: a
// session opened on one member is served through the other; when its home leaves, the other
// answers 404 for it once etcd no longer lists the home.
func TestClusterOnEtcd(t *testing.T) {
	testTwoMembers(t, false)
}

// TestHostClusterAttach is TestClusterOnEtcd with the second member a host that runs its own
// protoactor cluster and plugs the engine into it (cluster.Attach, toolgrain.Config.Cluster).
func TestHostClusterAttach(t *testing.T) {
	testTwoMembers(t, true)
}

func testTwoMembers(t *testing.T, hostB bool) {
	etcdURL := startEtcd(t)
	secret := bytes.Repeat([]byte("s"), 32)
	a := startMember(t, etcdURL, secret, false)
	b := startMember(t, etcdURL, secret, hostB)
	defer b.stop()

	deadline := time.Now().Add(20 * time.Second)
	for len(a.node.Members()) != 2 || len(b.node.Members()) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("members: a sees %v, b sees %v; want 2 each", a.node.Members(), b.node.Members())
		}
		time.Sleep(50 * time.Millisecond)
	}
	status, sid, body := post(t, a.http.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %q %s", status, sid, body)
	}
	if status, _, _ := post(t, b.http.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("initialized through b: %d", status)
	}
	status, _, body = post(t, b.http.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"via b"}}}`)
	if want := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"via b"}]}}`; status != 200 || body != want {
		t.Fatalf("call through b: %d %s, want 200 %s", status, body, want)
	}

	a.stop()
	deadline = time.Now().Add(10 * time.Second)
	for {
		status, _, body = post(t, b.http.URL, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		if status == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after its home left, the session answers %d %s, want 404", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
