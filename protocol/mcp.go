package protocol

import (
	"encoding/json"
	"errors"
)

// MCP method names (2025-11-25).
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
