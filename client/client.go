// Package client is a handler's view of the client of the call it serves, reached through the
// call's context: send it log messages ([Log]), ask it for an LLM completion ([CreateMessage]),
// ask its user for input ([Elicit]), list its roots ([ListRoots]), read what it declared
// ([Capabilities], [Info]) and close the connection that carries the call's messages
// ([CloseStream]).
//
// The engine puts a [Peer], the call's client, in the context of every tools/call,
// resources/read, prompts/get and completion/complete handler it runs. Over stdio and in memory
// the call's client is the one connection the call came on; over Streamable HTTP it is the
// legacy session (MCP 2025-11-25 and earlier) the request belongs to, or, for a stateless
// request (MCP 2026-07-28), the request itself. Outside the engine (a handler
// called directly in a test) there is no Peer and every function returns [ErrNoClient], except
// [Log], which does nothing.
//
// Everything a handler sends this way belongs to its call: over stdio it shares the connection's
// output, over Streamable HTTP it travels on the calling request's own stream, before the
// response. Nothing is ever sent for a call after its response or its cancellation: a log
// message is then dropped with [ErrCallFinished], and a request to the client fails with it.
//
// Requests to the client ([CreateMessage], [Elicit], [ListRoots]) use only the capabilities the
// client declared (at initialize in a legacy session, in the request in the modern era);
// otherwise they fail at once with an error wrapping [ErrUnsupported] and nothing is sent. In
// the modern era each is an input_required round, as [Input] says. In a legacy session they
// block until the client answers or ctx ends; when
// ctx ends first (the call was cancelled, timed out or its connection closed) the engine tells
// the client with notifications/cancelled and the function returns the context's cause. A
// client that answers with a JSON-RPC error gives a [*protocol.WireError].
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgrain/toolgrain/protocol"
)

// Errors of the package's functions.
var (
	// ErrNoClient is returned when ctx carries no [Peer]: the handler was not called by the
	// engine.
	ErrNoClient = errors.New("client: no client in the context")
	// ErrUnsupported is wrapped by the error returned when the client did not declare the
	// capability a request needs (sampling, sampling.tools, elicitation form or url mode, roots),
	// and when the revision of the client's session cannot carry the request (audio in a
	// sampling message of a 2024-11-05 session); nothing is sent then.
	ErrUnsupported = errors.New("client: capability not declared by the client")
	// ErrCallFinished is returned when the call is over (answered, cancelled or its connection
	// closed): nothing more may be sent for it.
	ErrCallFinished = errors.New("client: call is over")
	// ErrRateLimited is returned by [Log] for a message dropped because the call sent too many
	// too fast.
	ErrRateLimited = errors.New("client: log message dropped by the rate limit")
	// ErrInvalidLevel is returned by [Log] for a level that is not one of [protocol.LogLevels].
	ErrInvalidLevel = errors.New("client: invalid log level")
	// ErrNoStream is returned for a request to the client when the call's transport cannot carry
	// it: an HTTP client whose request accepts a JSON answer only, not an SSE stream.
	ErrNoStream = errors.New("client: the call's transport cannot carry requests to the client")
	// ErrInvalidContent is wrapped by the error [Elicit] returns, together with the result, when
	// the client accepted a form whose content does not conform to the requested schema.
	ErrInvalidContent = errors.New("client: elicited content does not match the requested schema")
	// ErrConnectionClosed is returned for a request to the client ([CreateMessage], [Elicit],
	// [ListRoots]) when the connection it went out on closes before the client answered.
	ErrConnectionClosed = errors.New("client: connection closed before the client answered")
)

// Peer is the engine's side of one call: the client it came from. Handlers use the package's
// functions rather than a Peer directly. Implementations are safe for concurrent use by the
// goroutines of one call.
type Peer interface {
	// ClientCapabilities returns what the client declared at initialize. It must not be
	// modified.
	ClientCapabilities() *protocol.ClientCapabilities
	// ClientInfo returns the client's clientInfo.
	ClientInfo() protocol.Implementation
	// Log sends a notifications/message for the call, unless level is below the log level of
	// the call's client (then it sends nothing and returns nil). level is valid and data is
	// JSON.
	Log(level, logger string, data json.RawMessage) error
	// Request sends a request to the client on the call's behalf and waits for its answer or
	// for ctx to end. It enforces [CheckCapability] itself.
	Request(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// StreamCloser is implemented by a [Peer] whose transport can close the connection carrying the
// call's messages without ending the call; see [CloseStream].
type StreamCloser interface {
	CloseStream() error
}

// CloseStream asks the transport to close the connection that carries the call's messages now,
// without ending the call: over Streamable HTTP, the POST's SSE stream is ended after what was
// sent so far (starting it, with its priming event, if the answer was not yet a stream), and the
// client resumes it with GET and Last-Event-ID to receive the rest, the response included. A
// server uses it to shed long-held connections (SSE polling). It returns [ErrNoStream] when the
// transport cannot do it (stdio; an HTTP client that takes a JSON answer only),
// [ErrCallFinished] once the call is over, and [ErrNoClient] outside the engine.
func CloseStream(ctx context.Context) error {
	p, ok := PeerFrom(ctx)
	if !ok {
		return ErrNoClient
	}
	c, ok := p.(StreamCloser)
	if !ok {
		return ErrNoStream
	}
	return c.CloseStream()
}

type peerKey struct{}

// WithPeer returns a context carrying p. The engine calls it once per handler run.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom returns the [Peer] of ctx, if any.
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok && p != nil
}

// Capabilities returns the capabilities the client of the call declared, or an empty set
// outside the engine.
func Capabilities(ctx context.Context) *protocol.ClientCapabilities {
	if p, ok := PeerFrom(ctx); ok {
		return p.ClientCapabilities()
	}
	return &protocol.ClientCapabilities{}
}

// Info returns the clientInfo of the call's client, or the zero value outside the engine.
func Info(ctx context.Context) protocol.Implementation {
	if p, ok := PeerFrom(ctx); ok {
		return p.ClientInfo()
	}
	return protocol.Implementation{}
}

// Log sends a log message (notifications/message) to the client for the current call. level is
// one of [protocol.LogLevels]; logger names the source and may be empty; data is any value that
// encodes to JSON, typically a string or an object.
//
// The message is sent only when level is at or above the level the client set with
// logging/setLevel (before that, the server's default level applies); otherwise Log sends
// nothing and returns nil. Outside the engine it does nothing and returns nil, so handlers may
// call it unconditionally. It returns [ErrCallFinished] once the call is over, [ErrRateLimited]
// when the call logs faster than the engine allows, [ErrInvalidLevel] for an unknown level.
//
// Log messages are public: they must not contain credentials, personal data or internal
// details.
func Log(ctx context.Context, level, logger string, data any) error {
	if _, ok := protocol.LogSeverity(level); !ok {
		return fmt.Errorf("%w %q", ErrInvalidLevel, level)
	}
	p, ok := PeerFrom(ctx)
	if !ok {
		return nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("client: log data: %w", err)
	}
	return p.Log(level, logger, raw)
}

// CreateMessage asks the client to sample its LLM (sampling/createMessage) and returns the
// result. The client must have declared sampling, and sampling.tools when params carries tools
// or toolChoice; a session whose revision has no way to carry a message's content (audio before
// MCP 2025-03-26) refuses the request with an error wrapping [ErrUnsupported], nothing sent. See
// the package doc for cancellation and errors.
func CreateMessage(ctx context.Context, params *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
	if params == nil {
		return nil, errors.New("client: nil CreateMessageParams")
	}
	var res protocol.CreateMessageResult
	if err := request(ctx, protocol.MethodSamplingCreateMessage, params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Elicit asks the client to collect input from its user (elicitation/create) and returns the
// answer. Form mode (params.Mode "" or "form") needs the client's elicitation capability (form),
// URL mode its elicitation.url; see the package doc for cancellation and errors. Form mode must
// never ask for passwords, keys or other secrets.
//
// An accepted form's content is checked against params.RequestedSchema (JSON Schema 2020-12):
// content that does not conform is returned together with an error wrapping
// [ErrInvalidContent] that says why, for the handler to decide. A requested schema that cannot
// be compiled is an error before anything is sent.
func Elicit(ctx context.Context, params *protocol.ElicitParams) (*protocol.ElicitResult, error) {
	if params == nil {
		return nil, errors.New("client: nil ElicitParams")
	}
	var check *jsonschema.Schema
	if len(params.RequestedSchema) > 0 && params.Mode != protocol.ElicitModeURL {
		var err error
		if check, err = compileRequested(params.RequestedSchema); err != nil {
			return nil, fmt.Errorf("client: requested schema: %w", err)
		}
	}
	var res protocol.ElicitResult
	if err := request(ctx, protocol.MethodElicitationCreate, params, &res); err != nil {
		return nil, err
	}
	if check != nil && res.Action == protocol.ElicitAccept {
		if err := validateContent(check, res.Content); err != nil {
			return &res, fmt.Errorf("%w: %v", ErrInvalidContent, err)
		}
	}
	return &res, nil
}

// compileRequested compiles a requested schema on its own, without loading anything.
func compileRequested(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const url = "mem:///requested.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// noLoader refuses every external reference: a requested schema is self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %q is not loaded", url)
}

func validateContent(s *jsonschema.Schema, content json.RawMessage) error {
	if len(content) == 0 {
		content = json.RawMessage(`{}`)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(content))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// ListRoots asks the client for its roots (roots/list). The client must have declared roots;
// see the package doc for cancellation and errors.
func ListRoots(ctx context.Context) (*protocol.ListRootsResult, error) {
	var res protocol.ListRootsResult
	if err := request(ctx, protocol.MethodRootsList, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func request(ctx context.Context, method string, params, out any) error {
	p, ok := PeerFrom(ctx)
	if !ok {
		return ErrNoClient
	}
	raw, err := p.Request(ctx, method, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("client: %s: malformed result from the client: %w", method, err)
	}
	return nil
}

// CheckCapability returns nil when a request of method with params may be sent to a client that
// declared caps, and otherwise an error wrapping [ErrUnsupported] that names what is missing.
// Methods other than sampling, elicitation and roots need no capability.
func CheckCapability(caps *protocol.ClientCapabilities, method string, params any) error {
	missing := ""
	switch method {
	case protocol.MethodSamplingCreateMessage:
		switch {
		case !caps.HasSampling():
			missing = "sampling"
		case usesSamplingTools(params) && !caps.HasSamplingTools():
			missing = "sampling.tools"
		}
	case protocol.MethodElicitationCreate:
		switch mode := elicitMode(params); {
		case mode == protocol.ElicitModeURL:
			if !caps.HasElicitationURL() {
				missing = "elicitation.url"
			}
		case mode == "" || mode == protocol.ElicitModeForm:
			if !caps.HasElicitationForm() {
				missing = "elicitation (form mode)"
			}
		default:
			return fmt.Errorf("client: unknown elicitation mode %q", mode)
		}
	case protocol.MethodRootsList:
		if !caps.HasRoots() {
			missing = "roots"
		}
	}
	if missing != "" {
		return &CapabilityError{Method: method, Missing: missing}
	}
	return nil
}

// CapabilityError is the error of a request the client cannot be sent because it did not
// declare the capability it needs. It wraps [ErrUnsupported].
//
// A handler that cannot do without the capability returns it (wrapped or not): in the modern
// era (MCP 2026-07-28) the engine then answers the request with the JSON-RPC error -32021,
// whose data names the capability ([CapabilityError.Required]), and reports nothing. In a
// legacy session, where that error does not exist, the call fails as any other handler error
// does.
type CapabilityError struct {
	// Method is the request that could not be sent.
	Method string
	// Missing names the capability: "sampling", "sampling.tools", "elicitation (form mode)",
	// "elicitation.url" or "roots".
	Missing string
}

// Error says which request needs which capability.
func (e *CapabilityError) Error() string {
	return fmt.Sprintf("%v: %s needs the client capability %s", ErrUnsupported, e.Method, e.Missing)
}

// Unwrap returns [ErrUnsupported].
func (e *CapabilityError) Unwrap() error { return ErrUnsupported }

// Required returns the missing capability as a ClientCapabilities object, for example
// {"sampling":{}}.
func (e *CapabilityError) Required() json.RawMessage {
	switch e.Missing {
	case "sampling":
		return json.RawMessage(`{"sampling":{}}`)
	case "sampling.tools":
		return json.RawMessage(`{"sampling":{"tools":{}}}`)
	case "elicitation.url":
		return json.RawMessage(`{"elicitation":{"url":{}}}`)
	case "roots":
		return json.RawMessage(`{"roots":{}}`)
	}
	return json.RawMessage(`{"elicitation":{}}`)
}

func usesSamplingTools(params any) bool {
	switch p := params.(type) {
	case *protocol.CreateMessageParams:
		return p != nil && (len(p.Tools) > 0 || len(p.ToolChoice) > 0)
	case protocol.CreateMessageParams:
		return len(p.Tools) > 0 || len(p.ToolChoice) > 0
	}
	return rawHas(params, "tools") || rawHas(params, "toolChoice")
}

func elicitMode(params any) string {
	switch p := params.(type) {
	case *protocol.ElicitParams:
		if p != nil {
			return p.Mode
		}
		return ""
	case protocol.ElicitParams:
		return p.Mode
	}
	var m struct {
		Mode string `json:"mode"`
	}
	if raw, err := json.Marshal(params); err == nil {
		_ = json.Unmarshal(raw, &m)
	}
	return m.Mode
}

// rawHas reports whether params, encoded, is an object with the member name.
func rawHas(params any, name string) bool {
	raw, err := json.Marshal(params)
	if err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m[name]
	return ok
}
