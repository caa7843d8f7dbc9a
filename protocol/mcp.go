package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// MCP method names as of 2025-11-25; those 2026-07-28 adds are beside [MethodServerDiscover].
const (
	// MethodInitialize is the client's first request; its params are
	// [InitializeParams] and its result [InitializeResult].
	MethodInitialize = "initialize"
	// MethodInitialized is the client's notification that ends the handshake.
	MethodInitialized = "notifications/initialized"
	// MethodPing is a request either side may send; the result is exactly {}.
	MethodPing = "ping"
	// MethodToolsList lists tools: [ListToolsParams] to [ListToolsResult].
	MethodToolsList = "tools/list"
	// MethodToolsCall calls a tool: [CallToolParams] to [CallToolResult].
	MethodToolsCall = "tools/call"
	// MethodCancelled is a notification that cancels a request in progress;
	// its params are [CancelledParams]. It gets no reply.
	MethodCancelled = "notifications/cancelled"
	// MethodProgress reports progress on a request that carried a progress
	// token; its params are [ProgressParams].
	MethodProgress = "notifications/progress"
	// MethodToolsListChanged tells the client to list tools again.
	MethodToolsListChanged = "notifications/tools/list_changed"
)

// Content block types of [Content].Type.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource"
)

// Implementation names a client or a server (clientInfo, serverInfo).
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
	// Icons are the implementation's icons (MCP 2025-11-25); see [Icon].
	Icons []Icon `json:"icons,omitempty"`
}

// InitializeParams are the params of [MethodInitialize]. Capabilities is
// kept raw: the engine only passes the client's capabilities along.
type InitializeParams struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`
	ClientInfo      Implementation  `json:"clientInfo"`
}

// ServerCapabilities are the capabilities a server declares in
// [InitializeResult]. A nil field is not declared; an empty struct
// declares the capability with no options.
type ServerCapabilities struct {
	Tools       *ListChangedCapability `json:"tools,omitempty"`
	Prompts     *ListChangedCapability `json:"prompts,omitempty"`
	Resources   *ResourcesCapability   `json:"resources,omitempty"`
	Logging     *struct{}              `json:"logging,omitempty"`
	Completions *struct{}              `json:"completions,omitempty"`
	// Experimental are non-standard capabilities, by name, each with its settings object:
	// where a server declares its extensions to a legacy session, whose revision has no
	// "extensions" member.
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	// Extensions are the extensions a modern server supports, by identifier, each with its
	// settings object (server/discover only).
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// ListChangedCapability is the capability of tools and prompts: ListChanged
// promises a list_changed notification when the list changes.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability is the resources capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// InitializeResult is the result of [MethodInitialize]. ProtocolVersion is
// the negotiated version (see [NegotiateVersion]).
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// ToolAnnotations are hints about a tool's behaviour. Clients treat them as
// untrusted; a nil hint is left out and means the spec's default.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Tool is one entry of [ListToolsResult]. InputSchema is required by the
// spec: a nil InputSchema encodes as {"type":"object","additionalProperties":false},
// the schema of a tool that takes no arguments, never as null.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	Meta         json.RawMessage  `json:"_meta,omitempty"`
}

// emptyInputSchema is the input schema of a tool without arguments.
var emptyInputSchema = json.RawMessage(`{"type":"object","additionalProperties":false}`)

// MarshalJSON encodes t, with the default schema for a nil InputSchema.
func (t Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	if len(t.InputSchema) == 0 {
		t.InputSchema = emptyInputSchema
	}
	return json.Marshal(plain(t))
}

// ListToolsParams are the params of [MethodToolsList]. Cursor is opaque.
type ListToolsParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// ListToolsResult is the result of [MethodToolsList]. Tools encodes as []
// when nil; NextCursor is set only when more tools follow.
type ListToolsResult struct {
	Tools      []Tool `json:"tools"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// MarshalJSON encodes r with Tools as [] when nil.
func (r ListToolsResult) MarshalJSON() ([]byte, error) {
	type plain ListToolsResult
	if r.Tools == nil {
		r.Tools = []Tool{}
	}
	return json.Marshal(plain(r))
}

// CallToolParams are the params of [MethodToolsCall]. Arguments is nil when
// the client sent none, which the spec says to treat as {}. Meta is the
// request's _meta; see [RequestMeta] and [ReadProgressToken].
type CallToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
	// InputParams carry a modern client's answers when it retries a call that was answered
	// input_required.
	InputParams
}

// Content is one content block (text, image, audio, resource_link,
// resource). Only the fields of its Type are set: Text for text; Data
// (base64) and MimeType for image and audio; URI, Name, and optionally
// Description and MimeType for resource_link; Resource for resource.
// Annotations and Meta may accompany any type.
//
// The fields a type requires are always encoded, even when empty, so
// TextContent("") is {"type":"text","text":""}; fields of other types are
// not encoded.
type Content struct {
	Type        string            `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        string            `json:"data,omitempty"` // base64, image/audio
	MimeType    string            `json:"mimeType,omitempty"`
	URI         string            `json:"uri,omitempty"`  // resource_link
	Name        string            `json:"name,omitempty"` // resource_link
	Description string            `json:"description,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"` // embedded resource
	Annotations json.RawMessage   `json:"annotations,omitempty"`
	Meta        json.RawMessage   `json:"_meta,omitempty"`
}

// TextContent returns a text content block.
func TextContent(text string) Content {
	return Content{Type: ContentText, Text: text}
}

// MarshalJSON encodes c with the fields of its type, in the schema's order,
// and leaves out fields that belong to other types. The fields a type
// requires are written even when empty. A block of an unknown type is
// written with every non-empty field.
func (c Content) MarshalJSON() ([]byte, error) {
	return c.appendJSON(make([]byte, 0, c.sizeHint()))
}

// appendJSON appends c as MarshalJSON encodes it. Tool results are the bulk
// of the server's output, so they are built by hand rather than by
// reflection.
func (c *Content) appendJSON(b []byte) ([]byte, error) {
	switch c.Type {
	case ContentText:
		b = appendField(b, '{', "type", c.Type)
		b = appendField(b, ',', "text", c.Text)
	case ContentImage, ContentAudio:
		b = appendField(b, '{', "type", c.Type)
		b = appendField(b, ',', "data", c.Data)
		b = appendField(b, ',', "mimeType", c.MimeType)
	case ContentResourceLink:
		b = appendField(b, '{', "type", c.Type)
		b = appendField(b, ',', "uri", c.URI)
		b = appendField(b, ',', "name", c.Name)
		b = appendOptField(b, "description", c.Description)
		b = appendOptField(b, "mimeType", c.MimeType)
	case ContentResource:
		b = appendField(b, '{', "type", c.Type)
		b = append(b, `,"resource":`...)
		if c.Resource == nil {
			b = append(b, "null"...)
		} else {
			b = c.Resource.appendJSON(b)
		}
	default:
		type plain Content
		raw, err := json.Marshal(plain(*c))
		return append(b, raw...), err
	}
	var err error
	if b, err = appendRawField(b, "annotations", c.Annotations); err != nil {
		return nil, err
	}
	if b, err = appendRawField(b, "_meta", c.Meta); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func (c *Content) sizeHint() int {
	n := 48 + len(c.Text) + len(c.Data) + len(c.MimeType) + len(c.URI) + len(c.Name) +
		len(c.Description) + len(c.Annotations) + len(c.Meta)
	if c.Resource != nil {
		n += 32 + len(c.Resource.URI) + len(c.Resource.MimeType) + len(c.Resource.Text) + len(c.Resource.Blob)
	}
	return n
}

// ResourceContents is the body of an embedded resource: text, or a base64
// blob. It encodes as blob contents when Blob is set, else as text contents
// with Text written even when empty.
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// MarshalJSON encodes rc as blob contents when Blob is set (Text is left
// out), else as text contents.
func (rc ResourceContents) MarshalJSON() ([]byte, error) {
	return rc.appendJSON(nil), nil
}

func (rc *ResourceContents) appendJSON(b []byte) []byte {
	b = appendField(b, '{', "uri", rc.URI)
	b = appendOptField(b, "mimeType", rc.MimeType)
	if rc.Blob != "" {
		b = appendField(b, ',', "blob", rc.Blob)
	} else {
		b = appendField(b, ',', "text", rc.Text)
	}
	return append(b, '}')
}

// CallToolResult is the result of [MethodToolsCall]. Content encodes as []
// when nil, never null. IsError marks a tool execution error, reported to
// the model rather than as a JSON-RPC error.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON encodes r with Content as [] when nil.
func (r CallToolResult) MarshalJSON() ([]byte, error) {
	return r.appendJSON(make([]byte, 0, r.sizeHint()))
}

// appendJSON appends r as MarshalJSON encodes it; [EncodeResult] calls it
// directly, writing the result into the envelope without a copy.
func (r *CallToolResult) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"content":[`...)
	var err error
	for i := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = r.Content[i].appendJSON(b); err != nil {
			return nil, err
		}
	}
	b = append(b, ']')
	if b, err = appendRawField(b, "structuredContent", r.StructuredContent); err != nil {
		return nil, err
	}
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	if b, err = appendRawField(b, "_meta", r.Meta); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func (r *CallToolResult) sizeHint() int {
	n := 32 + len(r.StructuredContent) + len(r.Meta)
	for i := range r.Content {
		n += r.Content[i].sizeHint()
	}
	return n
}

// appendField appends sep, the quoted name, ':' and s as a JSON string.
func appendField(b []byte, sep byte, name, s string) []byte {
	b = append(b, sep, '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, s)
}

// appendOptField appends ,"name":s unless s is empty (omitempty).
func appendOptField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendField(b, ',', name, s)
}

// appendRawField appends ,"name":raw unless raw is empty (omitempty). raw
// must be valid JSON; it is compacted onto one line.
func appendRawField(b []byte, name string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return b, nil
	}
	if !json.Valid(raw) {
		return nil, errors.New("protocol: " + name + ": invalid JSON")
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendCompact(b, raw), nil
}

// CancelledParams are the params of [MethodCancelled]. Decoding fails when
// requestId is present but neither a string nor an integer; RequestID is
// zero when it is absent.
type CancelledParams struct {
	RequestID ID     `json:"requestId"`
	Reason    string `json:"reason,omitempty"`
}

// ProgressParams are the params of [MethodProgress]. ProgressToken is the
// token of the request, echoed with its JSON type; Progress increases with
// each notification.
type ProgressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         *float64        `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// RequestMeta is the part of params._meta the engine reads.
type RequestMeta struct {
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
}

// ReadProgressToken returns params._meta.progressToken of a request, as an
// [ID]: a progress token follows the rules of ids (a string or an integer,
// echoed with its exact JSON text), and its [ID.Key] identifies it. It
// returns the zero ID and no error when params, _meta or the token is
// absent (or null) and for params given as an array, and an error when
// params is not a valid JSON object, _meta is not an object or the token is
// of another type.
func ReadProgressToken(params json.RawMessage) (ID, error) {
	switch p := trimSpace(params); {
	case len(p) == 0 || p[0] == '[' || isNull(p):
		return ID{}, nil // by-position params have no _meta
	case p[0] != '{' || !json.Valid(p):
		return ID{}, errors.New("params must be a JSON object")
	}
	var p struct {
		Meta *RequestMeta `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return ID{}, errors.New("_meta must be an object")
	}
	if p.Meta == nil || len(p.Meta.ProgressToken) == 0 || isNull(p.Meta.ProgressToken) {
		return ID{}, nil
	}
	tok, err := ParseID(p.Meta.ProgressToken)
	if err != nil {
		return ID{}, errors.New("progress token must be a string or an integer")
	}
	return tok, nil
}

// MCP methods and notifications beyond tools, as of 2025-11-25.
const (
	// MethodResourcesList lists resources: [ListResourcesParams] to [ListResourcesResult].
	MethodResourcesList = "resources/list"
	// MethodResourcesRead reads one resource: [ReadResourceParams] to [ReadResourceResult].
	MethodResourcesRead = "resources/read"
	// MethodResourcesTemplatesList lists resource templates: [ListResourceTemplatesParams] to
	// [ListResourceTemplatesResult].
	MethodResourcesTemplatesList = "resources/templates/list"
	// MethodResourcesSubscribe asks for [MethodResourcesUpdated] about one URI:
	// [SubscribeParams] to {}.
	MethodResourcesSubscribe = "resources/subscribe"
	// MethodResourcesUnsubscribe ends a subscription: [SubscribeParams] to {}.
	MethodResourcesUnsubscribe = "resources/unsubscribe"
	// MethodResourcesUpdated tells a subscribed client that a resource changed; its params are
	// [ResourceUpdatedParams].
	MethodResourcesUpdated = "notifications/resources/updated"
	// MethodResourcesListChanged tells the client to list resources (and templates) again.
	MethodResourcesListChanged = "notifications/resources/list_changed"

	// MethodPromptsList lists prompts: [ListPromptsParams] to [ListPromptsResult].
	MethodPromptsList = "prompts/list"
	// MethodPromptsGet renders one prompt: [GetPromptParams] to [GetPromptResult].
	MethodPromptsGet = "prompts/get"
	// MethodPromptsListChanged tells the client to list prompts again.
	MethodPromptsListChanged = "notifications/prompts/list_changed"

	// MethodLoggingSetLevel sets the lowest level of [MethodLogMessage] the client wants:
	// [SetLevelParams] to {}.
	MethodLoggingSetLevel = "logging/setLevel"
	// MethodLogMessage is a log message from the server; its params are [LogMessageParams].
	MethodLogMessage = "notifications/message"

	// MethodCompletionComplete asks for completions of a prompt or resource-template argument:
	// [CompleteParams] to [CompleteResult].
	MethodCompletionComplete = "completion/complete"

	// MethodSamplingCreateMessage is a server→client request for an LLM completion:
	// [CreateMessageParams] to [CreateMessageResult]. The client must declare sampling.
	MethodSamplingCreateMessage = "sampling/createMessage"
	// MethodElicitationCreate is a server→client request for input from the user:
	// [ElicitParams] to [ElicitResult]. The client must declare elicitation.
	MethodElicitationCreate = "elicitation/create"
	// MethodRootsList is a server→client request for the client's roots: no params, a
	// [ListRootsResult]. The client must declare roots.
	MethodRootsList = "roots/list"
	// MethodRootsListChanged is the client's notification that its roots changed.
	MethodRootsListChanged = "notifications/roots/list_changed"
)

// Log levels of [LogMessageParams] and [SetLevelParams], the eight of RFC 5424 from the least to
// the most severe.
const (
	LevelDebug     = "debug"
	LevelInfo      = "info"
	LevelNotice    = "notice"
	LevelWarning   = "warning"
	LevelError     = "error"
	LevelCritical  = "critical"
	LevelAlert     = "alert"
	LevelEmergency = "emergency"
)

// LogLevels lists the log levels from the least to the most severe. It must not be modified.
var LogLevels = []string{LevelDebug, LevelInfo, LevelNotice, LevelWarning, LevelError, LevelCritical, LevelAlert, LevelEmergency}

// LogSeverity returns the rank of a log level in [LogLevels] (debug is 0, emergency 7), and
// false for a string that is not a level.
func LogSeverity(level string) (int, bool) {
	for i, l := range LogLevels {
		if l == level {
			return i, true
		}
	}
	return 0, false
}

// ClientCapabilities are the capabilities a client declares in [InitializeParams]. A nil field
// is not declared. Each declared capability keeps its raw JSON object, so options the engine
// does not know are kept; the typed accessors read the ones it uses.
type ClientCapabilities struct {
	Roots        json.RawMessage `json:"roots,omitempty"`
	Sampling     json.RawMessage `json:"sampling,omitempty"`
	Elicitation  json.RawMessage `json:"elicitation,omitempty"`
	Experimental json.RawMessage `json:"experimental,omitempty"`
	Tasks        json.RawMessage `json:"tasks,omitempty"`
	// Extensions are the extensions a modern client declares, by identifier.
	Extensions json.RawMessage `json:"extensions,omitempty"`
}

// declared reports whether a capability is present as a JSON object.
func declared(raw json.RawMessage) bool {
	p := trimSpace(raw)
	return len(p) > 0 && p[0] == '{'
}

// hasOption reports whether the capability object raw has the member name as an object.
func hasOption(raw json.RawMessage, name string) bool {
	if !declared(raw) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	return declared(m[name])
}

// HasRoots reports whether the client declared roots.
func (c *ClientCapabilities) HasRoots() bool { return c != nil && declared(c.Roots) }

// HasSampling reports whether the client declared sampling.
func (c *ClientCapabilities) HasSampling() bool { return c != nil && declared(c.Sampling) }

// HasSamplingTools reports whether the client declared sampling.tools: only then may a
// sampling request carry tools or toolChoice.
func (c *ClientCapabilities) HasSamplingTools() bool {
	return c != nil && hasOption(c.Sampling, "tools")
}

// HasElicitationForm reports whether the client accepts form-mode elicitation: it declared
// elicitation.form, or elicitation as an empty object (which means form mode).
func (c *ClientCapabilities) HasElicitationForm() bool {
	if c == nil || !declared(c.Elicitation) {
		return false
	}
	if hasOption(c.Elicitation, "form") {
		return true
	}
	return !hasOption(c.Elicitation, "url")
}

// HasElicitationURL reports whether the client declared elicitation.url.
func (c *ClientCapabilities) HasElicitationURL() bool {
	return c != nil && hasOption(c.Elicitation, "url")
}

// ParseClientCapabilities reads the capabilities member of [InitializeParams]. Absent or
// malformed capabilities give an empty set: a client that cannot state a capability does not
// have it.
func ParseClientCapabilities(raw json.RawMessage) *ClientCapabilities {
	var c ClientCapabilities
	if declared(raw) && json.Unmarshal(raw, &c) != nil {
		return &ClientCapabilities{}
	}
	return &c
}

// Annotations are hints about a resource or a content block: its audience ("user",
// "assistant"), priority (0 to 1) and last modification time (ISO 8601).
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// Resource is one entry of [ListResourcesResult].
type Resource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	Icons       []Icon          `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceTemplate is one entry of [ListResourceTemplatesResult]; URITemplate is an RFC 6570
// URI template.
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	Icons       []Icon          `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ListResourcesParams are the params of [MethodResourcesList].
type ListResourcesParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// ListResourcesResult is the result of [MethodResourcesList]; Resources encodes as [] when nil.
type ListResourcesResult struct {
	Resources  []Resource `json:"resources"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// MarshalJSON encodes r with Resources as [] when nil.
func (r ListResourcesResult) MarshalJSON() ([]byte, error) {
	type plain ListResourcesResult
	if r.Resources == nil {
		r.Resources = []Resource{}
	}
	return json.Marshal(plain(r))
}

// ListResourceTemplatesParams are the params of [MethodResourcesTemplatesList].
type ListResourceTemplatesParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// ListResourceTemplatesResult is the result of [MethodResourcesTemplatesList];
// ResourceTemplates encodes as [] when nil.
type ListResourceTemplatesResult struct {
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string             `json:"nextCursor,omitempty"`
}

// MarshalJSON encodes r with ResourceTemplates as [] when nil.
func (r ListResourceTemplatesResult) MarshalJSON() ([]byte, error) {
	type plain ListResourceTemplatesResult
	if r.ResourceTemplates == nil {
		r.ResourceTemplates = []ResourceTemplate{}
	}
	return json.Marshal(plain(r))
}

// ReadResourceParams are the params of [MethodResourcesRead].
type ReadResourceParams struct {
	URI  string          `json:"uri"`
	Meta json.RawMessage `json:"_meta,omitempty"`
	InputParams
}

// ReadResourceResult is the result of [MethodResourcesRead]; Contents encodes as [] when nil.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	Meta     json.RawMessage    `json:"_meta,omitempty"`
}

// MarshalJSON encodes r with Contents as [] when nil.
func (r ReadResourceResult) MarshalJSON() ([]byte, error) {
	type plain ReadResourceResult
	if r.Contents == nil {
		r.Contents = []ResourceContents{}
	}
	return json.Marshal(plain(r))
}

// SubscribeParams are the params of [MethodResourcesSubscribe] and [MethodResourcesUnsubscribe].
type SubscribeParams struct {
	URI string `json:"uri"`
}

// ResourceUpdatedParams are the params of [MethodResourcesUpdated].
type ResourceUpdatedParams struct {
	URI string `json:"uri"`
}

// PromptArgument describes one argument of a [Prompt].
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Prompt is one entry of [ListPromptsResult].
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"`
	Meta        json.RawMessage  `json:"_meta,omitempty"`
}

// ListPromptsParams are the params of [MethodPromptsList].
type ListPromptsParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// ListPromptsResult is the result of [MethodPromptsList]; Prompts encodes as [] when nil.
type ListPromptsResult struct {
	Prompts    []Prompt `json:"prompts"`
	NextCursor string   `json:"nextCursor,omitempty"`
}

// MarshalJSON encodes r with Prompts as [] when nil.
func (r ListPromptsResult) MarshalJSON() ([]byte, error) {
	type plain ListPromptsResult
	if r.Prompts == nil {
		r.Prompts = []Prompt{}
	}
	return json.Marshal(plain(r))
}

// GetPromptParams are the params of [MethodPromptsGet]. Arguments is kept raw: every value must
// be a string, which the engine checks.
type GetPromptParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
	InputParams
}

// Roles of [PromptMessage] and [SamplingMessage].
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// PromptMessage is one message of [GetPromptResult].
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// GetPromptResult is the result of [MethodPromptsGet]; Messages encodes as [] when nil.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON encodes r with Messages as [] when nil.
func (r GetPromptResult) MarshalJSON() ([]byte, error) {
	type plain GetPromptResult
	if r.Messages == nil {
		r.Messages = []PromptMessage{}
	}
	return json.Marshal(plain(r))
}

// SetLevelParams are the params of [MethodLoggingSetLevel].
type SetLevelParams struct {
	Level string `json:"level"`
}

// LogMessageParams are the params of [MethodLogMessage]. Data is any JSON value.
type LogMessageParams struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// Reference types of [CompleteReference].
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

// CompleteReference says what [MethodCompletionComplete] completes: a prompt (Name) or a
// resource template (URI, the template itself or a resource URI).
type CompleteReference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed and its partial value.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext holds the values of the arguments already resolved.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteParams are the params of [MethodCompletionComplete].
type CompleteParams struct {
	Ref      CompleteReference `json:"ref"`
	Argument CompleteArgument  `json:"argument"`
	Context  *CompleteContext  `json:"context,omitempty"`
}

// MaxCompletionValues is the most values one [CompletionValues] may hold.
const MaxCompletionValues = 100

// CompletionValues are the suggestions of a [CompleteResult]; Values encodes as [] when nil.
type CompletionValues struct {
	Values  []string `json:"values"`
	Total   *int     `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// MarshalJSON encodes v with Values as [] when nil.
func (v CompletionValues) MarshalJSON() ([]byte, error) {
	type plain CompletionValues
	if v.Values == nil {
		v.Values = []string{}
	}
	return json.Marshal(plain(v))
}

// CompleteResult is the result of [MethodCompletionComplete].
type CompleteResult struct {
	Completion CompletionValues `json:"completion"`
}

// SamplingMessage is one message of a sampling conversation. Content is a single content block
// (text, image or audio).
type SamplingMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// ModelHint names a model family the server would like; ModelPreferences are soft hints.
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// ModelPreferences are the server's soft preferences for the client's model choice; each
// priority is between 0 and 1.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitempty"`
	SpeedPriority        *float64    `json:"speedPriority,omitempty"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitempty"`
}

// CreateMessageParams are the params of [MethodSamplingCreateMessage]. Tools and ToolChoice may
// be set only when the client declared sampling.tools.
type CreateMessageParams struct {
	Messages         []SamplingMessage `json:"messages"`
	ModelPreferences *ModelPreferences `json:"modelPreferences,omitempty"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	IncludeContext   string            `json:"includeContext,omitempty"`
	Temperature      *float64          `json:"temperature,omitempty"`
	MaxTokens        int               `json:"maxTokens"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	Metadata         json.RawMessage   `json:"metadata,omitempty"`
	Tools            json.RawMessage   `json:"tools,omitempty"`
	ToolChoice       json.RawMessage   `json:"toolChoice,omitempty"`
	Meta             json.RawMessage   `json:"_meta,omitempty"`
}

// CreateMessageResult is the client's answer to [MethodSamplingCreateMessage]. Content is kept
// raw: one content block, or an array of them when the client used tools.
type CreateMessageResult struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// Text returns the text of the result's content when it is one text block, else "".
func (r *CreateMessageResult) Text() string {
	var c struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if r == nil || json.Unmarshal(r.Content, &c) != nil || c.Type != ContentText {
		return ""
	}
	return c.Text
}

// Elicitation modes of [ElicitParams].
const (
	ElicitModeForm = "form"
	ElicitModeURL  = "url"
)

// ElicitParams are the params of [MethodElicitationCreate]. Form mode (Mode "" or "form") sends
// Message and RequestedSchema, a flat object schema of primitive properties; URL mode sends
// Message, URL and ElicitationID.
type ElicitParams struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
	Meta            json.RawMessage `json:"_meta,omitempty"`
}

// Elicitation actions of [ElicitResult].
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResult is the client's answer to [MethodElicitationCreate]. Content, set when Action is
// "accept" in form mode, is an object of the requested properties.
type ElicitResult struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
	Meta    json.RawMessage `json:"_meta,omitempty"`
}

// Root is one root of [ListRootsResult]: a file:// URI and an optional name.
type Root struct {
	URI  string          `json:"uri"`
	Name string          `json:"name,omitempty"`
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// ListRootsResult is the client's answer to [MethodRootsList].
type ListRootsResult struct {
	Roots []Root          `json:"roots"`
	Meta  json.RawMessage `json:"_meta,omitempty"`
}

// MethodElicitationComplete tells the client that a URL-mode elicitation finished out of band;
// its params are [ElicitationCompleteParams].
const MethodElicitationComplete = "notifications/elicitation/complete"

// ElicitationCompleteParams are the params of [MethodElicitationComplete].
type ElicitationCompleteParams struct {
	ElicitationID string `json:"elicitationId"`
}

// MetaProgressToken returns the progressToken member of a request's _meta (meta, as a tool
// call carries it): its JSON text, or nil when meta is absent, null, not a JSON object, or has
// no token. It answers as decoding meta into a [RequestMeta] with encoding/json does (which
// also matches member names that only differ in case, the last one winning), without decoding
// the rest of _meta, which in the modern era holds the client's whole envelope.
func MetaProgressToken(meta json.RawMessage) json.RawMessage {
	p := trimSpace(meta)
	if !mayNameProgressToken(p) {
		// No member name of p can be progressToken for encoding/json, valid JSON or not:
		// whatever it is, decoding it leaves the token unset (or fails).
		return nil
	}
	if len(p) == 0 || p[0] != '{' || !json.Valid(p) {
		return slowProgressToken(meta)
	}
	var tok []byte
	plain := true
	eachMember(p, func(key, val []byte) {
		k := key[1 : len(key)-1]
		switch {
		case string(k) == "progressToken":
			tok = val
		case len(k) == len("progressToken") && strings.EqualFold(string(k), "progressToken"),
			bytes.IndexByte(key, '\\') >= 0, hasNonASCII(k):
			plain = false // a name encoding/json may fold onto the field: let it decide
		}
	})
	if !plain {
		return slowProgressToken(meta)
	}
	if len(tok) == 0 {
		return nil
	}
	return tok
}

func slowProgressToken(meta json.RawMessage) json.RawMessage {
	var m RequestMeta
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	return m.ProgressToken
}

// mayNameProgressToken reports whether b holds "progresstoken" in any ASCII case, an escape or
// a byte that is not ASCII: the ways a member name can match the progressToken field.
func mayNameProgressToken(b []byte) bool {
	const name = "progresstoken"
	for i, c := range b {
		switch {
		case c == '\\' || c >= 0x80:
			return true
		case c|0x20 == 'p' && i+len(name) <= len(b) && foldsTo(b[i:i+len(name)], name):
			return true
		}
	}
	return false
}

// foldsTo reports whether b, lowered in ASCII, is lower (which is in lower case).
func foldsTo(b []byte, lower string) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}
