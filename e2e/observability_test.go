package e2e_test

import (
	"context"
	"log"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// recordingHandler is a slog handler that remembers every record.
type recordingHandler struct{ records *[]string }

func (h recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordingHandler) Handle(_ context.Context, r slog.Record) error {
	*h.records = append(*h.records, r.Message)
	return nil
}
func (h recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordingHandler) WithGroup(string) slog.Handler      { return h }

// TestLogsGoOnlyToTheGivenLogger: everything the server logs, engine and protoactor alike,
// goes to Config.Logger; nothing reaches zap's global loggers, slog's default logger or the
// standard library's log package.
func TestLogsGoOnlyToTheGivenLogger(t *testing.T) {
	globalCore, global := observer.New(zapcore.DebugLevel)
	restore := zap.ReplaceGlobals(zap.New(globalCore))
	defer restore()
	var slogRecords []string
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(recordingHandler{&slogRecords}))
	var stdlog strings.Builder
	defer log.SetOutput(log.Writer())
	log.SetOutput(&stdlog)

	core, given := observer.New(zapcore.DebugLevel)
	_, c := memoryClient(t, toolgrain.Config{Tools: demo.Tools(), Logger: zap.New(core)})
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if _, err := c.CallTool(ctx, "fail", map[string]string{"mode": "error"}); err != nil {
		t.Fatal(err)
	}
	_ = c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}`))
	mcptest.Eventually(t, "the failure logged", func() bool { return given.FilterMessage("unexpected failure").Len() != 0 })
	rec := given.FilterMessage("unexpected failure")
	if rec.Len() != 1 {
		t.Fatalf("the default OnError logged %d failures on the given logger, want 1", rec.Len())
	}
	if n := global.Len(); n != 0 {
		t.Errorf("%d entries on zap's global logger: %v", n, global.All()[0].Message)
	}
	if len(slogRecords) != 0 {
		t.Errorf("slog default logger got %v", slogRecords)
	}
	if stdlog.Len() != 0 {
		t.Errorf("log package got %q", stdlog.String())
	}
}
