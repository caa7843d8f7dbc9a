package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolgrain/toolgrain/bench/peers/internal/demo"
)

// Protocol revisions.
const (
	modernVersion = "2026-07-28"
	latestLegacy  = "2025-11-25"
)

// legacyVersions are the revisions initialize negotiates, newest first.
var legacyVersions = []string{latestLegacy, "2025-06-18", "2025-03-26"}

// JSON-RPC and MCP error codes.
const (
	codeParse              = -32700
	codeInvalidRequest     = -32600
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeInternal           = -32603
	codeHeaderMismatch     = -32020
	codeUnsupportedVersion = -32022
)

var implementation = json.RawMessage(`{"name":"stdlib-floor","version":"1.0.0"}`)

// message is a received JSON-RPC message, params included: one decoding
// pass reads all the server needs but a tool's arguments.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  params          `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// meta is the part of params._meta the server reads.
type meta struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Version       *string         `json:"io.modelcontextprotocol/protocolVersion"`
	Capabilities  json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
}

// params is every member of a message's params the server reads:
// tools/call's name and arguments, initialize's protocolVersion,
// notifications/cancelled's requestId, and _meta.
type params struct {
	Name            string          `json:"name"`
	Arguments       json.RawMessage `json:"arguments"`
	ProtocolVersion string          `json:"protocolVersion"`
	RequestID       json.RawMessage `json:"requestId"`
	Meta            meta            `json:"_meta"`
}

// arguments are the demonstration tools' arguments, all of them: decoded
// in one pass, on the reading goroutine, before a call's goroutine starts
// (a fresh goroutine that decodes JSON grows its stack on every call).
type arguments struct {
	Text *string      `json:"text"`
	Name *string      `json:"name"`
	Ms   *json.Number `json:"ms"`
	Mode *string      `json:"mode"`
}

// request is a decoded request.
type request struct {
	id     json.RawMessage
	method string
	params params
	modern bool
	// For tools/call: the decoded arguments, or why they could not be.
	args    arguments
	argsErr error
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// errorResponse encodes a JSON-RPC error; a nil id is written as null.
func errorResponse(id json.RawMessage, code int, msg string, data any) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg, Data: data}})
	return b
}

func resultResponse(id json.RawMessage, result any) []byte {
	b, err := json.Marshal(response{JSONRPC: "2.0", ID: id, Result: result})
	if err != nil {
		return errorResponse(id, codeInternal, "Internal error", nil)
	}
	return b
}

// parse decodes one message. A problem that deserves an answer comes back as
// the error response to send; a response from the client comes back as a
// message without a method (it is ignored); a notification whose params
// cannot be read comes back as neither.
func parse(data []byte) (m *message, errReply []byte) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		return nil, errorResponse(nil, codeInvalidRequest, "Invalid request: batches are not supported", nil)
	}
	m = new(message)
	if err := json.Unmarshal(data, m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) || m.Method == "" {
			return nil, errorResponse(nil, codeParse, "Parse error", nil)
		}
		if m.ID == nil {
			return nil, nil // a notification with odd params: nothing to answer
		}
		return nil, errorResponse(m.ID, codeInvalidParams, "Invalid params: "+err.Error(), nil)
	}
	switch {
	case m.JSONRPC != "2.0":
		return nil, errorResponse(idOrNull(m.ID), codeInvalidRequest, `Invalid request: jsonrpc must be "2.0"`, nil)
	case m.ID != nil && string(m.ID) == "null":
		return nil, errorResponse(nil, codeInvalidRequest, "Invalid request: the id must not be null", nil)
	case m.Method == "" && m.ID != nil && (m.Result != nil || m.Error != nil):
		return m, nil // a response: this server sends no requests
	case m.Method == "":
		return nil, errorResponse(idOrNull(m.ID), codeInvalidRequest, "Invalid request: no method", nil)
	}
	return m, nil
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return json.RawMessage("null")
	}
	return id
}

// newRequest checks a request's envelope and decodes a tool's arguments. A
// modern request with a broken envelope gets the error response to send.
func newRequest(m *message) (*request, []byte) {
	r := &request{id: m.ID, method: m.Method, params: m.Params}
	if r.method == "tools/call" && len(r.params.Arguments) > 0 {
		r.argsErr = json.Unmarshal(r.params.Arguments, &r.args)
	}
	if r.params.Meta.Version == nil {
		return r, nil
	}
	r.modern = true
	switch v := *r.params.Meta.Version; {
	case len(r.params.Meta.Capabilities) == 0 || r.params.Meta.Capabilities[0] != '{':
		return nil, errorResponse(m.ID, codeInvalidParams, "Invalid params: params._meta.io.modelcontextprotocol/clientCapabilities must be an object", nil)
	case v != modernVersion:
		return nil, errorResponse(m.ID, codeUnsupportedVersion, "Unsupported protocol version: "+v,
			map[string]any{"supported": []string{modernVersion}, "requested": v})
	}
	return r, nil
}

// server answers requests; the transports own connections and sessions.
type server struct{}

// modernResult adds what a modern result carries to the members of a result
// object.
func modernResult(req *request, members map[string]any) map[string]any {
	if req.modern {
		members["resultType"] = "complete"
		members["_meta"] = map[string]any{"io.modelcontextprotocol/serverInfo": implementation}
	}
	return members
}

// handle answers one request. notify sends a notification on the request's
// own stream (progress). It returns nil when the request was cancelled (ctx
// done): a cancelled request gets no answer.
func (s *server) handle(ctx context.Context, req *request, notify func([]byte)) []byte {
	switch {
	case req.method == "initialize" && !req.modern:
		v := latestLegacy
		if slices.Contains(legacyVersions, req.params.ProtocolVersion) {
			v = req.params.ProtocolVersion
		}
		return resultResponse(req.id, map[string]any{
			"protocolVersion": v, "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": implementation,
		})
	case req.method == "ping" && !req.modern:
		return resultResponse(req.id, struct{}{})
	case req.method == "server/discover" && req.modern:
		return resultResponse(req.id, modernResult(req, map[string]any{
			"supportedVersions": append([]string{modernVersion}, legacyVersions...),
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"ttlMs":             0, "cacheScope": "public",
		}))
	case req.method == "tools/list":
		res := map[string]any{"tools": toolList}
		if req.modern {
			res["ttlMs"], res["cacheScope"] = 0, "public"
		}
		return resultResponse(req.id, modernResult(req, res))
	case req.method == "tools/call":
		return s.call(ctx, req, notify)
	}
	return errorResponse(req.id, codeMethodNotFound, "Method not found: "+req.method, nil)
}

// toolResult is a tools/call result; ResultType and Meta are set in the
// modern era only.
type toolResult struct {
	ResultType        string         `json:"resultType,omitempty"`
	Content           []content      `json:"content"`
	StructuredContent any            `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitempty"`
	Meta              *serverInfoTag `json:"_meta,omitempty"`
}

// serverInfoTag is the _meta of a modern result: the server's identity.
type serverInfoTag struct {
	ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
}

var modernTag = &serverInfoTag{ServerInfo: implementation}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func text(s string, isError bool) toolResult {
	return toolResult{Content: []content{{Type: "text", Text: s}}, IsError: isError}
}

// genericFailure is what a client sees of a tool's internal failure.
const genericFailure = "Tool execution failed"

// call runs a tool. An error or a panic in a tool becomes the generic
// failure; its detail stays on the server.
func (s *server) call(ctx context.Context, req *request, notify func([]byte)) (reply []byte) {
	if req.params.Name == "" {
		return errorResponse(req.id, codeInvalidParams, "Invalid params: tools/call needs a name", nil)
	}
	run, ok := tools[req.params.Name]
	if !ok {
		return errorResponse(req.id, codeInvalidParams, fmt.Sprintf("Invalid params: unknown tool %q", req.params.Name), nil)
	}
	defer func() {
		if recover() != nil {
			reply = s.answer(req, text(genericFailure, true))
		}
	}()
	if req.argsErr != nil {
		return s.answer(req, text("invalid arguments: "+req.argsErr.Error(), true))
	}
	res, err := run(ctx, toolCall{args: &req.args, req: req, notify: notify})
	if ctx.Err() != nil {
		return nil // cancelled: no answer
	}
	if err != nil {
		res = text(genericFailure, true)
	}
	return s.answer(req, res)
}

func (s *server) answer(req *request, res toolResult) []byte {
	if req.modern {
		res.ResultType, res.Meta = "complete", modernTag
	}
	return resultResponse(req.id, res)
}

// toolCall is what a tool gets.
type toolCall struct {
	args   *arguments
	req    *request
	notify func([]byte)
}

var tools = map[string]func(context.Context, toolCall) (toolResult, error){
	"echo":  echo,
	"greet": greet,
	"sleep": sleep,
	"spin":  spin,
	"fail":  fail,
}

// toolList is the tools/list result's tools.
var toolList = json.RawMessage(`[` +
	`{"name":"echo","description":"Returns its text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},` +
	`{"name":"greet","description":"Greets someone by name.","inputSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]},"outputSchema":{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"]}},` +
	`{"name":"sleep","description":"Waits ms milliseconds.","inputSchema":{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"]}},` +
	`{"name":"spin","description":"Keeps a CPU busy for ms milliseconds.","inputSchema":{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"]}},` +
	`{"name":"fail","description":"Fails in the chosen way.","inputSchema":{"type":"object","properties":{"mode":{"type":"string","enum":["result","error","panic","bad-output","provider"]}},"required":["mode"]},"outputSchema":` + demo.FailOutputSchema + `}` +
	`]`)

func echo(_ context.Context, c toolCall) (toolResult, error) {
	if c.args.Text == nil {
		return text("invalid arguments: text must be a string", true), nil
	}
	return text(*c.args.Text, false), nil
}

func greet(_ context.Context, c toolCall) (toolResult, error) {
	if c.args.Name == nil {
		return text("invalid arguments: name must be a string", true), nil
	}
	g := demo.Greeting(*c.args.Name)
	res := text(g, false)
	res.StructuredContent = map[string]string{"greeting": g}
	return res, nil
}

func sleep(ctx context.Context, c toolCall) (toolResult, error) {
	var (
		ms  int64
		err error
	)
	if c.args.Ms != nil {
		ms, err = c.args.Ms.Int64()
	}
	if err != nil || c.args.Ms == nil || ms < 0 || ms > demo.MaxSleepMs {
		return text(fmt.Sprintf("invalid arguments: ms must be an integer from 0 to %d", demo.MaxSleepMs), true), nil
	}
	timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer timer.Stop()
	// Progress once a second, only when the client asked for it.
	var tick <-chan time.Time
	token := c.req.params.Meta.ProgressToken
	if token != nil && c.notify != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return toolResult{}, ctx.Err()
		case <-timer.C:
			return text(demo.SleptText, false), nil
		case <-tick:
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{
				"progressToken": token, "progress": time.Since(start).Milliseconds(), "total": ms,
			}})
			c.notify(b)
		}
	}
}

func spin(ctx context.Context, c toolCall) (toolResult, error) {
	var (
		ms  int64
		err error
	)
	if c.args.Ms != nil {
		ms, err = c.args.Ms.Int64()
	}
	if err != nil || c.args.Ms == nil || ms < 0 || ms > demo.MaxSleepMs {
		return text(fmt.Sprintf("invalid arguments: ms must be an integer from 0 to %d", demo.MaxSleepMs), true), nil
	}
	if err := demo.Spin(ctx, time.Duration(ms)*time.Millisecond); err != nil {
		return toolResult{}, err
	}
	return text(demo.SpunText, false), nil
}

func fail(ctx context.Context, c toolCall) (toolResult, error) {
	mode := ""
	if c.args.Mode != nil {
		mode = *c.args.Mode
	}
	switch mode {
	case "result":
		return text(demo.PublicFailure, true), nil
	case "error":
		return toolResult{}, demo.ErrInternal
	case "panic":
		panic(demo.PanicValue)
	case "bad-output":
		// No output validation: the invalid output goes out as it is.
		res := text("bad output", false)
		res.StructuredContent = demo.BadOutput()
		return res, nil
	case "provider":
		return toolResult{}, demo.Provider(ctx)
	}
	return text(fmt.Sprintf("invalid arguments: mode must be one of %q", demo.Modes), true), nil
}
