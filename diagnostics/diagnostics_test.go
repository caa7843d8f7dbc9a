package diagnostics_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain/diagnostics"
	"github.com/toolgrain/toolgrain/protocol"
)

func details(meta string) *diagnostics.ToolErrorDetails {
	var m json.RawMessage
	if meta != "" {
		m = json.RawMessage(meta)
	}
	return diagnostics.NewToolErrorDetails("fail", diagnostics.NewToolRequest(protocol.NewIntID(7), "tools/call", "fail", m))
}

func TestDetailsAreImmutable(t *testing.T) {
	meta := json.RawMessage(`{"k":"v"}`)
	d := diagnostics.NewToolErrorDetails("fail", diagnostics.NewToolRequest(protocol.NewStringID("a"), "tools/call", "fail", meta))
	meta[2] = 'X' // the caller's buffer changes after the fact
	got := d.Request().Meta()
	got[2] = 'Y' // and so does the copy a callback received
	if s := string(d.Request().Meta()); s != `{"k":"v"}` {
		t.Errorf("meta = %s, want the original", s)
	}
	if d.ToolName() != "fail" || d.Request().ID().String() != `"a"` || d.Request().Method() != "tools/call" || d.Request().ToolName() != "fail" {
		t.Errorf("details = %+v", d)
	}
}

func TestNilDetails(t *testing.T) {
	var d *diagnostics.ToolErrorDetails
	if d.ToolName() != "" || !d.Request().ID().IsZero() || d.Request().Meta() != nil {
		t.Error("nil details must read as empty")
	}
}

func TestJSONLinesSink(t *testing.T) {
	tests := []struct {
		name    string
		details *diagnostics.ToolErrorDetails
		want    []string // substrings of the line
		notWant []string
	}{
		{"tool failure", details(`{"secret":"no"}`), []string{`"error":"boom"`, `"tool":"fail"`, `"request_id":7`, `"method":"tools/call"`}, []string{"secret"}},
		{"transport failure", nil, []string{`"error":"boom"`}, []string{"tool", "request_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			diagnostics.JSONLinesSink(&buf)(errors.New("boom"), tt.details)
			line := buf.String()
			if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
				t.Fatalf("not one line: %q", line)
			}
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %s lacks %s", line, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(line, w) {
					t.Errorf("line %s contains %s", line, w)
				}
			}
		})
	}
}

type panicErr struct{}

func (panicErr) Error() string      { return "panic: boom" }
func (panicErr) PanicStack() []byte { return []byte("goroutine 1 [running]") }

func TestZapSink(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	sink := diagnostics.ZapSink(zap.New(core))
	sink(panicErr{}, details(`{"secret":"no"}`))
	sink(errors.New("write: broken pipe"), nil)
	entries := logs.All()
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	f := entries[0].ContextMap()
	if f["tool"] != "fail" || f["request_id"] != "7" || f["stack"] != "goroutine 1 [running]" {
		t.Errorf("fields = %v", f)
	}
	for k, v := range f {
		if strings.Contains(k+" "+toString(v), "secret") {
			t.Errorf("field %s=%v carries _meta", k, v)
		}
	}
	if _, ok := entries[1].ContextMap()["tool"]; ok {
		t.Error("a failure without details logged a tool")
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestErrorOnly(t *testing.T) {
	var got error
	diagnostics.ErrorOnly(func(err error) { got = err })(errors.New("x"), details(""))
	if got == nil || got.Error() != "x" {
		t.Errorf("got %v", got)
	}
}

func TestTaskDetails(t *testing.T) {
	req := diagnostics.NewToolRequest(protocol.NewIntID(3), "tools/call", "slow", nil)
	d := diagnostics.NewTaskErrorDetails("slow", "t123", req)
	if d.TaskID() != "t123" || d.ToolName() != "slow" || d.Request().ID().String() != "3" {
		t.Errorf("details = %+v", d)
	}
	if diagnostics.NewToolErrorDetails("slow", req).TaskID() != "" {
		t.Error("a call outside a task has a task id")
	}
	var buf bytes.Buffer
	diagnostics.JSONLinesSink(&buf)(errors.New("boom"), d)
	if !strings.Contains(buf.String(), `"task_id":"t123"`) {
		t.Errorf("line %s lacks the task id", buf.String())
	}
	core, logs := observer.New(zap.DebugLevel)
	diagnostics.ZapSink(zap.New(core))(errors.New("boom"), d)
	if got := logs.All()[0].ContextMap()["task_id"]; got != "t123" {
		t.Errorf("task_id field = %v", got)
	}
}
