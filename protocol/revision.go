package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Revision is an MCP revision as an ordered value: what a message looks like depends on the
// revision of the session (or the modern request) it belongs to, and each revision is a set of
// features ([Feature]) that [Revision.Has] tells. The zero value is no known revision.
//
// A legacy session is answered in the shape of its own revision: [Revision.Shape] leaves out of
// a result the members that revision does not define and converts or leaves out the content it
// does not know, and [Revision.ShapeRequest] does the same for the requests the server sends
// the client. The shape of each revision, and where it comes from, is in docs/eras.md.
type Revision uint8

// The revisions the engine serves, oldest first.
const (
	Revision20241105 Revision = iota + 1
	Revision20250326
	Revision20250618
	Revision20251125
	Revision20260728
)

// revisionNames are the revisions' versions, by Revision.
var revisionNames = [...]string{"", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

// RevisionOf returns the revision of a protocol version, and 0 for a version the engine does not
// serve.
func RevisionOf(version string) Revision {
	// The newest first: they are what clients ask for.
	for r := Revision20260728; r >= Revision20241105; r-- {
		if revisionNames[r] == version {
			return r
		}
	}
	return 0
}

// String returns the revision's protocol version, or "" for the zero Revision.
func (r Revision) String() string {
	if int(r) < len(revisionNames) {
		return revisionNames[r]
	}
	return ""
}

// Feature is something one MCP revision added (and, for batches, the next one removed).
type Feature uint8

// The features whose presence differs between the revisions served.
const (
	// FeatureBatches: JSON-RPC batches, which a server must accept (2025-03-26 only).
	FeatureBatches Feature = iota
	// FeatureAudio: audio content blocks (2025-03-26).
	FeatureAudio
	// FeatureToolAnnotations: a tool's annotations (2025-03-26).
	FeatureToolAnnotations
	// FeatureCompletions: the completions capability (2025-03-26; completion/complete itself
	// is older).
	FeatureCompletions
	// FeatureProgressMessage: the message of a progress notification (2025-03-26).
	FeatureProgressMessage
	// FeatureStructuredOutput: a tool's outputSchema and a result's structuredContent
	// (2025-06-18).
	FeatureStructuredOutput
	// FeatureElicitation: elicitation/create, in form mode (2025-06-18).
	FeatureElicitation
	// FeatureResourceLinks: resource_link content blocks (2025-06-18).
	FeatureResourceLinks
	// FeatureTitles: the title of an implementation, a tool, a resource, a template, a prompt
	// and a prompt argument (2025-06-18).
	FeatureTitles
	// FeatureDescriptorMeta: the _meta of tools, resources, templates, prompts and content
	// blocks, and the lastModified of annotations (2025-06-18).
	FeatureDescriptorMeta
	// FeatureProtocolVersionHeader: the MCP-Protocol-Version header on every HTTP request after
	// initialize (2025-06-18).
	FeatureProtocolVersionHeader
	// FeatureIcons: the icons of the implementation, tools, resources, templates and prompts
	// (2025-11-25).
	FeatureIcons
	// FeatureURLElicitation: URL-mode elicitation (2025-11-25).
	FeatureURLElicitation
	// FeatureSamplingTools: tools and toolChoice in a sampling request (2025-11-25).
	FeatureSamplingTools
	features
)

// featureSpan is the first revision of each feature and the last (0: still there).
var featureSpan = [features]struct{ from, until Revision }{
	FeatureBatches:               {Revision20250326, Revision20250326},
	FeatureAudio:                 {from: Revision20250326},
	FeatureToolAnnotations:       {from: Revision20250326},
	FeatureCompletions:           {from: Revision20250326},
	FeatureProgressMessage:       {from: Revision20250326},
	FeatureStructuredOutput:      {from: Revision20250618},
	FeatureElicitation:           {from: Revision20250618},
	FeatureResourceLinks:         {from: Revision20250618},
	FeatureTitles:                {from: Revision20250618},
	FeatureDescriptorMeta:        {from: Revision20250618},
	FeatureProtocolVersionHeader: {from: Revision20250618},
	FeatureIcons:                 {from: Revision20251125},
	FeatureURLElicitation:        {from: Revision20251125},
	FeatureSamplingTools:         {from: Revision20251125},
}

// Has reports whether the revision has the feature. The zero Revision has none.
func (r Revision) Has(f Feature) bool {
	if r == 0 || f >= features {
		return false
	}
	s := featureSpan[f]
	return r >= s.from && (s.until == 0 || r <= s.until)
}

// shapesResults reports whether results of r differ from what the engine encodes: the engine
// builds them for the newest revisions, so only the older legacy ones are shaped, and none of
// those has icons (FeatureIcons).
func (r Revision) shapesResults() bool { return r != 0 && r < Revision20251125 }

// Shape returns v as the revision r defines it: a result (initialize, the lists, tools/call,
// prompts/get) with the members r does not define left out, and content blocks r does not know
// converted or left out. Any other value, and every value for 2025-11-25 and later (which the
// engine's types describe), is returned as it is. Shape never changes v: what it changes it
// copies.
//
// The rules, each from the schema of the revision:
//
//   - serverInfo has a title from 2025-06-18, icons from 2025-11-25; the capabilities declare
//     completions from 2025-03-26;
//   - a tool has annotations from 2025-03-26, a title, an outputSchema and _meta from
//     2025-06-18 (a 2025-03-26 session gets the title as annotations.title when the tool's
//     annotations have none), icons from 2025-11-25; resources, templates and prompts have a
//     title and _meta from 2025-06-18, icons from 2025-11-25;
//   - a tool result has structuredContent from 2025-06-18: before, it is left out and the text
//     content kept, and a result with no content at all gets the serialized JSON as its one
//     text block (2025-06-18: "a tool that returns structured content SHOULD also return the
//     serialized JSON in a TextContent block");
//   - an audio block, which 2024-11-05 does not know, is left out; a resource_link block,
//     which revisions before 2025-06-18 do not know, becomes a text block holding its URI;
//     content blocks carry _meta, and annotations lastModified, from 2025-06-18.
func (r Revision) Shape(v any) any {
	if !r.shapesResults() {
		return v
	}
	switch v := v.(type) {
	case *InitializeResult:
		out := *v
		out.ServerInfo = r.implementation(v.ServerInfo)
		if !r.Has(FeatureCompletions) {
			out.Capabilities.Completions = nil
		}
		return &out
	case *ListToolsResult:
		out := *v
		out.Tools = make([]Tool, len(v.Tools))
		for i := range v.Tools {
			out.Tools[i] = r.tool(v.Tools[i])
		}
		return &out
	case *ListResourcesResult:
		out := *v
		out.Resources = make([]Resource, len(v.Resources))
		for i, res := range v.Resources {
			res.Annotations = r.annotations(res.Annotations)
			res.Icons = nil
			if !r.Has(FeatureTitles) {
				res.Title = ""
			}
			if !r.Has(FeatureDescriptorMeta) {
				res.Meta = nil
			}
			out.Resources[i] = res
		}
		return &out
	case *ListResourceTemplatesResult:
		out := *v
		out.ResourceTemplates = make([]ResourceTemplate, len(v.ResourceTemplates))
		for i, t := range v.ResourceTemplates {
			t.Annotations = r.annotations(t.Annotations)
			t.Icons = nil
			if !r.Has(FeatureTitles) {
				t.Title = ""
			}
			if !r.Has(FeatureDescriptorMeta) {
				t.Meta = nil
			}
			out.ResourceTemplates[i] = t
		}
		return &out
	case *ListPromptsResult:
		out := *v
		out.Prompts = make([]Prompt, len(v.Prompts))
		for i, p := range v.Prompts {
			p.Icons = nil
			if !r.Has(FeatureTitles) {
				p.Title = ""
				if len(p.Arguments) > 0 {
					p.Arguments = slices.Clone(p.Arguments)
					for j := range p.Arguments {
						p.Arguments[j].Title = ""
					}
				}
			}
			if !r.Has(FeatureDescriptorMeta) {
				p.Meta = nil
			}
			out.Prompts[i] = p
		}
		return &out
	case *CallToolResult:
		return r.callToolResult(v)
	case CallToolResult:
		return r.callToolResult(&v)
	case *GetPromptResult:
		out := *v
		out.Messages = make([]PromptMessage, 0, len(v.Messages))
		for _, m := range v.Messages {
			c, ok := r.content(m.Content)
			if ok {
				out.Messages = append(out.Messages, PromptMessage{Role: m.Role, Content: c})
			}
		}
		return &out
	}
	return v
}

// implementation is serverInfo in r.
func (r Revision) implementation(impl Implementation) Implementation {
	impl.Icons = nil
	if !r.Has(FeatureTitles) {
		impl.Title = ""
	}
	return impl
}

// tool is a tools/list entry in r.
func (r Revision) tool(t Tool) Tool {
	switch {
	case !r.Has(FeatureToolAnnotations):
		t.Annotations = nil
	case !r.Has(FeatureTitles) && t.Title != "" && (t.Annotations == nil || t.Annotations.Title == ""):
		// The display name of 2025-03-26 is annotations.title.
		a := ToolAnnotations{}
		if t.Annotations != nil {
			a = *t.Annotations
		}
		a.Title = t.Title
		t.Annotations = &a
	}
	t.Icons = nil
	if !r.Has(FeatureTitles) {
		t.Title = ""
	}
	if !r.Has(FeatureStructuredOutput) {
		t.OutputSchema = nil
	}
	if !r.Has(FeatureDescriptorMeta) {
		t.Meta = nil
	}
	return t
}

// callToolResult is a tools/call result in r.
func (r Revision) callToolResult(v *CallToolResult) *CallToolResult {
	out := *v
	out.Content = r.contents(v.Content)
	if !r.Has(FeatureStructuredOutput) && len(v.StructuredContent) > 0 {
		out.StructuredContent = nil
		if len(out.Content) == 0 {
			text := v.StructuredContent
			var buf bytes.Buffer
			if json.Compact(&buf, text) == nil {
				text = buf.Bytes()
			}
			out.Content = []Content{TextContent(string(text))}
		}
	}
	return &out
}

// contents are content blocks in r: those it cannot carry converted or left out.
func (r Revision) contents(in []Content) []Content {
	out := make([]Content, 0, len(in))
	for _, c := range in {
		if c, ok := r.content(c); ok {
			out = append(out, c)
		}
	}
	return out
}

// content is one content block in r, and false when r has no way to carry it.
func (r Revision) content(c Content) (Content, bool) {
	switch {
	case c.Type == ContentAudio && !r.Has(FeatureAudio):
		return Content{}, false
	case c.Type == ContentResourceLink && !r.Has(FeatureResourceLinks):
		c = Content{Type: ContentText, Text: c.URI, Annotations: c.Annotations, Meta: c.Meta}
	}
	if !r.Has(FeatureDescriptorMeta) {
		c.Meta = nil
		c.Annotations = withoutLastModified(c.Annotations)
	}
	return c, true
}

// annotations are a resource's annotations in r.
func (r Revision) annotations(a *Annotations) *Annotations {
	if a == nil || a.LastModified == "" || r.Has(FeatureDescriptorMeta) {
		return a
	}
	out := *a
	out.LastModified = ""
	return &out
}

// withoutLastModified returns the annotations object raw without its lastModified member.
func withoutLastModified(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	if s, _ := findMember(trimSpace(raw), "lastModified"); s < 0 {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "lastModified")
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// ShapeRequest returns the params of a request the server sends a client of r
// (elicitation/create, sampling/createMessage) as r defines them, or an error that says what of
// them r cannot carry, when shaping cannot make them fit without changing what is asked. params
// is the request's encoded params; they are returned as they are for 2025-11-25 and later, for
// other methods, and where nothing needs to change.
//
// The rules, each from the schema of the revision:
//
//   - elicitation/create has a mode (and the url and elicitationId of URL mode) from
//     2025-11-25: before, the members are left out of a form-mode request, and a URL-mode one is
//     refused;
//   - the content of a sampling message is one text or image block in 2024-11-05, or an audio
//     block from 2025-03-26; an array of blocks, and tool_use and tool_result blocks, come with
//     tools in 2025-11-25: a request with content its revision does not have is refused, since
//     leaving it out would change the question the model is asked.
func (r Revision) ShapeRequest(method string, params json.RawMessage) (json.RawMessage, error) {
	if !r.shapesResults() || len(params) == 0 {
		return params, nil
	}
	switch method {
	case MethodElicitationCreate:
		if r.Has(FeatureURLElicitation) {
			return params, nil
		}
		var p struct {
			Mode string `json:"mode"`
		}
		if json.Unmarshal(params, &p) != nil {
			return params, nil
		}
		if p.Mode != "" && p.Mode != ElicitModeForm {
			return nil, fmt.Errorf("%s: %s-mode elicitation, which MCP %s, the session's revision, does not have", method, p.Mode, r)
		}
		return withoutMembers(params, "mode", "url", "elicitationId"), nil
	case MethodSamplingCreateMessage:
		return params, r.checkSampling(method, params)
	}
	return params, nil
}

// checkSampling returns an error naming the first message of a sampling request whose content
// r does not have.
func (r Revision) checkSampling(method string, params json.RawMessage) error {
	var p struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil // not for the revision to judge
	}
	type block struct {
		Type string `json:"type"`
	}
	for i, m := range p.Messages {
		var blocks []block
		if c := trimSpace(m.Content); len(c) > 0 && c[0] == '[' {
			if !r.Has(FeatureSamplingTools) {
				return fmt.Errorf("%s: messages[%d] has an array of content blocks, which MCP %s, the session's revision, does not have", method, i, r)
			}
			_ = json.Unmarshal(c, &blocks)
		} else {
			var b block
			_ = json.Unmarshal(c, &b)
			blocks = []block{b}
		}
		for _, b := range blocks {
			switch {
			case b.Type == ContentAudio && !r.Has(FeatureAudio),
				(b.Type == "tool_use" || b.Type == "tool_result") && !r.Has(FeatureSamplingTools):
				return fmt.Errorf("%s: messages[%d] has %s content, which MCP %s, the session's revision, does not have", method, i, b.Type, r)
			}
		}
	}
	return nil
}

// withoutMembers returns the JSON object obj without its top-level members names, the others in
// their order; obj itself when it has none of them or is not an object.
func withoutMembers(obj json.RawMessage, names ...string) json.RawMessage {
	o := trimSpace(obj)
	if len(o) == 0 || o[0] != '{' || !json.Valid(o) {
		return obj
	}
	found := false
	for _, name := range names {
		if s, _ := findMember(o, name); s >= 0 {
			found = true
			break
		}
	}
	if !found {
		return obj
	}
	out := make([]byte, 0, len(o))
	out = append(out, '{')
	n := len(o)
	i := skipSpace(o, 1)
	for i < n && o[i] == '"' {
		ks := i
		i = skipString(o, i)
		key := o[ks:i]
		i = skipSpace(o, i)
		i = skipSpace(o, i+1) // ':'
		vs := i
		i = skipValue(o, i)
		drop := false
		for _, name := range names {
			if string(key[1:len(key)-1]) == name || escapedEquals(key, name) {
				drop = true
				break
			}
		}
		if !drop {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, key...)
			out = append(out, ':')
			out = append(out, o[vs:i]...)
		}
		i = skipSpace(o, i)
		if i < n && o[i] == ',' {
			i = skipSpace(o, i+1)
		}
	}
	return append(out, '}')
}

// ClientCapabilities returns caps as a client of r can declare them: what r does not define is
// left out (elicitation before 2025-06-18; its modes, sampling's tools and tasks before
// 2025-11-25), so that a request r does not have is refused as undeclared.
func (r Revision) ClientCapabilities(caps *ClientCapabilities) *ClientCapabilities {
	if caps == nil || r == 0 || r >= Revision20251125 {
		return caps
	}
	out := *caps
	out.Tasks = nil
	if !r.Has(FeatureElicitation) {
		out.Elicitation = nil
	} else if declared(out.Elicitation) {
		out.Elicitation = json.RawMessage(`{}`) // form mode, the only one of 2025-06-18
	}
	if declared(out.Sampling) {
		out.Sampling = json.RawMessage(`{}`)
	}
	return &out
}
