package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/protocol"
)

func caps(raw string) *protocol.ClientCapabilities {
	return protocol.ParseClientCapabilities(json.RawMessage(raw))
}

func TestCheckCapability(t *testing.T) {
	form := &protocol.ElicitParams{Message: "m"}
	url := &protocol.ElicitParams{Mode: protocol.ElicitModeURL, Message: "m", URL: "https://example.com"}
	withTools := &protocol.CreateMessageParams{Tools: json.RawMessage(`[]`)}
	tests := []struct {
		name    string
		caps    string
		method  string
		params  any
		missing string // "" means allowed
	}{
		{"sampling declared", `{"sampling":{}}`, protocol.MethodSamplingCreateMessage, &protocol.CreateMessageParams{}, ""},
		{"sampling absent", `{}`, protocol.MethodSamplingCreateMessage, &protocol.CreateMessageParams{}, "sampling"},
		{"sampling tools absent", `{"sampling":{}}`, protocol.MethodSamplingCreateMessage, withTools, "sampling.tools"},
		{"sampling tools declared", `{"sampling":{"tools":{}}}`, protocol.MethodSamplingCreateMessage, withTools, ""},
		{"sampling tools in raw params", `{"sampling":{}}`, protocol.MethodSamplingCreateMessage, map[string]any{"toolChoice": map[string]any{}}, "sampling.tools"},
		{"elicitation empty means form", `{"elicitation":{}}`, protocol.MethodElicitationCreate, form, ""},
		{"elicitation form", `{"elicitation":{"form":{}}}`, protocol.MethodElicitationCreate, form, ""},
		{"elicitation url only", `{"elicitation":{"url":{}}}`, protocol.MethodElicitationCreate, form, "elicitation (form mode)"},
		{"url mode declared", `{"elicitation":{"url":{}}}`, protocol.MethodElicitationCreate, url, ""},
		{"url mode absent", `{"elicitation":{}}`, protocol.MethodElicitationCreate, url, "elicitation.url"},
		{"roots", `{"roots":{"listChanged":true}}`, protocol.MethodRootsList, nil, ""},
		{"roots absent", `{"sampling":{}}`, protocol.MethodRootsList, nil, "roots"},
		{"roots null", `{"roots":null}`, protocol.MethodRootsList, nil, "roots"},
		{"malformed capabilities", `[1]`, protocol.MethodRootsList, nil, "roots"},
		{"ping needs nothing", `{}`, protocol.MethodPing, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := client.CheckCapability(caps(tt.caps), tt.method, tt.params)
			if tt.missing == "" {
				if err != nil {
					t.Fatalf("CheckCapability = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, client.ErrUnsupported) || !strings.HasSuffix(err.Error(), "capability "+tt.missing) {
				t.Fatalf("CheckCapability = %v, want ErrUnsupported naming %s", err, tt.missing)
			}
		})
	}
}

func TestOutsideTheEngine(t *testing.T) {
	ctx := context.Background()
	if err := client.Log(ctx, protocol.LevelInfo, "", "x"); err != nil {
		t.Errorf("Log without a client = %v, want nil", err)
	}
	if err := client.Log(ctx, "loud", "", "x"); !errors.Is(err, client.ErrInvalidLevel) {
		t.Errorf("Log with a bad level = %v", err)
	}
	if _, err := client.CreateMessage(ctx, &protocol.CreateMessageParams{}); !errors.Is(err, client.ErrNoClient) {
		t.Errorf("CreateMessage = %v", err)
	}
	if err := client.CloseStream(ctx); !errors.Is(err, client.ErrNoClient) {
		t.Errorf("CloseStream = %v", err)
	}
	if err := client.CloseStream(client.WithPeer(ctx, &fakePeer{})); !errors.Is(err, client.ErrNoStream) {
		t.Errorf("CloseStream with a peer that cannot close its stream = %v", err)
	}
	if _, err := client.Elicit(ctx, &protocol.ElicitParams{}); !errors.Is(err, client.ErrNoClient) {
		t.Errorf("Elicit = %v", err)
	}
	if _, err := client.ListRoots(ctx); !errors.Is(err, client.ErrNoClient) {
		t.Errorf("ListRoots = %v", err)
	}
	if c := client.Capabilities(ctx); c.HasSampling() {
		t.Error("capabilities outside the engine")
	}
}

// fakePeer answers every request with a canned result.
type fakePeer struct {
	caps   *protocol.ClientCapabilities
	result string
	logged []string
}

func (p *fakePeer) ClientCapabilities() *protocol.ClientCapabilities { return p.caps }
func (p *fakePeer) ClientInfo() protocol.Implementation              { return protocol.Implementation{Name: "fake"} }
func (p *fakePeer) Log(level, logger string, data json.RawMessage) error {
	p.logged = append(p.logged, level+" "+logger+" "+string(data))
	return nil
}
func (p *fakePeer) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := client.CheckCapability(p.caps, method, params); err != nil {
		return nil, err
	}
	return json.RawMessage(p.result), nil
}

func TestWithPeer(t *testing.T) {
	p := &fakePeer{caps: caps(`{"sampling":{}}`), result: `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`}
	ctx := client.WithPeer(context.Background(), p)
	res, err := client.CreateMessage(ctx, &protocol.CreateMessageParams{MaxTokens: 1})
	if err != nil || res.Text() != "hi" || res.Model != "m" {
		t.Fatalf("CreateMessage = %+v, %v", res, err)
	}
	if err := client.Log(ctx, protocol.LevelWarning, "db", map[string]int{"n": 1}); err != nil || p.logged[0] != `warning db {"n":1}` {
		t.Errorf("Log: %v %v", err, p.logged)
	}
	p.result = `{"roots":"nope"}`
	if _, err := client.Elicit(ctx, &protocol.ElicitParams{}); !errors.Is(err, client.ErrUnsupported) {
		t.Errorf("Elicit without the capability = %v", err)
	}
	p.caps = caps(`{"roots":{}}`)
	if _, err := client.ListRoots(ctx); err == nil || !strings.Contains(err.Error(), "malformed result") {
		t.Errorf("ListRoots with a malformed result = %v", err)
	}
	if client.Info(ctx).Name != "fake" {
		t.Error("Info")
	}
}

func TestElicitChecksTheContent(t *testing.T) {
	p := &fakePeer{caps: caps(`{"elicitation":{}}`)}
	ctx := client.WithPeer(context.Background(), p)
	schema := json.RawMessage(`{"type":"object","properties":{"age":{"type":"integer","minimum":0}},"required":["age"]}`)
	tests := []struct {
		name    string
		result  string
		wantErr bool
	}{
		{"valid", `{"action":"accept","content":{"age":3}}`, false},
		{"invalid", `{"action":"accept","content":{"age":-1}}`, true},
		{"missing", `{"action":"accept"}`, true},
		{"declined", `{"action":"decline"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.result = tt.result
			res, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "age?", RequestedSchema: schema})
			if res == nil {
				t.Fatalf("no result (err %v)", err)
			}
			if got := errors.Is(err, client.ErrInvalidContent); got != tt.wantErr {
				t.Errorf("Elicit error = %v, want invalid content %v", err, tt.wantErr)
			}
		})
	}
	if _, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "m", RequestedSchema: json.RawMessage(`{"type":"nope"}`)}); err == nil {
		t.Error("an invalid requested schema was sent")
	}
}
