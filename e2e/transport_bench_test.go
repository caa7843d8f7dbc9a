package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/protocol"
)

const benchInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`

// appendEchoCall appends the tools/call line of one echo call with the given id.
func appendEchoCall(b []byte, id int) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`...)
}

func newBenchServer(b *testing.B) *toolgrain.Server {
	b.Helper()
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools()})
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// BenchmarkServeStdioEcho measures one echo call through the whole stdio transport, one call
// at a time: the line is read and decoded, the call validated and run by its request actor, and
// the response encoded and written. The client side reuses its buffers, so B/op is the server's.
func BenchmarkServeStdioEcho(b *testing.B) {
	conn := startBenchStdio(b, newBenchServer(b))
	inW, out := conn.in, conn.out
	var line []byte
	b.ReportAllocs()
	id := 0
	for b.Loop() {
		id++
		line = append(appendEchoCall(line[:0], id), '\n')
		if _, err := inW.Write(line); err != nil {
			b.Fatal(err)
		}
		resp, err := out.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if !bytes.Contains(resp, []byte(`"hello"`)) {
			b.Fatalf("unexpected response %s", resp)
		}
	}
	b.StopTimer()
	conn.stop(b)
}

// BenchmarkServeStdioEchoModern is BenchmarkServeStdioEcho in the modern era: no handshake,
// the envelope in every call's _meta, as mcpbench --era modern sends it.
func BenchmarkServeStdioEchoModern(b *testing.B) {
	srv := newBenchServer(b)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	out := bufio.NewReader(outR)
	done := make(chan error, 1)
	// Owned by the benchmark: closing its input below ends it, and the benchmark waits for it.
	go func() { done <- srv.ServeStdio(context.Background(), inR, outW) }()
	var line []byte
	b.ReportAllocs()
	id := 0
	for b.Loop() {
		id++
		line = append(line[:0], `{"jsonrpc":"2.0","id":`...)
		line = strconv.AppendInt(line, int64(id), 10)
		line = append(line, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`+"\n"...)
		if _, err := inW.Write(line); err != nil {
			b.Fatal(err)
		}
		resp, err := out.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if !bytes.Contains(resp, []byte(`"hello"`)) {
			b.Fatalf("unexpected response %s", resp)
		}
	}
	b.StopTimer()
	_ = inW.Close()
	// Owned by the benchmark: it ends when the output pipe closes, below.
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	_ = srv.Close()
	_ = outW.Close()
}

// benchStdio is one initialized stdio connection to a server, over pipes, for benchmarks.
type benchStdio struct {
	srv  *toolgrain.Server
	in   *io.PipeWriter // the client writes its requests here
	out  *bufio.Reader  // and reads the answers here
	outW *io.PipeWriter
	done chan error // ServeStdio's result
}

// startBenchStdio serves a stdio connection on srv and initializes it.
func startBenchStdio(b *testing.B, srv *toolgrain.Server) *benchStdio {
	b.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &benchStdio{srv: srv, in: inW, out: bufio.NewReader(outR), outW: outW, done: make(chan error, 1)}
	// Owned by the benchmark: stop ends it (EOF on its input) and waits for it.
	go func() { s.done <- srv.ServeStdio(context.Background(), inR, outW) }()
	if _, err := io.WriteString(inW, benchInit+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	if _, err := s.out.ReadSlice('\n'); err != nil {
		b.Fatal(err)
	}
	return s
}

// stop ends the connection and closes the server.
func (s *benchStdio) stop(b *testing.B) {
	b.Helper()
	_ = s.in.Close()
	// Owned by stop: it ends when the output pipe closes, below.
	go func() { _, _ = io.Copy(io.Discard, s.out) }()
	if err := <-s.done; err != nil {
		b.Fatal(err)
	}
	_ = s.srv.Close()
	_ = s.outW.Close()
}

// benchWriter is a reusable http.ResponseWriter (with Flush) that keeps nothing.
type benchWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(status int)      { w.status = status }
func (w *benchWriter) Write(p []byte) (int, error) { return w.body.Write(p) }
func (w *benchWriter) Flush()                      {}
func (w *benchWriter) reset()                      { clear(w.h); w.status = 0; w.body.Reset() }

// benchBody is a reusable request body.
type benchBody struct{ bytes.Reader }

func (*benchBody) Close() error { return nil }

// BenchmarkServeHTTPEcho measures one echo call through the Streamable HTTP handler, one POST
// at a time, from the request reaching the handler to the response written: session lookup,
// body read and decode, the call, and the JSON response. net/http's own connection handling
// and header parsing are not included (mcpbench's server CPU per call is, for the whole
// server). The request and writer are reused, so B/op is the handler's.
func BenchmarkServeHTTPEcho(b *testing.B) {
	srv := newBenchServer(b)
	h := srv.Handler()
	w := &benchWriter{h: http.Header{}}
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(benchInit))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	h.ServeHTTP(w, r)
	sid := w.h.Get(protocol.HeaderSessionID)
	if w.status != http.StatusOK || sid == "" {
		b.Fatalf("initialize: status %d, session %q: %s", w.status, sid, w.body.Bytes())
	}
	r.Header.Set(protocol.HeaderSessionID, sid)
	r.Header.Set(protocol.HeaderProtocolVersion, "2025-11-25")
	body := &benchBody{}
	var msg []byte
	b.ReportAllocs()
	id := 0
	for b.Loop() {
		id++
		msg = appendEchoCall(msg[:0], id)
		body.Reset(msg)
		r.Body, r.ContentLength = body, int64(len(msg))
		w.reset()
		h.ServeHTTP(w, r)
		if w.status != http.StatusOK || !bytes.Contains(w.body.Bytes(), []byte(`"hello"`)) {
			b.Fatalf("status %d: %s", w.status, w.body.Bytes())
		}
	}
	b.StopTimer()
	_ = srv.Close()
}
