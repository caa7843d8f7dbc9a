package cluster

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/protocol"
)

// swallow is a tunnel that takes every forwarded request and never answers: a request lost on
// the way, as when protoactor-go replaces an endpoint writer's connection, looks so to the edge.
type swallow struct{ got chan struct{} }

func (s swallow) Receive(c actor.Context) {
	if _, ok := c.Message().(actor.SystemMessage); ok {
		return
	}
	if _, ok := c.Message().(actor.AutoReceiveMessage); ok {
		return
	}
	select {
	case s.got <- struct{}{}:
	default:
	}
}

// TestForwardHomeSilent: a home that never acknowledges a forwarded request costs the client
// ackWait and a 503 to send again, not a request that hangs until the client gives up; a home
// that acknowledges is served as before.
func TestForwardHomeSilent(t *testing.T) {
	a, b := startPair(t)
	defer func(d time.Duration) { ackWait = d }(ackWait)
	ackWait = 300 * time.Millisecond

	b.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(2 * ackWait) // longer than ackWait before its head: the receipt holds the edge
		_, _ = io.WriteString(w, "served")
	}), 0)
	edge := httptest.NewServer(a.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the edge served a request of a session homed on the other member")
	}), 0))
	defer edge.Close()
	sid := b.newSessionID()
	post := func() (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, edge.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set(protocol.HeaderSessionID, sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header
	}

	if status, body, _ := post(); status != http.StatusOK || body != "served" {
		t.Fatalf("acknowledged home: %d %q, want 200 \"served\"", status, body)
	}

	// b's tunnel replaced by one that swallows what it gets.
	if err := b.system.Root.StopFuture(b.tunnel).Wait(); err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 1)
	pid, err := b.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return swallow{got: got} }), tunnelName)
	if err != nil {
		t.Fatal(err)
	}
	b.tunnel = pid
	start := time.Now()
	status, body, hdr := post()
	took := time.Since(start)
	select {
	case <-got:
	default:
		t.Fatal("the request never reached the home's tunnel")
	}
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Service Unavailable: the session's member did not acknowledge the request"}}`
	if status != http.StatusServiceUnavailable || body != want || hdr.Get("Retry-After") == "" {
		t.Fatalf("silent home: %d %q Retry-After %q, want 503 %s with Retry-After", status, body, hdr.Get("Retry-After"), want)
	}
	if took < ackWait || took > 30*ackWait {
		t.Errorf("the refusal took %v, want about ackWait (%v)", took, ackWait)
	}
}
