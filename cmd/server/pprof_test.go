package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestServePprof(t *testing.T) {
	o, err := parseFlags([]string{"--pprof", "127.0.0.1:0"}, io.Discard)
	if err != nil || o.pprofAddr != "127.0.0.1:0" {
		t.Fatalf("parseFlags = %+v, %v", o, err)
	}
	if _, _, err := servePprof("no such address", zap.NewNop()); err == nil || !strings.Contains(err.Error(), "pprof") {
		t.Errorf("servePprof on a bad address = %v, want a pprof error", err)
	}
	addr, stop, err := servePprof("127.0.0.1:0", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
}
