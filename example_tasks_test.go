package toolgrain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/taskstore"
	"github.com/toolgrain/toolgrain/tools"
)

// exampleTaskMeta is the _meta of a modern request from a client that declares the tasks extension
// (and elicitation).
var exampleTaskMeta = json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`)

// exampleAnswer is what the examples read of a tools/call or tasks/get answer.
type exampleAnswer struct {
	ResultType    string                           `json:"resultType"`
	TaskID        string                           `json:"taskId"`
	Status        string                           `json:"status"`
	RequestState  string                           `json:"requestState"`
	InputRequests map[string]protocol.InputRequest `json:"inputRequests"`
	Result        *protocol.CallToolResult         `json:"result"`
}

// exampleCall sends one modern request with exampleTaskMeta and decodes its answer.
func exampleCall(conn *toolgrain.InMemoryClient, method string, params map[string]any) (exampleAnswer, error) {
	params["_meta"] = exampleTaskMeta
	var a exampleAnswer
	raw, err := conn.Call(context.Background(), method, params)
	if err == nil {
		err = json.Unmarshal(raw, &a)
	}
	return a, err
}

// exampleTaskPoll polls tasks/get until the task is no longer working, as a client would.
func exampleTaskPoll(conn *toolgrain.InMemoryClient, id string) (exampleAnswer, error) {
	for {
		a, err := exampleCall(conn, "tasks/get", map[string]any{"taskId": id})
		if err != nil || a.Status != "working" {
			return a, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type buildIn struct {
	Ref string `json:"ref"`
}

// A tool with TaskSupport answers a modern call from a client that declares the tasks extension
// with a task at once; the handler, an ordinary one, runs inside it, and the client polls.
func Example_tasks() {
	build := func(ctx context.Context, in buildIn) (*tools.Result, error) {
		return tools.TextResult("built " + in.Ref), nil
	}
	buildTool := tools.Tool{
		Name:        "build",
		Description: "Builds the project.",
		TaskSupport: tools.TaskOptional, // or tools.TaskRequired; the zero value, tools.TaskForbidden, never
		TaskTTL:     6 * time.Hour,      // how long the task and its result are kept (0: Config.Tasks.TTL)
		Handler:     tools.Func(build),  // an ordinary handler: nothing in it knows about tasks
	}
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{buildTool}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	conn, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	made, err := exampleCall(conn, "tools/call", map[string]any{"name": "build", "arguments": buildIn{Ref: "v1.2.0"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(made.ResultType, made.Status)
	done, err := exampleTaskPoll(conn, made.TaskID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done.Status, done.Result.Content[0].Text)
	// Output:
	// task working
	// completed built v1.2.0
}

type deployIn struct {
	Ref string `json:"ref"`
}

// A tool with DeferTask starts as an ordinary call, which may ask for input first, and becomes
// a task when its handler calls client.StartTask; the handler then runs again, inside the task,
// where the answers given before are answered again.
func Example_deferTask() {
	yesNo := json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
	runDeployment := func(ctx context.Context, in deployIn, ok *protocol.ElicitResult) (*tools.Result, error) {
		if ok.Action != protocol.ElicitAccept {
			return tools.ErrorResult("not deployed"), nil
		}
		return tools.TextResult("deployed " + in.Ref), nil
	}
	deploy := func(ctx context.Context, in deployIn) (*tools.Result, error) {
		ok, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "Deploy " + in.Ref + "?", RequestedSchema: yesNo})
		if err != nil {
			return nil, err
		}
		if err := client.StartTask(ctx); err != nil {
			return nil, err // client.ErrTaskStarted: this run is over, the task runs the handler again
		}
		return runDeployment(ctx, in, ok) // inside the task
	}
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{{
		Name:        "deploy",
		Description: "Deploys a release once the user confirms.",
		TaskSupport: tools.TaskOptional,
		DeferTask:   true,
		Handler:     tools.Func(deploy),
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	conn, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	params := map[string]any{"name": "deploy", "arguments": deployIn{Ref: "v2"}}
	round, err := exampleCall(conn, "tools/call", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(round.ResultType, round.InputRequests["elicitation-1"].Method)
	params["inputResponses"] = map[string]any{"elicitation-1": map[string]any{"action": "accept", "content": map[string]bool{"ok": true}}}
	params["requestState"] = round.RequestState
	made, err := exampleCall(conn, "tools/call", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(made.ResultType)
	done, err := exampleTaskPoll(conn, made.TaskID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done.Status, done.Result.Content[0].Text)
	// Output:
	// input_required elicitation/create
	// task
	// completed deployed v2
}

// With a bbolt store, tasks outlive the process: a finished task's result is still readable
// by the next server that opens the file.
func Example_durableTasks() {
	dir, err := os.MkdirTemp("", "tasks")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	myTools := []tools.Tool{{
		Name:        "build",
		Description: "Builds the project.",
		TaskSupport: tools.TaskOptional,
		Handler: tools.Func(func(ctx context.Context, in buildIn) (*tools.Result, error) {
			return tools.TextResult("built " + in.Ref), nil
		}),
	}}
	ctx := context.Background()
	taskID := ""
	for run := 1; run <= 2; run++ {
		store, err := taskstore.OpenBolt(filepath.Join(dir, "tasks.db"), taskstore.BoltOptions{})
		if err != nil {
			fmt.Println(err)
			return
		}
		srv, err := toolgrain.NewServer(toolgrain.Config{
			Tools: myTools,
			Tasks: toolgrain.TaskConfig{
				Store:             store,           // nil: in memory
				TTL:               time.Hour,       // default 1 h, for tools without their own TaskTTL
				PollInterval:      2 * time.Second, // default 1 s
				MaxTasks:          10000,           // default 10,000 held on the server; -1: none
				MaxTasksPerCaller: 1000,            // default 1,000 per authenticated subject; -1: none
			},
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		conn, err := srv.ConnectInMemory()
		if err != nil {
			fmt.Println(err)
			return
		}
		if run == 1 {
			made, err := exampleCall(conn, "tools/call", map[string]any{"name": "build", "arguments": buildIn{Ref: "v3"}})
			if err != nil {
				fmt.Println(err)
				return
			}
			taskID = made.TaskID
		}
		done, err := exampleTaskPoll(conn, taskID)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("server %d: %s %s\n", run, done.Status, done.Result.Content[0].Text)
		conn.Close()
		if err := srv.Shutdown(ctx); err != nil {
			fmt.Println(err)
		}
		store.Close() // after Shutdown: the server never closes the store
	}
	// Output:
	// server 1: completed built v3
	// server 2: completed built v3
}
