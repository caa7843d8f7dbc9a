package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// taskMeta is the envelope of a modern request that declares the tasks extension.
const taskMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// taskCall is one modern request's result or error, decoded.
type taskCall struct {
	Result struct {
		ResultType string          `json:"resultType"`
		TaskID     string          `json:"taskId"`
		Status     string          `json:"status"`
		Result     json.RawMessage `json:"result"`
		Error      struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (s *binary) modern(id int, method, params string) taskCall {
	s.t.Helper()
	line := s.exchange(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, id, method, params, taskMeta))
	var c taskCall
	if err := json.Unmarshal([]byte(line), &c); err != nil {
		s.t.Fatalf("%s: %v: %s", method, err, line)
	}
	return c
}

// TestBinaryTaskStoreSurvivesKill runs the binary with the bolt task store, kills it with
// SIGKILL while one task has finished and another still runs, and starts it again on the same
// file: the finished task is still readable with its result, and the one that was running is
// failed with the "server restarted" error, not unknown.
func TestBinaryTaskStoreSurvivesKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildServer(t)
	store := "bolt:" + filepath.Join(t.TempDir(), "tasks.db")

	a := startBinary(t, bin, "--task-store", store)
	done := a.modern(1, "tools/call", `"name":"sleep_task","arguments":{"ms":10},`)
	if done.Result.ResultType != "task" || done.Result.TaskID == "" {
		t.Fatalf("sleep_task was not answered with a task: %+v", done)
	}
	deadline := time.Now().Add(10 * time.Second)
	for id := 2; ; id++ {
		got := a.modern(id, "tasks/get", fmt.Sprintf(`"taskId":%q,`, done.Result.TaskID))
		if got.Result.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not complete: %+v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	running := a.modern(100, "tools/call", `"name":"sleep_task","arguments":{"ms":600000},`)
	if got := a.modern(101, "tasks/get", fmt.Sprintf(`"taskId":%q,`, running.Result.TaskID)); got.Result.Status != "working" {
		t.Fatalf("the long task: %+v", got)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	a.done <- nil

	b := startBinary(t, bin, "--task-store", store)
	got := b.modern(1, "tasks/get", fmt.Sprintf(`"taskId":%q,`, done.Result.TaskID))
	if got.Result.Status != "completed" || !strings.Contains(string(got.Result.Result), `"text":"slept"`) {
		t.Errorf("the finished task after the restart: %+v (result %s)", got, got.Result.Result)
	}
	got = b.modern(2, "tasks/get", fmt.Sprintf(`"taskId":%q,`, running.Result.TaskID))
	if got.Result.Status != "failed" || !strings.Contains(got.Result.Error.Message, "server restarted") || got.Result.Error.Code != -32603 {
		t.Errorf("the running task after the restart: %+v", got)
	}
	got = b.modern(3, "tasks/get", `"taskId":"never-made",`)
	if got.Error == nil || got.Error.Code != -32602 {
		t.Errorf("an unknown task: %+v", got)
	}
	if err := b.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	b.wait(0)
}

func TestTaskFlags(t *testing.T) {
	tests := []struct {
		give []string
		ok   bool
	}{
		{[]string{"--task-store", "memory"}, true},
		{[]string{"--task-store", "bolt:/tmp/x.db"}, true},
		{[]string{"--task-store", "bolt:"}, false},
		{[]string{"--task-store", "redis://x"}, false},
		{[]string{"--task-ttl", "-1s"}, false},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.give, new(strings.Builder))
		if (err == nil) != tt.ok {
			t.Errorf("parseFlags(%q) = %v, want ok %v", tt.give, err, tt.ok)
		}
	}
}
