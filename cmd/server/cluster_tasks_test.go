package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// TestClusterTasks runs three members with tasks on behind the round-robin proxy. A task made on
// member 0 is read with tasks/get from every member and through the proxy until it completes;
// tasks/update and tasks/cancel sent to the other members reach its home (their answers are the
// home's, never "task not found"); then the home of a running task is killed with SIGKILL and
// the survivors answer tasks/get with a failed task and tasks/update and tasks/cancel with
// -32602 "the server holding this task is gone".
//
// Waits, for a 2-core machine running three race-built members: the cluster forms within
// clusterStartWait; a 300 ms task completes within 20 s of polling (the race build and the
// proxy's hops are slow, the bound only stops a hung test); after the kill, the survivors must
// answer failed within 5 s (the remote connection to a killed process breaks at once; the
// member list drops it within about two 1 s polls) and each answer must come back within 2 s.
func TestClusterTasks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and runs three members")
	}
	c := startCluster(t, 3, "--task-store", "memory")
	const home = 0
	call := c.answered
	get := func(base, id string) (string, taskCall) {
		return call(base, 2, "tasks/get", id, fmt.Sprintf(`"taskId":%q,`, id))
	}

	// 1. A task made on member 0 completes, read from everywhere.
	_, made := call(c.members[home].base, 1, "tools/call", "sleep_task", `"name":"sleep_task","arguments":{"ms":300},`)
	if made.Result.ResultType != "task" || made.Result.TaskID == "" {
		t.Fatalf("sleep_task was not answered with a task: %+v", made)
	}
	id := made.Result.TaskID
	for i, m := range c.members {
		if _, got := get(m.base, id); got.Error != nil || got.Result.TaskID != id {
			t.Fatalf("tasks/get on member %d: %+v", i, got)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	completed := 0
	for completed < 3 { // three answers in a row through the round-robin proxy: every member
		_, got := get(c.proxy.URL, id)
		switch {
		case got.Error != nil:
			t.Fatalf("tasks/get through the proxy: %+v", got.Error)
		case got.Result.Status == "completed":
			completed++
			if !strings.Contains(string(got.Result.Result), "slept") {
				t.Fatalf("completed task's result: %s", got.Result.Result)
			}
		case time.Now().After(deadline):
			t.Fatalf("the task did not complete in 20 s: %+v", got)
		default:
			completed = 0
			time.Sleep(50 * time.Millisecond)
		}
	}
	// An id from no member of this cluster: a member cannot tell its home reference from that of
	// a member it has not seen yet, so it refuses it as one to send again for a while (checked
	// to its end after part 3).
	forged := "m" + strings.Repeat("a", 24) + ".abcdefghijklmnopqrstuvwxyz"
	for i, m := range c.members {
		if status, data := c.modernCall(m.base, 2, "tasks/get", forged, fmt.Sprintf(`"taskId":%q,`, forged)); status != 503 || !strings.Contains(data, `"code":-31000`) {
			t.Fatalf("forged id on member %d, first asked: %d %s, want 503 -31000", i, status, data)
		}
	}

	// 2. tasks/update and tasks/cancel from the other members reach the home.
	_, long := call(c.members[home].base, 3, "tools/call", "sleep_task", `"name":"sleep_task","arguments":{"ms":600000},`)
	lid := long.Result.TaskID
	update := func(id string) string {
		return fmt.Sprintf(`"taskId":%q,"inputResponses":{"nothing":{"action":"decline"}},`, id)
	}
	want, _ := call(c.members[home].base, 4, "tasks/update", lid, update(lid))
	for i := 1; i < 3; i++ {
		got, tc := call(c.members[i].base, 4, "tasks/update", lid, update(lid))
		if got != want || (tc.Error != nil && strings.Contains(tc.Error.Message, "not found")) {
			t.Fatalf("tasks/update on member %d: %s; the home answered %s", i, got, want)
		}
	}
	_, cancelled := call(c.members[1].base, 5, "tasks/cancel", lid, fmt.Sprintf(`"taskId":%q,`, lid))
	if cancelled.Error != nil {
		t.Fatalf("tasks/cancel from member 1: %+v", cancelled.Error)
	}
	for i, m := range c.members {
		if _, got := get(m.base, lid); got.Result.Status != "cancelled" {
			t.Fatalf("after tasks/cancel from member 1, tasks/get on member %d: %+v", i, got)
		}
	}

	// 3. The home of a running task dies: the task is failed, not lost.
	_, running := call(c.members[home].base, 6, "tools/call", "sleep_task", `"name":"sleep_task","arguments":{"ms":600000},`)
	rid := running.Result.TaskID
	if _, got := get(c.members[1].base, rid); got.Result.Status != "working" {
		t.Fatalf("the running task from member 1: %+v", got)
	}
	if err := c.members[home].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	c.drop(home)
	for i := 1; i < 3; i++ {
		refused := 0
		for {
			start := time.Now()
			status, data := c.modernCall(c.members[i].base, 2, "tasks/get", rid, fmt.Sprintf(`"taskId":%q,`, rid))
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("tasks/get on member %d took %v after the home died", i, took)
			}
			if status == 503 {
				// Until the member list drops the home, its connection is down but it may come
				// back: the request is refused as one to send again.
				if !strings.Contains(data, `"code":-31000`) || !strings.Contains(data, `"scope":"task-home"`) {
					t.Fatalf("503 from member %d: %s", i, data)
				}
				refused++
			} else if status != 200 {
				t.Fatalf("tasks/get on member %d after the home died: %d %s", i, status, data)
			}
			var got taskCall
			if status == 200 {
				if err := json.Unmarshal([]byte(data), &got); err != nil {
					t.Fatalf("tasks/get: %v: %s", err, data)
				}
			}
			if got.Result.Status == "failed" {
				if got.Result.TaskID != rid || !strings.Contains(got.Result.Error.Message, "gone") || !strings.Contains(data, `"pollIntervalMs":`) || !strings.Contains(data, `"ttlMs":`) {
					t.Fatalf("failed task on member %d: %s", i, data)
				}
				t.Logf("member %d answers failed %v after the kill (refused %d requests before): %s", i, time.Since(killed), refused, data)
				break
			}
			if time.Since(killed) > 5*time.Second {
				t.Fatalf("member %d still answers %s 5 s after the home died", i, data)
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, m := range []string{"tasks/update", "tasks/cancel"} {
			params := fmt.Sprintf(`"taskId":%q,`, rid)
			if m == "tasks/update" {
				params = update(rid)
			}
			start := time.Now()
			data, got := call(c.members[i].base, 7, m, rid, params)
			if got.Error == nil || got.Error.Code != -32602 || !strings.Contains(got.Error.Message, "gone") || time.Since(start) > 2*time.Second {
				t.Fatalf("%s on member %d after the home died (%v): %s", m, i, time.Since(start), data)
			}
		}
	}

	// 4. The forged id is unknown on every survivor once its hold (5 s from the first ask, or
	// from the last change of the member list: the kill) has passed; until then it is refused
	// as one to send again, and nothing else. 20 s only stops a hung test.
	for i := 1; i < 3; i++ {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			status, data := c.modernCall(c.members[i].base, 8, "tasks/get", forged, fmt.Sprintf(`"taskId":%q,`, forged))
			if status == 503 && strings.Contains(data, `"code":-31000`) && !time.Now().After(deadline) {
				continue
			}
			var got taskCall
			if status != 200 && status != 400 || json.Unmarshal([]byte(data), &got) != nil || got.Error == nil || got.Error.Code != -32602 {
				t.Fatalf("forged id on member %d: %d %s, want -32602 after the hold", i, status, data)
			}
			break
		}
	}
}

// TestClusterTaskHomeRestarted: a member keeps its tasks in a bolt file of its own and is
// killed (SIGKILL) with one task finished and one running, then started again at the same
// addresses on the same file. Every member, the restarted one included, then answers tasks/get
// for the finished task with its result, and for the running one with a failed task whose error
// says the server restarted: nothing is lost and nothing is "not found". tasks/cancel of the
// failed task from the other member is the home's answer, not "gone".
//
// Waits, for a 2-core machine running two race-built members: the restart is bounded as a start
// is (see restart), the first task's completion by 20 s of polling, and the retries after the
// restart by 15 s (see below); bounds that only stop a hung test.
func TestClusterTaskHomeRestarted(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and runs two members")
	}
	dir := t.TempDir()
	c := startClusterWith(t, 2, func(i int, _ []string) []string {
		return []string{"--task-store", fmt.Sprintf("bolt:%s/tasks-%d.db", dir, i)}
	})
	const home, other = 0, 1
	call := c.answered
	get := func(base, id string) (string, taskCall) {
		return call(base, 2, "tasks/get", id, fmt.Sprintf(`"taskId":%q,`, id))
	}

	_, done := call(c.members[home].base, 1, "tools/call", "sleep_task", `"name":"sleep_task","arguments":{"ms":50},`)
	_, running := call(c.members[home].base, 3, "tools/call", "sleep_task", `"name":"sleep_task","arguments":{"ms":600000},`)
	did, rid := done.Result.TaskID, running.Result.TaskID
	if did == "" || rid == "" {
		t.Fatalf("sleep_task was not answered with tasks: %+v, %+v", done, running)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, got := get(c.members[other].base, did); got.Result.Status == "completed" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the first task did not complete in 20 s: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, got := get(c.members[other].base, rid); got.Result.Status != "working" {
		t.Fatalf("the running task from the other member: %+v", got)
	}

	c.restart(home)
	// A member that saw the home's connection break takes it for unreachable for up to 5 s
	// (deadHold), and protoactor-go reports the end of the earlier process's connection up to
	// 2 s after it last failed to dial it, which can be after the new one has joined: that
	// ends the new connection too, with any request forwarded over it then, and starts those
	// 5 s again. Meanwhile the member refuses the home's tasks' requests with 503 and
	// Retry-After, as ones to send again (a request whose answer was on its way included: the
	// answer is dropped whole, never cut), and a client retries them (here every 100 ms, for
	// at most 15 s after the restart: 2 s, 5 s and some). What it must never do is answer with
	// a status the task does not have, or a broken body.
	rejoined := time.Now()
	// get goes through call, so it retries too.
	call = func(base string, id int, method, name, params string) (string, taskCall) {
		t.Helper()
		for {
			status, data := c.modernCall(base, id, method, name, params)
			if status == 503 && strings.Contains(data, `"scope":"task-home"`) && time.Since(rejoined) < 15*time.Second {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			var tc taskCall
			if err := json.Unmarshal([]byte(data), &tc); (status != 200 && status != 400) || err != nil {
				t.Fatalf("%s on %s after the restart: %d %s", method, base, status, data)
			}
			return data, tc
		}
	}

	for _, i := range []int{other, home} {
		data, got := get(c.members[i].base, did)
		if got.Error != nil || got.Result.TaskID != did || got.Result.Status != "completed" || !strings.Contains(string(got.Result.Result), "slept") {
			t.Errorf("after the restart, the finished task from member %d: %s", i, data)
		}
		data, got = get(c.members[i].base, rid)
		if got.Error != nil || got.Result.TaskID != rid || got.Result.Status != "failed" ||
			!strings.Contains(got.Result.Error.Message, "server restarted") {
			t.Errorf("after the restart, the running task from member %d: %s", i, data)
		}
	}
	data, got := call(c.members[other].base, 4, "tasks/cancel", rid, fmt.Sprintf(`"taskId":%q,`, rid))
	if got.Error != nil && strings.Contains(got.Error.Message, "gone") {
		t.Errorf("tasks/cancel from the other member after the restart: %s", data)
	}
	t.Logf("the other member's view of the home after the kill:\n%s", grepLines(c.members[other].log.String(), `"topology"`, `"member unreachable"`))
}

// modernCall sends the modern request method (Mcp-Name name) with id, its params' members
// (each followed by a comma) and the tasks extension's envelope to base, and returns the status
// and the JSON of the answer: the body, or the last data line of an SSE one.
func (c *testCluster) modernCall(base string, id int, method, name, params string) (int, string) {
	c.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, id, method, params, taskMeta)
	status, _, data := c.call(base, request{modern: method, name: name, body: body})
	return status, lastData(data)
}

// answered is modernCall of a request that must be answered (200, or 400 with a JSON-RPC error),
// with the answer decoded.
func (c *testCluster) answered(base string, id int, method, name, params string) (string, taskCall) {
	c.t.Helper()
	status, data := c.modernCall(base, id, method, name, params)
	if status != 200 && status != 400 {
		c.t.Fatalf("%s %s: %d %s", base, method, status, data)
	}
	var tc taskCall
	if err := json.Unmarshal([]byte(data), &tc); err != nil {
		c.t.Fatalf("%s: %v: %s", method, err, data)
	}
	return data, tc
}

// grepLines returns the lines of log that contain any of subs.
func grepLines(log string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// lastData returns the JSON of an answer: the body itself, or the last message of an SSE one.
func lastData(body string) string {
	if !strings.HasPrefix(body, "event:") && !strings.HasPrefix(body, "data:") && !strings.HasPrefix(body, "id:") {
		return body
	}
	last, events := "", mcptest.NewEventReader(strings.NewReader(body))
	for {
		data, err := events.NextData()
		if err != nil {
			return last
		}
		last = data
	}
}
