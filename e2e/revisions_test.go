package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// Every legacy revision is answered in its own shape: these tests pin the exact exchange of a
// session of each, for what differs between them (docs/eras.md, "The revisions and their
// shapes").

// shapeConfig is a server whose tools, resources and prompts use what the revisions differ on:
// titles, annotations, an output schema, _meta-free content of every kind.
func shapeConfig() toolgrain.Config {
	yes := true
	text := resources.ReaderFunc(func(ctx context.Context, req *resources.ReadRequest) (*resources.ReadResult, error) {
		return resources.Text(req.URI, "text/plain", "hi"), nil
	})
	return toolgrain.Config{
		Name: "shapes", Title: "Shapes", Version: "1",
		Tools: append(demo.Tools(), tools.Tool{
			Name: "media", Title: "Media", Description: "Returns every kind of content.",
			Annotations: &protocol.ToolAnnotations{ReadOnlyHint: &yes},
			Handler: tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
				return &tools.Result{Content: []protocol.Content{
					protocol.TextContent("text"),
					{Type: protocol.ContentAudio, Data: "UklGRg==", MimeType: "audio/wav"},
					{Type: protocol.ContentResourceLink, URI: "file:///notes.txt", Name: "notes"},
				}}, nil
			}),
		}),
		Resources: []resources.Resource{{URI: "file:///notes.txt", Name: "notes", Title: "Notes", MimeType: "text/plain", Reader: text}},
		Prompts: []prompts.Prompt{{Name: "plan", Title: "Plan", Description: "Plans.",
			Arguments: []prompts.Argument{{Name: "goal", Title: "Goal", Required: true}},
			Handler: prompts.HandlerFunc(func(ctx context.Context, req *prompts.GetRequest) (*prompts.GetResult, error) {
				return &prompts.GetResult{Messages: []protocol.PromptMessage{
					{Role: protocol.RoleUser, Content: protocol.TextContent("plan " + req.Arguments["goal"])},
					{Role: protocol.RoleUser, Content: protocol.Content{Type: protocol.ContentAudio, Data: "UklGRg==", MimeType: "audio/wav"}},
				}}, nil
			})}},
	}
}

func TestRevisionInitialize(t *testing.T) {
	t.Parallel()
	const caps = `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{}`
	tests := []struct{ version, want string }{
		{"2024-11-05", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-11-05","capabilities":` + caps + `},"serverInfo":{"name":"shapes","version":"1"}}}`},
		{"2025-03-26", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":` + caps + `,"completions":{}},"serverInfo":{"name":"shapes","version":"1"}}}`},
		{"2025-06-18", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"completions":{}},"serverInfo":{"name":"shapes","title":"Shapes","version":"1"}}}`},
		{"2025-11-25", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"completions":{}},"serverInfo":{"name":"shapes","title":"Shapes","version":"1"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			c := startStdio(t, shapeConfig())
			c.Expect(mcptest.InitializeAt(tt.version, `{}`), tt.want)
		})
		t.Run(tt.version+"/http", func(t *testing.T) {
			// A new HTTP session answers initialize from its record, without an actor.
			e := startHTTP(t, shapeConfig())
			assertReply(t, "initialize", e.Session().Post(mcptest.InitializeAt(tt.version, `{}`)), http.StatusOK, tt.want)
		})
	}
}

func TestRevision20241105(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	cfg := shapeConfig()
	cfg.OnError = rec.OnError
	c := startStdio(t, cfg)
	c.InitializeAt("2024-11-05", `{"sampling":{},"elicitation":{},"roots":{}}`)

	// tools/list: no title, annotations or outputSchema.
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var list struct {
		Result struct{ Tools []map[string]json.RawMessage } `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.Recv()), &list); err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Result.Tools {
		for k := range tool {
			if k != "name" && k != "description" && k != "inputSchema" {
				t.Errorf("tool %s has %s", tool["name"], k)
			}
		}
	}
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":2,"result":{"resources":[{"uri":"file:///notes.txt","name":"notes","mimeType":"text/plain"}]}}`)
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":3,"result":{"prompts":[{"name":"plan","description":"Plans.","arguments":[{"name":"goal","required":true}]}]}}`)

	// A structured result keeps its text and loses its structuredContent; audio is left out
	// and a resource link becomes its URI as text.
	c.Expect(call("4", "greet", `{"name":"Ada"}`),
		`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada!\"}"}]}}`)
	c.Expect(call("5", "media", `{}`),
		`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"text"},{"type":"text","text":"file:///notes.txt"}]}}`)
	c.Expect(`{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"plan","arguments":{"goal":"x"}}}`,
		`{"jsonrpc":"2.0","id":6,"result":{"messages":[{"role":"user","content":{"type":"text","text":"plan x"}}]}}`)

	// The error model is the same.
	c.Expect(call("7", "fail", `{"mode":"error"}`), `{"jsonrpc":"2.0","id":7,"result":`+failedResult+`}`)
	c.Expect(call("8", "fail", `{"mode":"bad-output"}`), `{"jsonrpc":"2.0","id":8,"result":`+failedResult+`}`)
	c.Expect(call("9", "echo", `{"text":5}`),
		`{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"invalid arguments: text: must be string, got number"}],"isError":true}}`)
	if got := rec.Wait(t, 2); got[0].Details.ToolName() != "fail" || strings.Contains(got[0].Err.Error(), "text") {
		t.Errorf("reports: %v", got)
	}

	// Progress notifications have no message in 2024-11-05.
	c.Send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":250},"_meta":{"progressToken":"p"}}}`)
	for {
		line := c.Recv()
		if strings.Contains(line, `"id":10,`) {
			break
		}
		if !strings.Contains(line, `"notifications/progress"`) || strings.Contains(line, "message") {
			t.Fatalf("unexpected: %s", line)
		}
	}

	// Cancellation silences the call.
	c.Send(call("11", "sleep", `{"ms":60000}`))
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11}}`)
	c.Expect(`{"jsonrpc":"2.0","id":12,"method":"ping"}`, `{"jsonrpc":"2.0","id":12,"result":{}}`)
	c.Silent(200*time.Millisecond, "the cancelled call's answer would be out")
}

func TestRevision20250326(t *testing.T) {
	t.Parallel()
	c := startStdio(t, shapeConfig())
	c.InitializeAt("2025-03-26", `{}`)
	// Annotations are there, and the title with them, as annotations.title; no outputSchema.
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	line := c.Recv()
	for _, want := range []string{
		`{"name":"media","description":"Returns every kind of content.","inputSchema":{"type":"object"},"annotations":{"title":"Media","readOnlyHint":true}}`,
		`{"name":"greet","description":"Greets someone by name, as text and as structured content.","inputSchema":{`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("tools/list has no %s: %s", want, line)
		}
	}
	if strings.Contains(line, "outputSchema") || strings.Contains(line, `"title":"Shapes"`) {
		t.Errorf("tools/list: %s", line)
	}
	// Audio is kept; the resource link is not.
	c.Expect(call("2", "media", `{}`),
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"text"},{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},{"type":"text","text":"file:///notes.txt"}]}}`)
}

func TestRevision20250618(t *testing.T) {
	t.Parallel()
	c := startStdio(t, shapeConfig())
	c.InitializeAt("2025-06-18", `{}`)
	c.Expect(call("1", "greet", `{"name":"Ada"}`),
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada!\"}"}],"structuredContent":{"greeting":"Hello, Ada!"}}}`)
	c.Expect(call("2", "media", `{}`),
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"text"},{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///notes.txt","name":"notes"}]}}`)
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":3,"result":{"prompts":[{"name":"plan","title":"Plan","description":"Plans.","arguments":[{"name":"goal","title":"Goal","required":true}]}]}}`)
}

// TestRevisionRequestsToTheClient: a request the session's revision does not have is refused
// as undeclared, whatever the client put in its capabilities, and nothing is sent.
func TestRevisionRequestsToTheClient(t *testing.T) {
	t.Parallel()
	form := json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)
	ask := tools.Tool{Name: "ask", Description: "Asks the user.", Handler: tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
		_, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "ok?", RequestedSchema: form})
		if err != nil {
			return tools.ErrorResult(err.Error()), nil
		}
		return tools.TextResult("asked"), nil
	})}
	for _, version := range []string{"2024-11-05", "2025-03-26"} {
		t.Run(version, func(t *testing.T) {
			c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{ask}})
			c.InitializeAt(version, `{"elicitation":{}}`)
			c.Expect(call("1", "ask", `{}`),
				`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"client: capability not declared by the client: elicitation/create needs the client capability elicitation (form mode)"}],"isError":true}}`)
		})
	}
}

// batch is a 2025-03-26 batch of the requests given.
func batch(msgs ...string) string { return "[" + strings.Join(msgs, ",") + "]" }

func TestBatchStdio(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), OnError: rec.OnError})
	c.InitializeAt("2025-03-26", `{}`)

	// The element that cannot be read is answered first, then the others as they are served
	// (the echo's request actor may finish before the connection actor answers the ping); the
	// notification has no answer.
	c.Send(batch(call("1", "echo", `{"text":"a"}`), `{"jsonrpc":"2.0","id":2,"method":"ping"}`, `7`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	line := c.Recv()
	const unreadable = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message must be a JSON object"}}`
	if !strings.HasPrefix(line, "["+unreadable+",") {
		t.Errorf("batch: the unreadable element is not answered first: %s", line)
	}
	if got, want := batchResponses(t, line), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		unreadable,
	}; !slices.Equal(got, want) {
		t.Errorf("batch responses\n got %q\nwant %q", got, want)
	}

	// The error model inside a batch.
	c.Send(batch(call("3", "fail", `{"mode":"panic"}`), call("4", "nope", `{}`), call("5", "sleep", `{"ms":700000}`)))
	got := batchResponses(t, c.Recv())
	want := []string{
		`{"jsonrpc":"2.0","id":3,"result":` + failedResult + `}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: unknown tool \"nope\""}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"invalid arguments: ms: must be <= 600000"}],"isError":true}}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("batch responses\n got %q\nwant %q", got, want)
	}
	if r := rec.Wait(t, 1); !strings.Contains(r[0].Err.Error(), demo.Marker) || r[0].Details.ToolName() != "fail" {
		t.Errorf("report: %v", r[0].Err)
	}

	// A cancelled request has no place in the array; a batch of notifications has no answer.
	c.Send(batch(call("6", "sleep", `{"ms":60000}`), call("7", "echo", `{"text":"b"}`)))
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}`)
	if got, want := c.Recv(), `[{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"b"}]}}]`; got != want {
		t.Errorf("batch with a cancelled call\n got %s\nwant %s", got, want)
	}
	c.Send(batch(call("8", "sleep", `{"ms":60000}`)))
	c.Send(batch(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`))
	c.Expect(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, `{"jsonrpc":"2.0","id":9,"result":{}}`)
	c.Silent(200*time.Millisecond, "the cancelled call's answer would be out")

	// An empty batch is one error, and so is one over the limit, of which nothing runs.
	c.Expect(`[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: empty batch"}}`)
	c.Expect(tooLongBatch(), tooLongAnswer)
	c.Expect(`{"jsonrpc":"2.0","id":10,"method":"ping"}`, `{"jsonrpc":"2.0","id":10,"result":{}}`)
}

// tooLongBatch is a batch of calls one longer than the limit; tooLongAnswer refuses it.
func tooLongBatch() string {
	calls := make([]string, protocol.MaxBatchLength+1)
	for i := range calls {
		calls[i] = call(strconv.Itoa(100+i), "sleep", `{"ms":60000}`)
	}
	return batch(calls...)
}

const tooLongAnswer = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a batch of more than 1000 messages"}}`

// batchResponses returns the responses of a batch's answer, sorted.
func batchResponses(t *testing.T, line string) []string {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(line), &raw); err != nil {
		t.Fatalf("not a batch answer: %s", line)
	}
	out := make([]string, len(raw))
	for i, r := range raw {
		out[i] = string(r)
	}
	slices.Sort(out)
	return out
}

func TestBatchRefusedOutside20250326(t *testing.T) {
	t.Parallel()
	const refused = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batches are not supported"}}`
	for _, version := range []string{"", "2024-11-05", "2025-06-18", "2025-11-25"} {
		t.Run("stdio "+version, func(t *testing.T) {
			c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
			if version != "" {
				c.InitializeAt(version, `{}`)
			}
			c.Expect(batch(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), refused)
			c.Expect(`[]`, refused)
			c.Expect(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
		})
		t.Run("http "+version, func(t *testing.T) {
			e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
			c := e.Session()
			if version != "" {
				c.InitializeAt(version, "{}")
			}
			assertReply(t, "batch", c.Post(batch(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)), http.StatusBadRequest, refused)
		})
	}
	t.Run("modern", func(t *testing.T) {
		e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
		c := e.Session()
		c.InitializeAt("2025-03-26", "{}")
		assertReply(t, "batch", c.Post(batch(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), "MCP-Protocol-Version", protocol.LatestModernVersion), http.StatusBadRequest, refused)
	})
}

func TestBatchHTTP(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: demo.Tools()})
	c := e.Session()
	c.InitializeAt("2025-03-26", "{}")

	// Answered by one JSON body with the array of the responses.
	assertReply(t, "batch", c.Post(batch(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, call("2", "echo", `{"text":"a"}`))), http.StatusOK,
		`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a"}]}}]`)
	// Notifications alone: 202.
	if r := c.Post(batch(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); r.Status != http.StatusAccepted || r.Body != "" {
		t.Errorf("notifications: %d %q", r.Status, r.Body)
	}
	// What a call sends before its response goes first, on an SSE stream that ends with the
	// array.
	r := c.Post(batch(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":250},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`))
	if !r.IsSSE() || len(r.Events) < 2 {
		t.Fatalf("batch with progress: %d %s %q", r.Status, r.Body, r.Events)
	}
	for _, ev := range r.Events[:len(r.Events)-1] {
		if !strings.Contains(ev, `"notifications/progress"`) {
			t.Errorf("event before the batch's answer: %s", ev)
		}
	}
	if got, want := r.Events[len(r.Events)-1], `[{"jsonrpc":"2.0","id":4,"result":{}},{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"slept"}]}}]`; got != want {
		t.Errorf("last event\n got %s\nwant %s", got, want)
	}
	// Refused whole: an empty batch, and one over the limit.
	assertReply(t, "empty batch", c.Post(`[]`), http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: empty batch"}}`)
	assertReply(t, "batch over the limit", c.Post(tooLongBatch()), http.StatusBadRequest, tooLongAnswer)
	// The session goes on.
	c.Expect(pingRequest, pingResult)
}

func TestBatchInMemory(t *testing.T) {
	t.Parallel()
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if err := cl.Send([]byte(mcptest.InitializeAt("2025-03-26", `{}`))); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.Receive(ctx); err != nil || !strings.Contains(string(got), `"protocolVersion":"2025-03-26"`) {
		t.Fatalf("initialize: %s %v", got, err)
	}
	if err := cl.Send([]byte(batch(call("1", "echo", `{"text":"m"}`)))); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.Receive(ctx); err != nil || string(got) != `[{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"m"}]}}]` {
		t.Errorf("batch: %s %v", got, err)
	}
}

// TestRevisionElicitationShape: an elicitation sent to a 2025-06-18 session has the members of
// that revision's elicitation/create only: a handler's explicit form mode is left out, as
// 2025-06-18 has no mode; a 2025-11-25 session gets it as the handler set it.
func TestRevisionElicitationShape(t *testing.T) {
	t.Parallel()
	form := json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)
	ask := tools.Tool{Name: "ask", Description: "Asks the user.", Handler: tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
		res, err := client.Elicit(ctx, &protocol.ElicitParams{Mode: protocol.ElicitModeForm, Message: "ok?", RequestedSchema: form})
		if err != nil {
			return nil, err
		}
		return tools.TextResult(res.Action), nil
	})}
	tests := []struct{ version, caps, params string }{
		{"2025-06-18", `{"elicitation":{}}`, `{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`},
		{"2025-11-25", `{"elicitation":{"form":{}}}`, `{"mode":"form","message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{ask}})
			c.InitializeAt(tt.version, tt.caps)
			c.Send(call("1", "ask", `{}`))
			c.ExpectNext(`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":` + tt.params + `}`)
			c.Send(`{"jsonrpc":"2.0","id":1,"result":{"action":"decline"}}`)
			c.ExpectNext(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"decline"}]}}`)
		})
	}
}

// TestRevisionSamplingContent: a sampling request whose messages hold content the session's
// revision does not have (audio before 2025-03-26) is refused before anything is sent, with an
// error wrapping client.ErrUnsupported that says why; from 2025-03-26 it is sent as it is.
func TestRevisionSamplingContent(t *testing.T) {
	t.Parallel()
	listen := func(errs chan<- error) tools.Tool {
		return tools.Tool{Name: "listen", Description: "Asks the client's model about a sound.", Handler: tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
			res, err := client.CreateMessage(ctx, &protocol.CreateMessageParams{MaxTokens: 10, Messages: []protocol.SamplingMessage{
				{Role: protocol.RoleUser, Content: protocol.TextContent("What is this?")},
				{Role: protocol.RoleUser, Content: protocol.Content{Type: protocol.ContentAudio, Data: "UklGRg==", MimeType: "audio/wav"}},
			}})
			errs <- err
			if err != nil {
				return nil, err
			}
			return tools.TextResult(res.Text()), nil
		})}
	}

	t.Run("2024-11-05", func(t *testing.T) {
		errs := make(chan error, 1)
		c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{listen(errs)}})
		c.InitializeAt("2024-11-05", `{"sampling":{}}`)
		// No request reaches the client: the next line is the call's result, the error model's.
		c.Expect(call("1", "listen", `{}`), `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`)
		var err error
		select {
		case err = <-errs:
		case <-time.After(mcptest.Watchdog):
			t.Fatal("the handler's CreateMessage did not return")
		}
		if !errors.Is(err, client.ErrUnsupported) ||
			err.Error() != "client: sampling/createMessage: messages[1] has audio content, which MCP 2024-11-05, the session's revision, does not have" {
			t.Errorf("CreateMessage: %v, want ErrUnsupported naming the audio and the revision", err)
		}
	})
	t.Run("2025-03-26", func(t *testing.T) {
		errs := make(chan error, 1)
		c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{listen(errs)}})
		c.InitializeAt("2025-03-26", `{"sampling":{}}`)
		c.Send(call("1", "listen", `{}`))
		c.ExpectNext(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"What is this?"}},{"role":"user","content":{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}}],"maxTokens":10}}`)
		c.Send(`{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"type":"text","text":"a bell"},"model":"m"}}`)
		c.ExpectNext(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a bell"}]}}`)
		if err := <-errs; err != nil {
			t.Error(err)
		}
	})
}
