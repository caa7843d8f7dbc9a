package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/internal/conformance"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// fixtureConfig is a server with the conformance fixtures and nothing else.
func fixtureConfig() toolgrain.Config {
	return toolgrain.Config{
		Tools:             conformance.Tools(),
		Resources:         conformance.Resources(),
		ResourceTemplates: conformance.Templates(),
		Prompts:           conformance.Prompts(),
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	cfg := fixtureConfig()
	cfg.OnError = rec.OnError
	cfg.Limits.PageSize = 2
	cfg.Resources = append(cfg.Resources,
		resources.Resource{URI: "test://gone", Name: "gone", Reader: resources.ReaderFunc(func(context.Context, *resources.ReadRequest) (*resources.ReadResult, error) {
			return nil, fmt.Errorf("lookup: %w", resources.ErrNotFound)
		})},
		resources.Resource{URI: "test://broken", Name: "broken", Reader: resources.ReaderFunc(func(context.Context, *resources.ReadRequest) (*resources.ReadResult, error) {
			return nil, errors.New("disk on fire: " + canary)
		})},
		resources.Resource{URI: "test://panics", Name: "panics", Reader: resources.ReaderFunc(func(context.Context, *resources.ReadRequest) (*resources.ReadResult, error) {
			panic(canary)
		})},
	)
	c := startStdio(t, cfg)
	c.Initialize()

	tests := []struct {
		name string
		give string
		want string
	}{
		{"list first page", `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"test://static-text","name":"static-text","title":"Static Text Resource","description":"A static text resource for testing","mimeType":"text/plain"},{"uri":"test://static-binary","name":"static-binary","title":"Static Binary Resource","description":"A static binary resource (a PNG image) for testing","mimeType":"image/png"}],"nextCursor":"cjI"}}`},
		{"list last page", `{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{"cursor":"cjU"}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"resources":[{"uri":"test://panics","name":"panics"}]}}`},
		{"invalid cursor", `{"jsonrpc":"2.0","id":3,"method":"resources/list","params":{"cursor":"dDI"}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: invalid cursor"}}`},
		{"templates", `{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}`,
			`{"jsonrpc":"2.0","id":4,"result":{"resourceTemplates":[{"uriTemplate":"test://template/{id}/data","name":"template-data","title":"Template Resource","description":"A resource template with an id parameter","mimeType":"application/json"}]}}`},
		{"read text", `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"test://static-text"}}`,
			`{"jsonrpc":"2.0","id":5,"result":{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}]}}`},
		{"read template", `{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"test://template/a%20b/data"}}`,
			`{"jsonrpc":"2.0","id":6,"result":{"contents":[{"uri":"test://template/a%20b/data","mimeType":"application/json","text":"{\"data\":\"Data for ID: a b\",\"id\":\"a b\",\"templateTest\":true}"}]}}`},
		{"template needs one segment", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"test://template/a/b/data"}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"test://template/a/b/data"}}}`},
		{"unknown uri", `{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"test://nope"}}`,
			`{"jsonrpc":"2.0","id":8,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"test://nope"}}}`},
		{"reader says not found", `{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"test://gone"}}`,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"test://gone"}}}`},
		{"relative uri", `{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"static-text"}}`,
			`{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"Invalid params: uri must be an absolute URI"}}`},
		{"no uri", `{"jsonrpc":"2.0","id":11,"method":"resources/read","params":{}}`,
			`{"jsonrpc":"2.0","id":11,"error":{"code":-32602,"message":"Invalid params: resources/read needs params with a string uri"}}`},
		{"subscribe", `{"jsonrpc":"2.0","id":12,"method":"resources/subscribe","params":{"uri":"test://watched-resource"}}`,
			`{"jsonrpc":"2.0","id":12,"result":{}}`},
		{"unsubscribe", `{"jsonrpc":"2.0","id":13,"method":"resources/unsubscribe","params":{"uri":"test://watched-resource"}}`,
			`{"jsonrpc":"2.0","id":13,"result":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.For(t).Expect(tt.give, tt.want)
		})
	}
	if got := rec.Snapshot(); len(got) != 0 {
		t.Fatalf("expected outcomes were reported: %v", got[0].Err)
	}

	// Unexpected failures are private: -32603 for the client, the original for OnError.
	c.Expect(`{"jsonrpc":"2.0","id":20,"method":"resources/read","params":{"uri":"test://broken"}}`,
		`{"jsonrpc":"2.0","id":20,"error":{"code":-32603,"message":"Internal error"}}`)
	c.Expect(`{"jsonrpc":"2.0","id":21,"method":"resources/read","params":{"uri":"test://panics"}}`,
		`{"jsonrpc":"2.0","id":21,"error":{"code":-32603,"message":"Internal error"}}`)
	reports := rec.Wait(t, 2)
	for i, r := range reports {
		if !strings.Contains(r.Err.Error(), canary) || r.Details.Request().Method() != "resources/read" {
			t.Errorf("report %d: %v (method %q)", i, r.Err, r.Details.Request().Method())
		}
	}
}

const canary = "SECRET-canary"

func TestResourceSubscriptions(t *testing.T) {
	t.Parallel()
	c := startStdio(t, fixtureConfig())
	c.Initialize()
	c.Expect(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"test://watched-resource"}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	c.srv.NotifyResourceUpdated("test://static-text") // not subscribed
	c.srv.NotifyResourceUpdated("test://watched-resource")
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://watched-resource"}}`)
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":{"uri":"test://watched-resource"}}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	c.srv.NotifyResourceUpdated("test://watched-resource")
	c.Silent(200*time.Millisecond, "an update after unsubscribe would be out")
}

func TestPrompts(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	cfg := fixtureConfig()
	cfg.OnError = rec.OnError
	cfg.Prompts = append(cfg.Prompts,
		prompts.Prompt{Name: "picky", Description: "Rejects every value.", Arguments: []prompts.Argument{{Name: "x"}},
			Handler: prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
				return nil, &prompts.ArgumentError{Argument: "x", Reason: "must be a colour"}
			})},
		prompts.Prompt{Name: "broken", Description: "Fails.",
			Handler: prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
				return nil, errors.New("template engine crashed: " + canary)
			})},
	)
	c := startStdio(t, cfg)
	c.Initialize()
	tests := []struct {
		name string
		give string
		want string
	}{
		{"simple", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"test_simple_prompt"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"messages":[{"role":"user","content":{"type":"text","text":"This is a simple prompt for testing."}}]}}`},
		{"with arguments", `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"test_prompt_with_arguments","arguments":{"arg1":"testValue1","arg2":"testValue2"}}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"messages":[{"role":"user","content":{"type":"text","text":"Prompt with arguments: arg1='testValue1', arg2='testValue2'"}}]}}`},
		{"missing required", `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"test_prompt_with_arguments","arguments":{"arg1":"a"}}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: argument \"arg2\": missing required argument"}}`},
		{"no arguments at all", `{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"test_prompt_with_arguments"}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: argument \"arg1\": missing required argument"}}`},
		{"unknown argument", `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"test_simple_prompt","arguments":{"zzz":"a"}}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: argument \"zzz\": unknown argument"}}`},
		{"not a string", `{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"test_prompt_with_arguments","arguments":{"arg1":1,"arg2":"b"}}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: argument \"arg1\": must be a string"}}`},
		{"unknown prompt", `{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"nope"}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: unknown prompt \"nope\""}}`},
		{"handler rejects a value", `{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"picky","arguments":{"x":"7"}}}`,
			`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Invalid params: argument \"x\": must be a colour"}}`},
		{"embedded resource", `{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"test_prompt_with_embedded_resource","arguments":{"resourceUri":"test://example-resource"}}}`,
			`{"jsonrpc":"2.0","id":9,"result":{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"test://example-resource","mimeType":"text/plain","text":"Embedded resource content for testing."}}},{"role":"user","content":{"type":"text","text":"Please process the embedded resource above."}}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.For(t).Expect(tt.give, tt.want)
		})
	}
	c.Send(`{"jsonrpc":"2.0","id":20,"method":"prompts/list"}`)
	var list struct {
		Result protocol.ListPromptsResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.Recv()), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Result.Prompts {
		if p.Description == "" {
			t.Errorf("prompt %s has no description", p.Name)
		}
		names = append(names, p.Name)
	}
	if got, want := strings.Join(names, ","), "test_simple_prompt,test_prompt_with_arguments,test_prompt_with_embedded_resource,test_prompt_with_image,picky,broken"; got != want {
		t.Errorf("prompts = %s, want %s", got, want)
	}
	if got := rec.Snapshot(); len(got) != 0 {
		t.Fatalf("expected outcomes were reported: %v", got[0].Err)
	}
	c.Expect(`{"jsonrpc":"2.0","id":21,"method":"prompts/get","params":{"name":"broken"}}`,
		`{"jsonrpc":"2.0","id":21,"error":{"code":-32603,"message":"Internal error"}}`)
	if r := rec.Wait(t, 1)[0]; !strings.Contains(r.Err.Error(), canary) || r.Details.Request().Method() != "prompts/get" {
		t.Errorf("report: %v", r.Err)
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	many := make([]string, 150)
	for i := range many {
		many[i] = fmt.Sprintf("v%03d", i)
	}
	cfg := fixtureConfig()
	cfg.Prompts = append(cfg.Prompts, prompts.Prompt{
		Name: "many", Description: "Has a lot of suggestions.",
		Arguments: []prompts.Argument{{Name: "v", Complete: func(context.Context, string, map[string]string) ([]string, error) { return many, nil }}},
		Handler: prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
			return &prompts.GetResult{}, nil
		}),
	})
	c := startStdio(t, cfg)
	c.Initialize()
	complete := func(id, ref, arg string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"completion/complete","params":{"ref":` + ref + `,"argument":` + arg + `}}`
	}
	tests := []struct {
		name string
		give string
		want string
	}{
		{"prompt argument", complete("1", `{"type":"ref/prompt","name":"test_prompt_with_arguments"}`, `{"name":"arg1","value":"test"}`),
			`{"jsonrpc":"2.0","id":1,"result":{"completion":{"values":["test","testValue1"],"total":2}}}`},
		{"no completer", complete("2", `{"type":"ref/prompt","name":"test_prompt_with_arguments"}`, `{"name":"arg2","value":"x"}`),
			`{"jsonrpc":"2.0","id":2,"result":{"completion":{"values":[]}}}`},
		{"template variable", complete("3", `{"type":"ref/resource","uri":"test://template/{id}/data"}`, `{"name":"id","value":"4"}`),
			`{"jsonrpc":"2.0","id":3,"result":{"completion":{"values":["456"],"total":1}}}`},
		{"unknown prompt", complete("4", `{"type":"ref/prompt","name":"nope"}`, `{"name":"a","value":""}`),
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: unknown prompt \"nope\""}}`},
		{"unknown argument", complete("5", `{"type":"ref/prompt","name":"test_simple_prompt"}`, `{"name":"a","value":""}`),
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: prompt \"test_simple_prompt\" has no argument \"a\""}}`},
		{"unknown template", complete("6", `{"type":"ref/resource","uri":"test://x/{y}"}`, `{"name":"y","value":""}`),
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: unknown resource template \"test://x/{y}\""}}`},
		{"bad ref type", complete("7", `{"type":"ref/tool","name":"x"}`, `{"name":"y","value":""}`),
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: ref.type must be \"ref/prompt\" or \"ref/resource\""}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.For(t).Expect(tt.give, tt.want)
		})
	}
	c.Send(complete("8", `{"type":"ref/prompt","name":"many"}`, `{"name":"v","value":""}`))
	var res struct {
		Result protocol.CompleteResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.Recv()), &res); err != nil {
		t.Fatal(err)
	}
	if v := res.Result.Completion; len(v.Values) != 100 || !v.HasMore || v.Total == nil || *v.Total != 150 {
		t.Errorf("completion = %d values, hasMore %v, total %v", len(v.Values), v.HasMore, v.Total)
	}
}

// logTool logs one message at each level, then returns.
var logTool = tools.Tool{
	Name: "logs", Description: "Logs at every level.",
	Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		for _, l := range protocol.LogLevels {
			if err := client.Log(ctx, l, "t", map[string]string{"level": l}); err != nil {
				return nil, err
			}
		}
		return tools.TextResult("logged"), nil
	}),
}

func TestLogging(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{logTool}, LogLevel: protocol.LevelAlert})
	c.Initialize()
	// Before setLevel the configured level applies.
	c.Send(call("1", "logs", `{}`))
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"alert","logger":"t","data":{"level":"alert"}}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"emergency","logger":"t","data":{"level":"emergency"}}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"logged"}]}}`)

	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"verbose"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: invalid log level \"verbose\""}}`)
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"critical"}}`, `{"jsonrpc":"2.0","id":3,"result":{}}`)
	c.Send(call("4", "logs", `{}`))
	for _, l := range []string{"critical", "alert", "emergency"} {
		c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"` + l + `","logger":"t","data":{"level":"` + l + `"}}}`)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"logged"}]}}`)
}

// TestNoLogAfterResponse: a log message sent after the call answered is dropped, and the
// handler learns it.
func TestNoLogAfterResponse(t *testing.T) {
	t.Parallel()
	late := make(chan error, 1)
	answered := make(chan struct{})
	tool := tools.Tool{Name: "late", Timeout: 20 * time.Millisecond,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			<-ctx.Done()
			<-answered // the timeout's answer reached the client
			late <- client.Log(ctx, protocol.LevelError, "", "too late")
			return nil, ctx.Err()
		})}
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{tool}})
	c.Initialize()
	c.Expect(call("1", "late", `{}`), `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`)
	close(answered)
	if err := <-late; !errors.Is(err, client.ErrCallFinished) {
		t.Errorf("Log after the response = %v, want ErrCallFinished", err)
	}
	c.Silent(100*time.Millisecond, "a log message after the response would be out")
}

// sampler asks the client for a completion and reports what it got on results.
func sampler(results chan<- error) tools.Tool {
	return tools.Tool{
		Name: "ask", Description: "Asks the client's model.",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			res, err := client.CreateMessage(ctx, &protocol.CreateMessageParams{
				Messages:  []protocol.SamplingMessage{{Role: protocol.RoleUser, Content: protocol.TextContent("2+2?")}},
				MaxTokens: 5,
			})
			results <- err
			if err != nil {
				return nil, err
			}
			return tools.TextResult("model said " + res.Text()), nil
		}),
	}
}

const sampleRequest = `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":5}}`

func TestSampling(t *testing.T) {
	t.Parallel()
	results := make(chan error, 4)
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{sampler(results)}})
	c.InitializeWith(`{"sampling":{}}`)
	c.Send(call(`"a"`, "ask", `{}`))
	c.ExpectNext(sampleRequest)
	c.Send(`{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"type":"text","text":"4"},"model":"m"}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"model said 4"}]}}`)
	if err := <-results; err != nil {
		t.Fatal(err)
	}

	// The client's error reaches the handler as a *protocol.WireError; the call fails privately.
	c.Send(call(`"b"`, "ask", `{}`))
	c.ExpectNext(strings.Replace(sampleRequest, `"id":1`, `"id":2`, 1))
	c.Send(`{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"User rejected sampling request"}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","id":"b","result":` + failedResult + `}`)
	var we *protocol.WireError
	if err := <-results; !errors.As(err, &we) || we.Code != -1 {
		t.Errorf("handler got %v, want the client's error", err)
	}
	// An answer to a request the server never sent is ignored.
	c.Send(`{"jsonrpc":"2.0","id":99,"result":{}}`)
	c.Expect(`{"jsonrpc":"2.0","id":"p","method":"ping"}`, `{"jsonrpc":"2.0","id":"p","result":{}}`)
}

func TestRequestsNeedDeclaredCapabilities(t *testing.T) {
	t.Parallel()
	got := make(chan error, 8)
	probe := tools.Tool{Name: "probe", Description: "Tries every request to the client.",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			_, err := client.CreateMessage(ctx, &protocol.CreateMessageParams{MaxTokens: 1})
			got <- err
			_, err = client.CreateMessage(ctx, &protocol.CreateMessageParams{MaxTokens: 1, Tools: json.RawMessage(`[]`)})
			got <- err
			_, err = client.Elicit(ctx, &protocol.ElicitParams{Message: "m", RequestedSchema: json.RawMessage(`{"type":"object"}`)})
			got <- err
			_, err = client.Elicit(ctx, &protocol.ElicitParams{Mode: protocol.ElicitModeURL, Message: "m", URL: "https://example.com", ElicitationID: "e"})
			got <- err
			_, err = client.ListRoots(ctx)
			got <- err
			return tools.TextResult("done"), nil
		})}
	tests := []struct {
		name string
		caps string
		want []string // "" means the request was allowed (and then answered by the test)
	}{
		{"none", `{}`, []string{"sampling", "sampling", "elicitation (form mode)", "elicitation.url", "roots"}},
		{"sampling and form", `{"sampling":{},"elicitation":{}}`, []string{"", "sampling.tools", "", "elicitation.url", "roots"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{probe}})
			c.InitializeWith(tt.caps)
			c.Send(call("1", "probe", `{}`))
			for i, want := range tt.want {
				if want == "" {
					m := decode(t, c.Recv())
					c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"role":"assistant","content":{"type":"text","text":"x"},"model":"m","action":"decline"}}`, m["id"]))
					if err := <-got; err != nil {
						t.Errorf("request %d: %v", i, err)
					}
					continue
				}
				err := <-got
				if !errors.Is(err, client.ErrUnsupported) || !strings.HasSuffix(err.Error(), "capability "+want) {
					t.Errorf("request %d: %v, want ErrUnsupported naming %s", i, err, want)
				}
			}
			c.ExpectNext(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}`)
		})
	}
}

func TestElicitationAndRoots(t *testing.T) {
	t.Parallel()
	c := startStdio(t, fixtureConfig())
	c.InitializeWith(`{"elicitation":{"form":{}},"roots":{}}`)
	c.Send(call("1", "test_elicitation", `{"message":"Who are you?"}`))
	c.ExpectNext(`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"Who are you?","requestedSchema":{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}}}`)
	c.Send(`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"username":"ada","email":"ada@example.com"}}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"User response: action=accept, content={\"username\":\"ada\",\"email\":\"ada@example.com\"}"}]}}`)

	// test_sampling without the sampling capability: a public error result, nothing sent.
	c.Expect(call("2", "test_sampling", `{"prompt":"x"}`), `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"This client does not support sampling."}],"isError":true}}`)
}

func TestRootsList(t *testing.T) {
	t.Parallel()
	roots := tools.Tool{Name: "roots", Description: "Lists the client's roots.",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			res, err := client.ListRoots(ctx)
			if err != nil {
				return nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return tools.TextResult(strings.Join(uris, " ")), nil
		})}
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{roots}})
	c.InitializeWith(`{"roots":{"listChanged":true}}`)
	c.Send(call("1", "roots", `{}`))
	c.ExpectNext(`{"jsonrpc":"2.0","id":1,"method":"roots/list"}`)
	c.Send(`{"jsonrpc":"2.0","id":1,"result":{"roots":[{"uri":"file:///a","name":"a"},{"uri":"file:///b"}]}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"file:///a file:///b"}]}}`)
	// The client's notification that its roots changed is accepted silently.
	c.Send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	c.Expect(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`)
}

// TestCancelWhileWaitingForTheClient: a call cancelled while its handler waits for a sampling or
// elicitation answer gets no response; the server withdraws its own request with
// notifications/cancelled, the handler's wait ends with the cancellation, and a late answer from
// the client is ignored.
func TestCancelWhileWaitingForTheClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tool    string
		args    string
		request string // the method of the server's request
	}{
		{"sampling", "test_sampling", `{"prompt":"slow"}`, "sampling/createMessage"},
		{"elicitation", "test_elicitation", `{"message":"slow"}`, "elicitation/create"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := mcptest.NewRecorder()
			cfg := fixtureConfig()
			cfg.OnError = rec.OnError
			c := startStdio(t, cfg)
			c.InitializeWith(`{"sampling":{},"elicitation":{}}`)
			c.Send(call("7", tt.tool, tt.args))
			m := decode(t, c.Recv())
			if m["method"] != tt.request || m["id"] != 1.0 {
				t.Fatalf("server request = %v", m)
			}
			c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`)
			c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"request cancelled by the client"}}`)
			// The client answers anyway, too late: ignored.
			c.Send(`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{},"role":"assistant","model":"m","content":{"type":"text","text":"late"}}}`)
			c.Expect(`{"jsonrpc":"2.0","id":8,"method":"ping"}`, `{"jsonrpc":"2.0","id":8,"result":{}}`)
			c.Silent(200*time.Millisecond, "the cancelled call's answer would be out")
			if got := rec.Snapshot(); len(got) != 0 {
				t.Errorf("a cancelled call was reported: %v", got[0].Err)
			}
		})
	}
}

// TestTimeoutWhileWaitingForTheClient: a tool timeout while the handler waits for the client
// answers the call with the generic failure and withdraws the server's request.
func TestTimeoutWhileWaitingForTheClient(t *testing.T) {
	t.Parallel()
	rec := mcptest.NewRecorder()
	results := make(chan error, 1)
	tool := sampler(results)
	tool.Timeout = 50 * time.Millisecond
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{tool}, OnError: rec.OnError})
	c.InitializeWith(`{"sampling":{}}`)
	c.Send(call("1", "ask", `{}`))
	c.ExpectNext(sampleRequest)
	// The failure and the withdrawal race on the way out; both must come. The withdrawal's
	// reason is the timeout, or the answer if that cancelled the handler's context first.
	var answered, withdrawn bool
	for range 2 {
		switch line := c.Recv(); {
		case line == `{"jsonrpc":"2.0","id":1,"result":`+failedResult+`}`:
			answered = true
		case strings.HasPrefix(line, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":`):
			withdrawn = true
		default:
			t.Errorf("unexpected message %s", line)
		}
	}
	if !answered || !withdrawn {
		t.Errorf("answered %v, withdrawn %v", answered, withdrawn)
	}
	if err := <-results; err == nil {
		t.Error("handler's request succeeded after the timeout")
	}
	rec.Wait(t, 1)
}

// TestCloseWhileWaitingForTheClient: the input ends while a handler waits for the client; the
// handler's wait ends and ServeStdio returns.
func TestCloseWhileWaitingForTheClient(t *testing.T) {
	t.Parallel()
	results := make(chan error, 1)
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{sampler(results)}})
	c.InitializeWith(`{"sampling":{}}`)
	c.Send(call("1", "ask", `{}`))
	c.ExpectNext(sampleRequest)
	_ = c.CloseInput()
	select {
	case err := <-results:
		if err == nil {
			t.Fatal("handler's request succeeded after the connection closed")
		}
	case <-time.After(mcptest.Watchdog):
		t.Fatal("handler still waiting after the connection closed")
	}
}

func TestDynamicRegistries(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{logTool}})
	c.Initialize()
	extra := tools.Tool{Name: "extra", Description: "Added later.", MaxConcurrency: 1,
		Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) { return tools.TextResult("extra"), nil })}
	if err := c.srv.AddTools(extra); err != nil {
		t.Fatal(err)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	c.Expect(call("1", "extra", `{}`), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"extra"}]}}`)
	var nameErr *tools.ToolNameError
	if err := c.srv.AddTools(extra); !errors.As(err, &nameErr) || nameErr.Reason != "duplicate" {
		t.Errorf("adding a served name again: %v", err)
	}
	if n := c.srv.RemoveTools("extra", "nope"); n != 1 {
		t.Errorf("RemoveTools = %d, want 1", n)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	c.Expect(call("2", "extra", `{}`), `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: unknown tool \"extra\""}}`)
	if n := c.srv.RemoveTools("extra"); n != 0 {
		t.Errorf("removing twice = %d", n)
	}
	// Re-adding the same tool works and reuses its admission actor.
	if err := c.srv.AddTools(extra); err != nil {
		t.Fatal(err)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	c.Expect(call("3", "extra", `{}`), `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"extra"}]}}`)

	if err := c.srv.AddResources(conformance.Resources()[:1], conformance.Templates()); err != nil {
		t.Fatal(err)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`)
	c.Expect(`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"test://template/9/data"}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"contents":[{"uri":"test://template/9/data","mimeType":"application/json","text":"{\"data\":\"Data for ID: 9\",\"id\":\"9\",\"templateTest\":true}"}]}}`)
	var defErr *resources.DefinitionError
	if err := c.srv.AddResources(conformance.Resources()[:1], nil); !errors.As(err, &defErr) {
		t.Errorf("duplicate resource: %v", err)
	}
	if n := c.srv.RemoveResources("test://template/{id}/data", "test://static-text"); n != 2 {
		t.Errorf("RemoveResources = %d", n)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`)
	c.Expect(`{"jsonrpc":"2.0","id":5,"method":"resources/templates/list"}`, `{"jsonrpc":"2.0","id":5,"result":{"resourceTemplates":[]}}`)

	if err := c.srv.AddPrompts(conformance.Prompts()[0]); err != nil {
		t.Fatal(err)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`)
	c.Expect(`{"jsonrpc":"2.0","id":6,"method":"prompts/list"}`, `{"jsonrpc":"2.0","id":6,"result":{"prompts":[{"name":"test_simple_prompt","title":"Simple Test Prompt","description":"A simple prompt without arguments"}]}}`)
	if n := c.srv.RemovePrompts("test_simple_prompt"); n != 1 {
		t.Errorf("RemovePrompts = %d", n)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`)
	c.Expect(`{"jsonrpc":"2.0","id":7,"method":"prompts/list"}`, `{"jsonrpc":"2.0","id":7,"result":{"prompts":[]}}`)
}

// TestNoNotificationsBeforeInitialize: list changes are not announced to a client that has not
// initialized.
func TestNoNotificationsBeforeInitialize(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{logTool}})
	if err := c.srv.AddPrompts(conformance.Prompts()[0]); err != nil {
		t.Fatal(err)
	}
	c.Silent(100*time.Millisecond, "a list change before initialize would be out")
}

func TestProgressIsRateLimited(t *testing.T) {
	t.Parallel()
	burst := tools.Tool{Name: "burst", Description: "Reports progress a thousand times at once.",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			total := 1000.0
			for i := 1; i <= 1000; i++ {
				if err := tools.ReportProgress(ctx, float64(i), &total, ""); err != nil {
					return nil, err
				}
			}
			return tools.TextResult("done"), nil
		})}
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{burst}, Limits: toolgrain.LimitsConfig{ProgressInterval: time.Hour}})
	c.Initialize()
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"burst","_meta":{"progressToken":"p"}}}`)
	// A burst of ten goes, the next 989 find the bucket empty, the one that reaches the total
	// goes.
	for i := 1; i <= 10; i++ {
		c.ExpectNext(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":%d,"total":1000}}`, i))
	}
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1000,"total":1000}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}`)
}

func TestFixtureTools(t *testing.T) {
	t.Parallel()
	c := startStdio(t, fixtureConfig())
	c.InitializeWith(`{"sampling":{},"elicitation":{}}`)
	c.Expect(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}`)
	c.Expect(call("2", "test_error_handling", `{}`),
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"This tool intentionally returns an error for testing"}],"isError":true}}`)
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`, `{"jsonrpc":"2.0","id":3,"result":{}}`)
	c.Send(call("4", "test_tool_with_logging", `{}`))
	for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"test_tool_with_logging","data":"` + msg + `"}}`)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Tool with logging executed successfully"}]}}`)
	c.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":5}}}`)
	for i, p := range []string{"0", "50", "100"} {
		c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":5,"progress":` + p + `,"total":100,"message":"Completed step ` + fmt.Sprint(i+1) + ` of 3"}}`)
	}
	c.ExpectNext(`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"Tool with progress executed successfully"}]}}`)
	c.Send(call("6", "test_sampling", `{"prompt":"Test prompt for sampling"}`))
	c.ExpectNext(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Test prompt for sampling"}}],"maxTokens":100}}`)
	c.Send(`{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"type":"text","text":"This is a test response from the client"},"model":"test-model","stopReason":"endTurn"}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"LLM response: This is a test response from the client"}]}}`)
	c.Send(call("7", "test_elicitation_sep1034_defaults", `{}`))
	m := decode(t, c.Recv())
	props := m["params"].(map[string]any)["requestedSchema"].(map[string]any)["properties"].(map[string]any)
	if props["age"].(map[string]any)["type"] != "integer" || props["score"].(map[string]any)["default"] != 95.5 {
		t.Errorf("SEP-1034 schema = %v", props)
	}
	c.Send(`{"jsonrpc":"2.0","id":2,"result":{"action":"decline"}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Elicitation completed: action=decline, content={}"}]}}`)
}

func TestSurfaceConstructionErrors(t *testing.T) {
	t.Parallel()
	var resErr *resources.DefinitionError
	var promptErr *prompts.DefinitionError
	tests := []struct {
		name  string
		cfg   toolgrain.Config
		check func(error) bool
	}{
		{"resource", toolgrain.Config{Resources: []resources.Resource{{URI: "x://a", Name: "a"}}}, func(err error) bool { return errors.As(err, &resErr) }},
		{"template", toolgrain.Config{ResourceTemplates: []resources.Template{{URITemplate: "x://{?q}", Name: "t", Reader: resources.Static("", "", nil)}}}, func(err error) bool { return errors.As(err, &resErr) }},
		{"prompt", toolgrain.Config{Prompts: []prompts.Prompt{{Name: "p"}}}, func(err error) bool { return errors.As(err, &promptErr) }},
		{"log level", toolgrain.Config{LogLevel: "loud"}, func(err error) bool { return err != nil && strings.Contains(err.Error(), `invalid log level "loud"`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := toolgrain.NewServer(tt.cfg)
			if err == nil {
				_ = srv.Close()
			}
			if !tt.check(err) {
				t.Errorf("NewServer = %v", err)
			}
		})
	}
}

// TestInMemoryClientSurface: an in-memory client gets list changes and can answer a request
// to the client like any other.
func TestInMemoryClientSurface(t *testing.T) {
	t.Parallel()
	srv, err := toolgrain.NewServer(fixtureConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Watchdog)
	defer cancel()
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"m","version":"1"}}}`)); err != nil {
		t.Fatal(err)
	}
	if msg, err := c.Receive(ctx); err != nil || !strings.Contains(string(msg), `"result"`) {
		t.Fatalf("initialize: %s %v", msg, err)
	}
	if n := srv.RemovePrompts("test_simple_prompt"); n != 1 {
		t.Fatal("RemovePrompts")
	}
	if msg, err := c.Receive(ctx); err != nil || string(msg) != `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}` {
		t.Fatalf("list change: %s %v", msg, err)
	}
	if err := c.Send([]byte(call(`"s"`, "test_sampling", `{"prompt":"p"}`))); err != nil {
		t.Fatal(err)
	}
	if msg, err := c.Receive(ctx); err != nil || !strings.Contains(string(msg), `"method":"sampling/createMessage"`) {
		t.Fatalf("sampling request: %s %v", msg, err)
	}
	_ = c.Send([]byte(`{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}`))
	want := `{"jsonrpc":"2.0","id":"s","result":{"content":[{"type":"text","text":"LLM response: ok"}]}}`
	if msg, err := c.Receive(ctx); err != nil || string(msg) != want {
		t.Fatalf("result: %s %v", msg, err)
	}
}

// TestURLElicitation: a URL-mode elicitation goes to a client that declared it, and its
// completion is announced to that client only, once.
func TestURLElicitation(t *testing.T) {
	t.Parallel()
	visit := tools.Tool{Name: "visit", Description: "Sends the user to a page.",
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			res, err := client.Elicit(ctx, &protocol.ElicitParams{Mode: protocol.ElicitModeURL, Message: "Sign in", URL: "https://example.com/login", ElicitationID: "e1"})
			if err != nil {
				return nil, err
			}
			return tools.TextResult(res.Action), nil
		})}
	c := startStdio(t, toolgrain.Config{Tools: []tools.Tool{visit}})
	c.InitializeWith(`{"elicitation":{"url":{}}}`)
	c.Send(call("1", "visit", `{}`))
	c.ExpectNext(`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://example.com/login","elicitationId":"e1"}}`)
	c.Send(`{"jsonrpc":"2.0","id":1,"result":{"action":"accept"}}`)
	c.ExpectNext(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"accept"}]}}`)
	c.srv.NotifyElicitationComplete("other")
	c.srv.NotifyElicitationComplete("e1")
	c.ExpectNext(`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e1"}}`)
	c.srv.NotifyElicitationComplete("e1")
	c.Silent(100*time.Millisecond, "a second completion would be out")
}
