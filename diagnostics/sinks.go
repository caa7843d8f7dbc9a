package diagnostics

import (
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"go.uber.org/zap"
)

// stackTracer is implemented by errors that carry the stack of a recovered panic.
type stackTracer interface{ PanicStack() []byte }

// ZapSink returns a callback that logs every report at error level on log: the error text, the
// tool name, the request id and method, the task id of a failure inside a task, and the stack of
// a recovered panic. It logs no arguments (details hold none) and not the client-supplied _meta.
func ZapSink(log *zap.Logger) OnError {
	return func(err error, d *ToolErrorDetails) {
		fields := make([]zap.Field, 0, 6)
		fields = append(fields, zap.Error(err))
		if d != nil {
			fields = append(fields,
				zap.String("tool", d.ToolName()),
				zap.String("request_id", d.Request().ID().String()),
				zap.String("method", d.Request().Method()))
			if id := d.TaskID(); id != "" {
				fields = append(fields, zap.String("task_id", id))
			}
		}
		var st stackTracer
		if errors.As(err, &st) {
			fields = append(fields, zap.ByteString("stack", st.PanicStack()))
		}
		log.Error("unexpected failure", fields...)
	}
}

// Record is one line written by [JSONLinesSink].
type Record struct {
	Time      time.Time       `json:"time"`
	Error     string          `json:"error"`
	Tool      string          `json:"tool,omitempty"`
	RequestID json.RawMessage `json:"request_id,omitempty"`
	Method    string          `json:"method,omitempty"`
	TaskID    string          `json:"task_id,omitempty"`
}

// JSONLinesSink returns a callback that writes each report to w as one JSON line (a [Record]):
// the error text, the tool name, the request id (with its JSON type), the method and the task id
// of a failure inside a task. Never the
// arguments. Writes are serialised; a write error is returned by nothing and dropped, since a
// diagnostics sink has nowhere else to report.
func JSONLinesSink(w io.Writer) OnError {
	var mu sync.Mutex
	return func(err error, d *ToolErrorDetails) {
		rec := Record{Time: time.Now().UTC(), Error: err.Error()}
		if d != nil {
			rec.Tool = d.ToolName()
			rec.Method = d.Request().Method()
			rec.TaskID = d.TaskID()
			if id := d.Request().ID(); !id.IsZero() {
				rec.RequestID = json.RawMessage(id.String())
			}
		}
		line, mErr := json.Marshal(rec)
		if mErr != nil {
			return
		}
		line = append(line, '\n')
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(line)
	}
}
