package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes what an exporter POSTs to /v1/traces
// with the protocol's own protobuf types and keeps every span with its service.name.
type otlpReceiver struct {
	ts *httptest.Server

	mu      sync.Mutex
	spans   []receivedSpan
	arrived chan struct{} // size 1: spans arrived
}

type receivedSpan struct {
	service string
	span    *tracepb.Span
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{arrived: make(chan struct{}, 1)}
	r.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
			http.NotFound(w, req)
			return
		}
		body, err := io.ReadAll(req.Body)
		var msg coltracepb.ExportTraceServiceRequest
		if err != nil || proto.Unmarshal(body, &msg) != nil {
			http.Error(w, "not an ExportTraceServiceRequest", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.GetResourceSpans() {
			service := stringAttr(rs.GetResource().GetAttributes(), "service.name")
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					r.spans = append(r.spans, receivedSpan{service: service, span: sp})
				}
			}
		}
		r.mu.Unlock()
		select {
		case r.arrived <- struct{}{}:
		default:
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.ts.Close)
	return r
}

// find waits for a span that match accepts.
func (r *otlpReceiver) find(t *testing.T, what string, match func(receivedSpan) bool) receivedSpan {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		for _, s := range r.spans {
			if match(s) {
				r.mu.Unlock()
				return s
			}
		}
		n := len(r.spans)
		r.mu.Unlock()
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("the receiver has %d spans, none %s", n, what)
		}
	}
}

func stringAttr(attrs []*commonpb.KeyValue, key string) string {
	for _, kv := range attrs {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// TestBinaryExportsToOTLP runs the real binary over HTTP with OTEL_TRACES_EXPORTER=otlp pointed
// at a receiver in the test, makes a call with the client's trace context in _meta, and finds
// the call's span there: in the client's trace, child of the client's span, linked to the
// HTTP server span of its POST. The same run serves the admin listener: health, readiness,
// Prometheus metrics (the engine's collector and OpenTelemetry's, by OTEL_METRICS_EXPORTER) and
// the profiles.
func TestBinaryExportsToOTLP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	rcv := startOTLPReceiver(t)
	b := startHTTPBinaryEnv(t, []string{
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.ts.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=50",
		"OTEL_SERVICE_NAME=otlp-e2e",
		"OTEL_METRICS_EXPORTER=prometheus",
	}, "--admin-addr", "127.0.0.1:0", "--log-level", "info")
	admin := ""
	for _, line := range strings.Split(b.stderr.String(), "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "admin" {
			admin = "http://" + rec.Addr
		}
	}
	if admin == "" {
		t.Fatalf("no admin line:\n%s", b.stderr.String())
	}

	status, hdr, body := b.post("", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	const (
		clientTrace = "0af7651916cd43dd8448eb211c80319c"
		clientSpan  = "b7ad6b7169203331"
	)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` +
		`"_meta":{"traceparent":"00-` + clientTrace + `-` + clientSpan + `-01"}}}`
	if status, _, got := b.post("", sid, call); status != 200 || got != `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}` {
		t.Fatalf("echo: %d %s", status, got)
	}

	got := rcv.find(t, "tools/call echo in the client's trace", func(s receivedSpan) bool {
		return s.span.GetName() == "tools/call echo" && hex.EncodeToString(s.span.GetTraceId()) == clientTrace
	})
	sp := got.span
	if got.service != "otlp-e2e" || sp.GetKind() != tracepb.Span_SPAN_KIND_SERVER || hex.EncodeToString(sp.GetParentSpanId()) != clientSpan {
		t.Errorf("span of service %q, kind %v, parent %x; want otlp-e2e, server, %s", got.service, sp.GetKind(), sp.GetParentSpanId(), clientSpan)
	}
	attrs := map[string]string{}
	for _, kv := range sp.GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	for k, v := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"jsonrpc.request.id": "1", "mcp.session.id": sid, "mcp.protocol.version": "2025-11-25", "network.transport": "tcp",
	} {
		if attrs[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
	if len(sp.GetLinks()) != 1 {
		t.Fatalf("links %v, want the HTTP server span", sp.GetLinks())
	}
	link := sp.GetLinks()[0]
	rcv.find(t, "the linked HTTP server span", func(s receivedSpan) bool {
		return s.span.GetName() == "POST /mcp" && s.span.GetKind() == tracepb.Span_SPAN_KIND_SERVER &&
			string(s.span.GetSpanId()) == string(link.GetSpanId()) && string(s.span.GetTraceId()) == string(link.GetTraceId())
	})

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if status, body := get("/healthz"); status != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", status, body)
	}
	if status, body := get("/readyz"); status != 200 || body != "ok\n" {
		t.Errorf("/readyz: %d %q", status, body)
	}
	status, metrics := get("/metrics")
	for _, want := range []string{
		`toolgrain_tool_calls_total{outcome="ok",tool="echo"} 1`, // metrics/prom
		`mcp_server_operation_duration_seconds_bucket{`,          // OpenTelemetry's exporter
		`mcp_server_operation_duration_seconds_count{gen_ai_operation_name="execute_tool",gen_ai_tool_name="echo",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",network_transport="tcp"`,
		`go_goroutines `,
	} {
		if status != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics (%d) lacks %s", status, want)
		}
	}
	if status, _ := get("/debug/pprof/cmdline"); status != 200 {
		t.Errorf("/debug/pprof/cmdline: %d", status)
	}
	http.DefaultClient.CloseIdleConnections()

	if err := b.stop(); err != nil {
		t.Errorf("exit: %v\n%s", err, b.stderr.String())
	}
}

// TestBinaryConsoleTracesOverStdio: over stdio the console exporter writes to stderr, and
// stdout carries the protocol's messages only.
func TestBinaryConsoleTracesOverStdio(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	cmd := exec.Command(bin, "--log-level", "warn")
	cmd.Env = append(cmd.Environ(), "OTEL_TRACES_EXPORTER=console", "OTEL_METRICS_EXPORTER=console")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`+"\n")
	var lines []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) == 2 {
			_ = stdin.Close() // EOF once both are answered: the server flushes and exits
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"jsonrpc":"2.0","id":0,"result":`) ||
		lines[1] != `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}` {
		t.Errorf("stdout carries more than the two answers:\n%s", strings.Join(lines, "\n"))
	}
	if e := stderr.String(); !strings.Contains(e, `"Name":"tools/call echo"`) || !strings.Contains(e, "mcp.server.operation.duration") {
		t.Errorf("stderr lacks the console span and metrics:\n%.2000s", e)
	}
}
