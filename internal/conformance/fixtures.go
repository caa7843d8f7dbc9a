// Package conformance is the fixture set of the official MCP conformance suite
// (@modelcontextprotocol/conformance 0.1.16): the test_* tools, test:// resources and test_*
// prompts its server scenarios call, with the names, arguments and results they check. cmd/server
// serves them with --fixtures conformance, next to the demonstration tools.
package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

// WatchedResource is the URI of the resource clients subscribe to; cmd/server announces an
// update of it every few seconds in fixture mode.
const WatchedResource = "test://watched-resource"

// pngData is a 1×1 PNG image.
const pngData = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// wavData is a tenth of a second of silence as 8 kHz 8-bit mono WAV, base64-encoded.
var wavData = func() string {
	const rate, samples = 8000, 800
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + samples))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1)) // PCM
	le(uint16(1)) // mono
	le(uint32(rate))
	le(uint32(rate)) // byte rate
	le(uint16(1))    // block align
	le(uint16(8))    // bits per sample
	b.WriteString("data")
	le(uint32(samples))
	b.Write(bytes.Repeat([]byte{128}, samples))
	return base64.StdEncoding.EncodeToString(b.Bytes())
}()

var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

func text(s string) protocol.Content { return protocol.TextContent(s) }

func static(content ...protocol.Content) tools.Handler {
	return tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
		return &tools.Result{Content: content}, nil
	})
}

// Tools returns the fixture tools, freshly built.
func Tools() []tools.Tool {
	return []tools.Tool{
		{
			Name:        "test_simple_text",
			Description: "Returns a simple text response.",
			InputSchema: noArgs,
			Handler:     static(text("This is a simple text response for testing.")),
		},
		{
			Name:        "test_image_content",
			Description: "Returns a 1x1 PNG image.",
			InputSchema: noArgs,
			Handler:     static(protocol.Content{Type: protocol.ContentImage, Data: pngData, MimeType: "image/png"}),
		},
		{
			Name:        "test_audio_content",
			Description: "Returns a short WAV clip.",
			InputSchema: noArgs,
			Handler:     static(protocol.Content{Type: protocol.ContentAudio, Data: wavData, MimeType: "audio/wav"}),
		},
		{
			Name:        "test_embedded_resource",
			Description: "Returns an embedded text resource.",
			InputSchema: noArgs,
			Handler: static(protocol.Content{Type: protocol.ContentResource, Resource: &protocol.ResourceContents{
				URI: "test://embedded-resource", MimeType: "text/plain", Text: "This is an embedded resource content.",
			}}),
		},
		{
			Name:        "test_multiple_content_types",
			Description: "Returns text, an image and an embedded resource.",
			InputSchema: noArgs,
			Handler: static(
				text("Multiple content types test:"),
				protocol.Content{Type: protocol.ContentImage, Data: pngData, MimeType: "image/png"},
				protocol.Content{Type: protocol.ContentResource, Resource: &protocol.ResourceContents{
					URI: "test://mixed-content-resource", MimeType: "application/json", Text: `{"test":"data","value":123}`,
				}},
			),
		},
		{
			Name:        "test_tool_with_logging",
			Description: "Sends three info log messages while it runs.",
			InputSchema: noArgs,
			Handler:     tools.HandlerFunc(withLogging),
		},
		{
			Name:        "test_tool_with_progress",
			Description: "Reports progress 0, 50 and 100 of 100 when the call has a progress token.",
			InputSchema: noArgs,
			Handler:     tools.HandlerFunc(withProgress),
		},
		{
			Name:        "test_error_handling",
			Description: "Always returns a tool error result.",
			InputSchema: noArgs,
			Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
				return tools.ErrorResult("This tool intentionally returns an error for testing"), nil
			}),
		},
		{
			Name:        "test_sampling",
			Description: "Asks the client's LLM to answer prompt (sampling/createMessage) and returns the answer.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`),
			Handler:     tools.Func(sampling),
		},
		{
			Name:        "test_elicitation",
			Description: "Asks the user for a username and an email (elicitation/create) and returns the answer.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`),
			Handler:     tools.Func(elicitation),
		},
		{
			Name:        "test_elicitation_sep1034_defaults",
			Description: "Asks for input with a default for every primitive type (SEP-1034).",
			InputSchema: noArgs,
			Handler:     elicitWith("Elicitation completed", "Please review and update the form fields with defaults", sep1034Schema),
		},
		{
			Name:        "test_elicitation_sep1330_enums",
			Description: "Asks for input with the five enum schema variants (SEP-1330).",
			InputSchema: noArgs,
			Handler:     elicitWith("Elicitation completed", "Please select options from the enum fields", sep1330Schema),
		},
		{
			Name:        "json_schema_2020_12_tool",
			Description: "Tool with JSON Schema 2020-12 features ($schema, $defs with an $anchor, $ref, allOf/anyOf, if/then/else).",
			InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
				`"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
				`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},` +
				`"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],` +
				`"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},` +
				`"additionalProperties":false}`),
			Handler: static(text("JSON Schema 2020-12 tool called")),
		},
		{
			Name:        "test_reconnection",
			Description: "Closes the connection of its stream mid-call, then answers after a short pause; over Streamable HTTP the client resumes the stream with GET and Last-Event-ID to get the result.",
			InputSchema: noArgs,
			Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				// A transport that cannot close the stream (stdio, a JSON-only client) just answers.
				if err := client.CloseStream(ctx); err != nil && !errors.Is(err, client.ErrNoStream) {
					return nil, err
				}
				if err := pause(ctx, 100*time.Millisecond); err != nil {
					return nil, err
				}
				return tools.TextResult("Reconnection test completed successfully"), nil
			}),
		},
	}
}

// pause waits d, or returns the cause of ctx ending first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

func withLogging(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return nil, err
			}
		}
		if err := client.Log(ctx, protocol.LevelInfo, "test_tool_with_logging", msg); err != nil && !errors.Is(err, client.ErrRateLimited) {
			return nil, err
		}
	}
	return tools.TextResult("Tool with logging executed successfully"), nil
}

func withProgress(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
	total := 100.0
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return nil, err
			}
		}
		if err := tools.ReportProgress(ctx, p, &total, fmt.Sprintf("Completed step %d of 3", i+1)); err != nil {
			return nil, err
		}
	}
	return tools.TextResult("Tool with progress executed successfully"), nil
}

type samplingIn struct {
	Prompt string `json:"prompt"`
}

func sampling(ctx context.Context, in samplingIn) (*tools.Result, error) {
	res, err := client.CreateMessage(ctx, &protocol.CreateMessageParams{
		Messages:  []protocol.SamplingMessage{{Role: protocol.RoleUser, Content: text(in.Prompt)}},
		MaxTokens: 100,
	})
	if errors.Is(err, client.ErrUnsupported) {
		return tools.ErrorResult("This client does not support sampling."), nil
	}
	if err != nil {
		return nil, err
	}
	return tools.TextResult("LLM response: " + res.Text()), nil
}

type elicitationIn struct {
	Message string `json:"message"`
}

func elicitation(ctx context.Context, in elicitationIn) (*tools.Result, error) {
	schema := json.RawMessage(`{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`)
	res, err := client.Elicit(ctx, &protocol.ElicitParams{Message: in.Message, RequestedSchema: schema})
	if errors.Is(err, client.ErrUnsupported) {
		return tools.ErrorResult("This client does not support elicitation."), nil
	}
	if err != nil && !errors.Is(err, client.ErrInvalidContent) { // the fixtures report what came
		return nil, err
	}
	return tools.TextResult(fmt.Sprintf("User response: action=%s, content=%s", res.Action, contentText(res.Content))), nil
}

func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}

var sep1034Schema = json.RawMessage(`{"type":"object","properties":{` +
	`"name":{"type":"string","description":"User name","default":"John Doe"},` +
	`"age":{"type":"integer","description":"User age","default":30},` +
	`"score":{"type":"number","description":"User score","default":95.5},` +
	`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},` +
	`"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}`)

var sep1330Schema = json.RawMessage(`{"type":"object","properties":{` +
	`"untitledSingle":{"type":"string","description":"Choose one option","enum":["option1","option2","option3"]},` +
	`"titledSingle":{"type":"string","description":"Choose one titled option","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},` +
	`"legacyEnum":{"type":"string","description":"Choose one (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},` +
	`"untitledMulti":{"type":"array","description":"Choose several options","items":{"type":"string","enum":["option1","option2","option3"]}},` +
	`"titledMulti":{"type":"array","description":"Choose several titled options","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}` +
	`},"required":[]}`)

func elicitWith(prefix, message string, schema json.RawMessage) tools.Handler {
	return tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
		res, err := client.Elicit(ctx, &protocol.ElicitParams{Message: message, RequestedSchema: schema})
		if errors.Is(err, client.ErrUnsupported) {
			return tools.ErrorResult("This client does not support elicitation."), nil
		}
		if err != nil && !errors.Is(err, client.ErrInvalidContent) {
			return nil, err
		}
		return tools.TextResult(fmt.Sprintf("%s: action=%s, content=%s", prefix, res.Action, contentText(res.Content))), nil
	})
}

// Resources returns the fixture resources: static text, static binary and the watched one.
func Resources() []resources.Resource {
	png, _ := base64.StdEncoding.DecodeString(pngData)
	return []resources.Resource{
		{
			URI: "test://static-text", Name: "static-text", Title: "Static Text Resource",
			Description: "A static text resource for testing", MimeType: "text/plain",
			Reader: resources.Static("text/plain", "This is the content of the static text resource.", nil),
		},
		{
			URI: "test://static-binary", Name: "static-binary", Title: "Static Binary Resource",
			Description: "A static binary resource (a PNG image) for testing", MimeType: "image/png",
			Reader: resources.Static("image/png", "", png),
		},
		{
			URI: WatchedResource, Name: "watched-resource", Title: "Watched Resource",
			Description: "A resource clients can subscribe to; it is announced as updated every few seconds", MimeType: "text/plain",
			Reader: resources.ReaderFunc(func(_ context.Context, req *resources.ReadRequest) (*resources.ReadResult, error) {
				return resources.Text(req.URI, "text/plain", "Watched resource content at "+time.Now().UTC().Format(time.RFC3339)), nil
			}),
		},
	}
}

// Templates returns the fixture resource template test://template/{id}/data.
func Templates() []resources.Template {
	return []resources.Template{{
		URITemplate: "test://template/{id}/data", Name: "template-data", Title: "Template Resource",
		Description: "A resource template with an id parameter", MimeType: "application/json",
		Reader: resources.ReaderFunc(func(_ context.Context, req *resources.ReadRequest) (*resources.ReadResult, error) {
			b, err := json.Marshal(map[string]any{"id": req.Vars["id"], "templateTest": true, "data": "Data for ID: " + req.Vars["id"]})
			if err != nil {
				return nil, err
			}
			return resources.Text(req.URI, "application/json", string(b)), nil
		}),
		Complete: map[string]resources.CompleteFunc{"id": prefixCompleter("123", "456", "789")},
	}}
}

func prefixCompleter(values ...string) func(context.Context, string, map[string]string) ([]string, error) {
	return func(_ context.Context, value string, _ map[string]string) ([]string, error) {
		out := []string{}
		for _, v := range values {
			if strings.HasPrefix(v, value) {
				out = append(out, v)
			}
		}
		return out, nil
	}
}

// Prompts returns the fixture prompts.
func Prompts() []prompts.Prompt {
	return []prompts.Prompt{
		{
			Name: "test_simple_prompt", Title: "Simple Test Prompt",
			Description: "A simple prompt without arguments",
			Handler: prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
				return &prompts.GetResult{Messages: []protocol.PromptMessage{
					prompts.Text(protocol.RoleUser, "This is a simple prompt for testing."),
				}}, nil
			}),
		},
		{
			Name: "test_prompt_with_arguments", Title: "Prompt With Arguments",
			Description: "A prompt with two required arguments",
			Arguments: []prompts.Argument{
				{Name: "arg1", Description: "First test argument", Required: true, Complete: prefixCompleter("test", "testValue1", "other")},
				{Name: "arg2", Description: "Second test argument", Required: true},
			},
			Handler: prompts.HandlerFunc(func(_ context.Context, req *prompts.GetRequest) (*prompts.GetResult, error) {
				return &prompts.GetResult{Messages: []protocol.PromptMessage{
					prompts.Text(protocol.RoleUser, fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", req.Arguments["arg1"], req.Arguments["arg2"])),
				}}, nil
			}),
		},
		{
			Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource",
			Description: "A prompt that embeds the resource given as resourceUri",
			Arguments:   []prompts.Argument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
			Handler: prompts.HandlerFunc(func(_ context.Context, req *prompts.GetRequest) (*prompts.GetResult, error) {
				return &prompts.GetResult{Messages: []protocol.PromptMessage{
					{Role: protocol.RoleUser, Content: protocol.Content{Type: protocol.ContentResource, Resource: &protocol.ResourceContents{
						URI: req.Arguments["resourceUri"], MimeType: "text/plain", Text: "Embedded resource content for testing.",
					}}},
					prompts.Text(protocol.RoleUser, "Please process the embedded resource above."),
				}}, nil
			}),
		},
		{
			Name: "test_prompt_with_image", Title: "Prompt With Image",
			Description: "A prompt that includes an image",
			Handler: prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
				return &prompts.GetResult{Messages: []protocol.PromptMessage{
					{Role: protocol.RoleUser, Content: protocol.Content{Type: protocol.ContentImage, Data: pngData, MimeType: "image/png"}},
					prompts.Text(protocol.RoleUser, "Please analyze the image above."),
				}}, nil
			}),
		},
	}
}
