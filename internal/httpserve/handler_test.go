package httpserve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/internal/httpserve"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/streamable"
	"github.com/toolgrain/toolgrain/tools"
)

// startEngine starts an engine with no tools; Cleanup shuts it down.
func startEngine(t *testing.T) *engine.Engine {
	t.Helper()
	set, err := tools.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Start(engine.Config{Tools: set})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Shutdown(context.Background()); err != nil {
			t.Errorf("engine shutdown: %v", err)
		}
	})
	return eng
}

func TestNewNeedsVerifier(t *testing.T) {
	eng := startEngine(t)
	_, err := httpserve.New(eng, streamable.Config{Auth: &streamable.AuthConfig{}}, httpserve.Options{})
	if err == nil || !strings.Contains(err.Error(), "Verifier is nil") {
		t.Errorf("New with an Auth without Verifier = %v", err)
	}
}

// TestHandlerLifecycle drives a handler built with zero Config and Options on its own engine:
// initialize opens a session, Shutdown ends it and refuses what follows, and the metadata
// handler answers 404 without auth.
func TestHandlerLifecycle(t *testing.T) {
	eng := startEngine(t)
	h, err := httpserve.New(eng, streamable.Config{}, httpserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	t.Cleanup(h.Shutdown) // runs first: it ends the sessions that hs.Close would wait for

	post := func(sid, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", protocol.MediaTypeJSON)
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set(protocol.HeaderSessionID, sid)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	sid := resp.Header.Get(protocol.HeaderSessionID)
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: status %d, session id %q", resp.StatusCode, sid)
	}
	if n := h.Sessions(); n != 1 {
		t.Errorf("Sessions() = %d after initialize, want 1", n)
	}

	h.Shutdown()
	if n := h.Sessions(); n != 0 {
		t.Errorf("Sessions() = %d after Shutdown, want 0", n)
	}
	if resp := post(sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("ping after Shutdown: status %d, want 503", resp.StatusCode)
	}

	rec := httptest.NewRecorder()
	h.ResourceMetadataHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("metadata without auth: status %d, want 404", rec.Code)
	}
}
