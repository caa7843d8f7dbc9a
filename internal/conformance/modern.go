package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// The fixtures of the conformance suite's 2026-07-28 requirement set: tools and a prompt that
// ask the client for input (answered input_required in the modern era, with server→client
// requests in a legacy session: the same handlers serve both), and tools that probe the modern
// rules (capabilities, logging, list changes).

// Lists is what the list-change triggers change: the server, once it exists.
type Lists interface {
	AddTools(defs ...tools.Tool) error
	RemoveTools(names ...string) int
	AddPrompts(defs ...prompts.Prompt) error
	RemovePrompts(names ...string) int
}

// Triggers holds the server the trigger fixtures change; set it with [Triggers.Set] once the
// server is made. Before that the triggers fail.
type Triggers struct{ lists atomic.Pointer[Lists] }

// Set makes l the server the triggers change.
func (t *Triggers) Set(l Lists) { t.lists.Store(&l) }

func (t *Triggers) get() (Lists, error) {
	l := t.lists.Load()
	if l == nil {
		return nil, errors.New("conformance: triggers have no server yet")
	}
	return *l, nil
}

var nameSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)

func elicitName(message string) client.InputRequest {
	return client.ElicitInput(&protocol.ElicitParams{Message: message, RequestedSchema: nameSchema})
}

func ask(text string, maxTokens int) client.InputRequest {
	return client.SamplingInput(&protocol.CreateMessageParams{
		Messages:  []protocol.SamplingMessage{{Role: protocol.RoleUser, Content: protocol.TextContent(text)}},
		MaxTokens: maxTokens,
	})
}

// field returns the string member name of an accepted elicitation's content, or "".
func field(r client.InputResponse, name string) string {
	res, err := r.Elicit()
	if err != nil || res.Action != protocol.ElicitAccept {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(res.Content, &m) != nil {
		return ""
	}
	s, _ := m[name].(string)
	return s
}

func rootsText(r client.InputResponse) (string, error) {
	res, err := r.Roots()
	if err != nil {
		return "", err
	}
	uris := make([]string, 0, len(res.Roots))
	for _, root := range res.Roots {
		uris = append(uris, root.URI)
	}
	return "Roots: " + strings.Join(uris, ", "), nil
}

func sampledText(r client.InputResponse) (string, error) {
	res, err := r.Message()
	if err != nil {
		return "", err
	}
	return res.Text(), nil
}

func inputTool(name, description string, h func(ctx context.Context) (*tools.Result, error)) tools.Tool {
	return tools.Tool{
		Name:        name,
		Description: description,
		InputSchema: noArgs,
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			return h(ctx)
		}),
	}
}

// ModernTools returns the tools of the 2026-07-28 fixtures; t is the server their list-change
// triggers change.
func ModernTools(t *Triggers) []tools.Tool {
	return []tools.Tool{
		inputTool("test_input_required_result_elicitation", "Asks for the user's name (key user_name) and greets them.",
			func(ctx context.Context) (*tools.Result, error) {
				in, err := client.Input(ctx, map[string]client.InputRequest{"user_name": elicitName("What is your name?")})
				if err != nil {
					return nil, err
				}
				name := field(in["user_name"], "name")
				if name == "" {
					name = "there"
				}
				return tools.TextResult("Hello, " + name + "!"), nil
			}),
		inputTool("test_input_required_result_sampling", "Asks the client's model for the capital of France (key capital_question).",
			func(ctx context.Context) (*tools.Result, error) {
				in, err := client.Input(ctx, map[string]client.InputRequest{"capital_question": ask("What is the capital of France?", 100)})
				if err != nil {
					return nil, err
				}
				text, err := sampledText(in["capital_question"])
				if err != nil {
					return nil, err
				}
				return tools.TextResult("The model answered: " + text), nil
			}),
		inputTool("test_input_required_result_list_roots", "Asks for the client's roots (key client_roots) and lists them.",
			func(ctx context.Context) (*tools.Result, error) {
				in, err := client.Input(ctx, map[string]client.InputRequest{"client_roots": client.RootsInput()})
				if err != nil {
					return nil, err
				}
				text, err := rootsText(in["client_roots"])
				if err != nil {
					return nil, err
				}
				return tools.TextResult(text), nil
			}),
		inputTool("test_input_required_result_request_state", "Keeps a state across rounds and asks for a confirmation (key confirm).",
			func(ctx context.Context) (*tools.Result, error) { return confirmWithState(ctx) }),
		inputTool("test_input_required_result_tampered_state", "Asks for a confirmation (key confirm); its request state is integrity-protected.",
			func(ctx context.Context) (*tools.Result, error) { return confirmWithState(ctx) }),
		inputTool("test_input_required_result_multiple_inputs", "Asks for a name, a greeting and the roots at once.",
			func(ctx context.Context) (*tools.Result, error) {
				in, err := client.Input(ctx, map[string]client.InputRequest{
					"user_name":    elicitName("What is your name?"),
					"greeting":     ask("Generate a greeting", 50),
					"client_roots": client.RootsInput(),
				})
				if err != nil {
					return nil, err
				}
				greeting, err := sampledText(in["greeting"])
				if err != nil {
					return nil, err
				}
				roots, err := rootsText(in["client_roots"])
				if err != nil {
					return nil, err
				}
				return tools.TextResult(fmt.Sprintf("name=%s; greeting=%s; %s", field(in["user_name"], "name"), greeting, roots)), nil
			}),
		inputTool("test_input_required_result_multi_round", "Asks for a name (step1), then a colour (step2), in two rounds.",
			func(ctx context.Context) (*tools.Result, error) {
				in1, err := client.Input(ctx, map[string]client.InputRequest{"step1": elicitName("Step 1: What is your name?")})
				if err != nil {
					return nil, err
				}
				in2, err := client.Input(ctx, map[string]client.InputRequest{"step2": client.ElicitInput(&protocol.ElicitParams{
					Message:         "Step 2: What is your favorite color?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`),
				})})
				if err != nil {
					return nil, err
				}
				return tools.TextResult(fmt.Sprintf("%s likes %s", field(in1["step1"], "name"), field(in2["step2"], "color"))), nil
			}),
		inputTool("test_input_required_result_capabilities", "Asks only for what the request's client capabilities allow.",
			func(ctx context.Context) (*tools.Result, error) {
				caps := client.Capabilities(ctx)
				reqs := map[string]client.InputRequest{}
				if caps.HasSampling() {
					reqs["sample"] = ask("Say hello", 20)
				}
				if caps.HasElicitationForm() {
					reqs["user_name"] = elicitName("What is your name?")
				}
				if caps.HasRoots() {
					reqs["client_roots"] = client.RootsInput()
				}
				if len(reqs) == 0 {
					return nil, &client.CapabilityError{Method: protocol.MethodSamplingCreateMessage, Missing: "sampling"}
				}
				in, err := client.Input(ctx, reqs)
				if err != nil {
					return nil, err
				}
				return tools.TextResult(fmt.Sprintf("received %d answers", len(in))), nil
			}),
		inputTool("test_missing_capability", "Needs sampling: a request that does not declare it is refused with -32021.",
			func(ctx context.Context) (*tools.Result, error) {
				res, err := client.CreateMessage(ctx, &protocol.CreateMessageParams{
					Messages:  []protocol.SamplingMessage{{Role: protocol.RoleUser, Content: protocol.TextContent("Say hello")}},
					MaxTokens: 20,
				})
				if err != nil {
					return nil, err
				}
				return tools.TextResult("The model answered: " + res.Text()), nil
			}),
		inputTool("test_streaming_elicitation", "Asks the user for their name with an elicitation.",
			func(ctx context.Context) (*tools.Result, error) {
				res, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema})
				if err != nil && !errors.Is(err, client.ErrInvalidContent) {
					return nil, err
				}
				return tools.TextResult("action=" + res.Action), nil
			}),
		inputTool("test_logging_tool", "Logs three messages; a modern client gets them only if it asked for a log level.",
			func(ctx context.Context) (*tools.Result, error) {
				for i := 1; i <= 3; i++ {
					if err := client.Log(ctx, protocol.LevelInfo, "test_logging_tool", fmt.Sprintf("log message %d", i)); err != nil {
						return nil, err
					}
				}
				return tools.TextResult("logged three messages"), nil
			}),
		inputTool("test_trigger_tool_change", "Changes the tool list once: adds the tool test_toggled_tool, or removes it if it is there.",
			func(context.Context) (*tools.Result, error) {
				l, err := t.get()
				if err != nil {
					return nil, err
				}
				if l.RemoveTools("test_toggled_tool") == 0 {
					if err := l.AddTools(tools.Tool{Name: "test_toggled_tool", Description: "Comes and goes with test_trigger_tool_change.",
						InputSchema: noArgs, Handler: static(text("toggled"))}); err != nil {
						return nil, err
					}
				}
				return tools.TextResult("tool list changed"), nil
			}),
		inputTool("test_trigger_prompt_change", "Changes the prompt list once: adds the prompt test_toggled_prompt, or removes it if it is there.",
			func(context.Context) (*tools.Result, error) {
				l, err := t.get()
				if err != nil {
					return nil, err
				}
				if l.RemovePrompts("test_toggled_prompt") == 0 {
					if err := l.AddPrompts(prompts.Prompt{Name: "test_toggled_prompt", Description: "Comes and goes with test_trigger_prompt_change.",
						Handler: prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
							return &prompts.GetResult{Messages: []protocol.PromptMessage{prompts.Text(protocol.RoleUser, "toggled")}}, nil
						})}); err != nil {
						return nil, err
					}
				}
				return tools.TextResult("prompt list changed"), nil
			}),
		{
			// http-custom-header-server-validation calls the first listed tool with a top-level
			// string property annotated with x-mcp-header, with that argument only: a modern
			// tools/call over HTTP must then carry it in Mcp-Param-Region.
			Name:        "test_x_mcp_header",
			Description: "Mirrors its region argument into the Mcp-Param-Region header (x-mcp-header) and answers region=<region>.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"region":{"type":"string","description":"Mirrored into Mcp-Param-Region.","x-mcp-header":"Region"}}}`),
			Handler: tools.Func(func(_ context.Context, in struct {
				Region string `json:"region"`
			}) (*tools.Result, error) {
				return tools.TextResult("region=" + in.Region), nil
			}),
		},
	}
}

// confirmWithState keeps a state made before its request for input and checks, once the
// confirmation arrives, that the state came back.
func confirmWithState(ctx context.Context) (*tools.Result, error) {
	const want = "fixture-state-v1"
	if client.State(ctx) == nil {
		if err := client.SetState(ctx, []byte(want)); err != nil {
			return nil, err
		}
	}
	in, err := client.Input(ctx, map[string]client.InputRequest{"confirm": client.ElicitInput(&protocol.ElicitParams{
		Message:         "Please confirm",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`),
	})})
	if err != nil {
		return nil, err
	}
	res, err := in["confirm"].Elicit()
	if err != nil {
		return nil, err
	}
	if string(client.State(ctx)) != want {
		return tools.ErrorResult("state-missing"), nil
	}
	return tools.TextResult("state-ok: action=" + res.Action), nil
}

// ModernPrompts returns the prompt of the 2026-07-28 fixtures.
func ModernPrompts() []prompts.Prompt {
	return []prompts.Prompt{{
		Name: "test_input_required_result_prompt", Title: "Prompt That Asks For Input",
		Description: "A prompt that asks the user for its context (key user_context) before it renders.",
		Handler: prompts.HandlerFunc(func(ctx context.Context, _ *prompts.GetRequest) (*prompts.GetResult, error) {
			in, err := client.Input(ctx, map[string]client.InputRequest{"user_context": client.ElicitInput(&protocol.ElicitParams{
				Message:         "What context should the prompt use?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`),
			})})
			if err != nil {
				return nil, err
			}
			return &prompts.GetResult{Messages: []protocol.PromptMessage{
				prompts.Text(protocol.RoleUser, "Answer in this context: "+field(in["user_context"], "context")),
			}}, nil
		}),
	}}
}
