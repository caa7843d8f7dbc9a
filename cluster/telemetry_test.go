package cluster

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain/internal/clusterhook"
	"github.com/toolgrain/toolgrain/protocol"
)

// freePorts returns n ports free on loopback at the time of the call.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// startPair starts two members in this process, each with its own actor system, and waits
// (at most 20 s) until each has the other in its member list.
func startPair(t *testing.T) (a, b *Node) {
	t.Helper()
	return startTwo(t, true)
}

// startTwo starts two members in this process, each with its own actor system and the same
// secret. Joined, they are one cluster, and it waits (at most 20 s) until each has the other in
// its member list; else each polls only its own health endpoint, and never sees the other.
func startTwo(t *testing.T, joined bool) (a, b *Node) {
	t.Helper()
	if raceEnabled {
		// protoactor-go's remote races with itself (endpointManager.stop against an endpoint
		// writer's failed dial) when a system shuts down while another runs in the same
		// process; the multi-process tests of cmd/server run members under -race instead.
		t.Skip("two remote members in one process: protoactor-go's shutdown race (upstream)")
	}
	before := goleak.IgnoreCurrent()
	p := freePorts(t, 4)
	secret := bytes.Repeat([]byte{7}, MinSecretSize)
	health := []string{"127.0.0.1:" + strconv.Itoa(p[2]), "127.0.0.1:" + strconv.Itoa(p[3])}
	nodes := make([]*Node, 2)
	for i := range nodes {
		members := health
		if !joined {
			members = health[i : i+1]
		}
		n, err := Start(Config{Addr: "127.0.0.1:" + strconv.Itoa(p[i]), Members: members, HealthPort: p[2+i],
			Refresh: 200 * time.Millisecond, Secret: secret})
		if err != nil {
			t.Fatalf("start member %d: %v", i, err)
		}
		nodes[i] = n
	}
	t.Cleanup(func() {
		nodes[1].Close()
		nodes[0].Close()
		// protoactor-go's dead-letter throttle outlives Shutdown by its period and then ends:
		// wait for it (at most 5 s), so that anything else left is a leak.
		var err error
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if err = goleak.Find(append(upstreamGoroutines, before)...); err == nil {
				return
			}
		}
		t.Errorf("goroutines left after the members closed: %v", err)
	})
	if !joined {
		return nodes[0], nodes[1]
	}
	deadline := time.Now().Add(20 * time.Second)
	for !(nodes[0].alive(nodes[1].addr) && nodes[1].alive(nodes[0].addr)) {
		if time.Now().After(deadline) {
			t.Fatalf("members did not see each other within 20s: %v, %v", nodes[0].Members(), nodes[1].Members())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nodes[0], nodes[1]
}

const clientParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func TestForwardSpanAndMetrics(t *testing.T) {
	a, b := startPair(t)

	// The home's handler: what it saw, then an answer whose end comes 150 ms after its head.
	var mu sync.Mutex
	var sawParent string
	var sawCtx trace.SpanContext
	home := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sawParent, sawCtx = r.Header.Get("Traceparent"), trace.SpanContextFromContext(r.Context())
		mu.Unlock()
		w.Header().Set("X-Home", "b")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "head;")
		w.(http.Flusher).Flush()
		time.Sleep(150 * time.Millisecond)
		_, _ = io.WriteString(w, "end")
	})
	edgeLocal := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the edge served a request of a session homed on the other member")
		w.WriteHeader(http.StatusTeapot)
	})
	b.wrap(home, 0)
	edge := httptest.NewServer(a.wrap(edgeLocal, 0))
	defer edge.Close()
	sid := b.newSessionID()

	post := func() {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, edge.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set(protocol.HeaderSessionID, sid)
		req.Header.Set("Traceparent", clientParent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "head;end" || resp.Header.Get("X-Home") != "b" {
			t.Fatalf("forwarded answer: %d %q %v", resp.StatusCode, body, resp.Header)
		}
	}

	// Without telemetry the home sees the client's headers as they were, and no trace context.
	post()
	mu.Lock()
	if sawParent != clientParent || sawCtx.IsValid() {
		t.Fatalf("without telemetry: home saw traceparent %q and span context %v", sawParent, sawCtx)
	}
	mu.Unlock()

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	readerA, readerB := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
	mpA, mpB := sdkmetric.NewMeterProvider(sdkmetric.WithReader(readerA)), sdkmetric.NewMeterProvider(sdkmetric.WithReader(readerB))
	defer func() { _ = mpA.Shutdown(context.Background()); _ = mpB.Shutdown(context.Background()) }()
	if err := a.setTelemetry(clusterhook.Telemetry{TracerProvider: tp, MeterProvider: mpA}); err != nil {
		t.Fatal(err)
	}
	if err := b.setTelemetry(clusterhook.Telemetry{TracerProvider: tp, MeterProvider: mpB}); err != nil {
		t.Fatal(err)
	}
	if err := a.setTelemetry(clusterhook.Telemetry{TracerProvider: tp}); err == nil {
		t.Fatal("a second setTelemetry succeeded")
	}

	post()
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1 forward span", len(spans))
	}
	s := spans[0]
	if s.Name() != ForwardSpanName || s.SpanKind() != trace.SpanKindClient {
		t.Fatalf("span %q kind %v", s.Name(), s.SpanKind())
	}
	attrs := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		attrs[kv.Key] = kv.Value.String()
	}
	if attrs[attrHome] != b.Address() || attrs["http.request.method"] != "POST" || attrs["http.response.status_code"] != "200" {
		t.Fatalf("span attributes %v, want home %s, POST, 200", attrs, b.Address())
	}
	if got := s.Parent().TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" || s.Parent().SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("forward span's parent %v, want the client's traceparent", s.Parent())
	}
	if d := s.EndTime().Sub(s.StartTime()); d < 150*time.Millisecond {
		t.Fatalf("forward span lasted %v: it must last until the end of the answer (150 ms after its head)", d)
	}
	mu.Lock()
	if sawCtx.SpanID() != s.SpanContext().SpanID() || sawCtx.TraceID() != s.SpanContext().TraceID() || !sawCtx.IsRemote() {
		t.Fatalf("home's request context carries %v, want the forward span %v", sawCtx, s.SpanContext())
	}
	if !strings.Contains(sawParent, s.SpanContext().SpanID().String()) {
		t.Fatalf("home saw traceparent %q, want the forward span's", sawParent)
	}
	mu.Unlock()

	// Two forwards so far, one after the meters were set: the counters come from the member's
	// own counts, the histogram from the forwards it timed.
	wantA := map[string]int64{"toolgrain.cluster.members": 2, "toolgrain.cluster.requests.forwarded": 2, "toolgrain.cluster.requests.served_for_edge": 0}
	checkMetrics(t, readerA, wantA, 1)
	wantB := map[string]int64{"toolgrain.cluster.members": 2, "toolgrain.cluster.requests.forwarded": 0, "toolgrain.cluster.requests.served_for_edge": 2}
	checkMetrics(t, readerB, wantB, 0)
}

func checkMetrics(t *testing.T, r *sdkmetric.ManualReader, want map[string]int64, hops uint64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var gotHops uint64
	var hist bool
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != instrumentationName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				got[m.Name] = d.DataPoints[0].Value
			case metricdata.Sum[int64]:
				if !d.IsMonotonic {
					t.Errorf("%s is not monotonic", m.Name)
				}
				got[m.Name] = d.DataPoints[0].Value
			case metricdata.Histogram[float64]:
				if m.Name != "toolgrain.cluster.forward.duration" || m.Unit != "s" {
					t.Errorf("histogram %s in %s", m.Name, m.Unit)
				}
				hist = true
				for _, p := range d.DataPoints {
					gotHops += p.Count
				}
			}
		}
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %d (reported %v), want %d", k, g, ok, v)
		}
	}
	if hops > 0 && !hist || gotHops != hops {
		t.Errorf("forward.duration counted %d hops, want %d", gotHops, hops)
	}
}
