package demo

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeHTTPStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	pr, pw := io.Pipe()
	// Ends when ServeHTTP returns, after cancel below.
	go func() { served <- ServeHTTP(ctx, "127.0.0.1:0", h, pw) }()
	// The first line names the address once the socket accepts.
	line := make([]byte, 64)
	n, _ := pr.Read(line)
	addr := strings.TrimSpace(strings.TrimPrefix(string(line[:n]), "listening on "))
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("body = %q", body)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	if err := <-served; err != nil {
		t.Errorf("ServeHTTP = %v after its context ended, want nil", err)
	}
}

func TestOptions(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.Register(fs)
	if err := fs.Parse([]string{"--transport", "http", "--addr", ":9"}); err != nil || o.Check() != nil || o.Addr != ":9" {
		t.Errorf("options = %+v", o)
	}
	o.Transport = "carrier-pigeon"
	if o.Check() == nil {
		t.Error("Check accepted an unknown transport")
	}
}

func TestStartPprof(t *testing.T) {
	pr, pw := io.Pipe()
	type started struct {
		stop func()
		err  error
	}
	ch := make(chan started, 1)
	// Ends once StartPprof has returned.
	go func() {
		stop, err := StartPprof("127.0.0.1:0", pw)
		ch <- started{stop, err}
	}()
	line := make([]byte, 64)
	n, _ := pr.Read(line)
	s := <-ch
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.stop()
	addr := strings.TrimSpace(strings.TrimPrefix(string(line[:n]), "pprof on "))
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if !strings.Contains(string(body), "# TotalAlloc = ") {
		t.Errorf("heap profile lacks the memory statistics: %.200s", body)
	}
	stop, err := StartPprof("", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

// TestSpin: the CPU loop runs its time, and stops as soon as its context
// is done.
func TestSpin(t *testing.T) {
	if err := Spin(context.Background(), 20*time.Millisecond); err != nil {
		t.Errorf("Spin = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Spin(ctx, time.Hour) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Spin = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second): // a watchdog, not a timing assertion
		t.Fatal("Spin ignored its cancelled context")
	}
}
