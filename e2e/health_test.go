package e2e_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// TestLiveAndReady: a serving server is live and ready; at its limit of calls in flight it is
// live but not ready (ErrSaturated), and ready again once a call ends; after Close it is
// neither (ErrServerClosed).
func TestLiveAndReady(t *testing.T) {
	t.Parallel()
	srv, c := memoryClient(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxCalls: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if err := srv.Live(ctx); err != nil {
		t.Errorf("Live = %v", err)
	}
	if err := srv.Ready(); err != nil {
		t.Errorf("Ready = %v", err)
	}

	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}}}`)); err != nil {
		t.Fatal(err)
	}
	mcptest.Eventually(t, "Ready to report saturation", func() bool { return errors.Is(srv.Ready(), toolgrain.ErrSaturated) })
	if err := srv.Ready(); err.Error() != "toolgrain: at the limit of calls in flight: 1 calls in flight (limit 1)" {
		t.Errorf("Ready = %q", err)
	}
	if err := srv.Live(ctx); err != nil {
		t.Errorf("Live at the limit = %v", err)
	}
	if err := c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}`)); err != nil {
		t.Fatal(err)
	}
	mcptest.Eventually(t, "Ready again after the cancellation", func() bool { return srv.Ready() == nil })

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Ready(); !errors.Is(err, toolgrain.ErrServerClosed) {
		t.Errorf("Ready after Close = %v", err)
	}
	if err := srv.Live(ctx); !errors.Is(err, toolgrain.ErrServerClosed) {
		t.Errorf("Live after Close = %v", err)
	}
}
