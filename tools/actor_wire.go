package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/toolgrain/toolgrain/internal/wire"
)

// The actor-tool contract across the members of a cluster: protoactor-go remote sends only
// protobuf messages (anything else is dropped with a log line), so each message of the contract
// is a remote.RootSerializable whose wire form is the cluster's one message, wire.Envelope. A
// tool actor on another member receives the same *ActorCall, and its replies reach the request
// actor as the same *ActorResult, *ActorError and *ActorProgress. What changes on the way:
//
//   - an error crosses as its text only (ActorError.Err, ActorCancel.Cause): typed errors do not
//     survive, and a reply that is a bare error value cannot cross at all; reply *ActorError;
//   - Identity.Extra crosses as its JSON (json.RawMessage on the far side; nil if it does not
//     marshal);
//   - StructuredContent crosses as its JSON (json.RawMessage on the far side).

func init() { wire.Decode = decodeEnvelope }

// Serialize returns the wire form of the call, for remote.
func (c *ActorCall) Serialize() (remote.RootSerialized, error) {
	e := &wire.Envelope{
		Kind:          wire.Kind_KIND_TOOL_CALL,
		CallId:        c.ID,
		CallTool:      c.Tool,
		CallArguments: c.Arguments,
		CallMeta:      c.Meta,
		CallProgress:  c.Progress,
	}
	if !c.Deadline.IsZero() {
		e.CallDeadlineUnixNano = c.Deadline.UnixNano()
	}
	if c.ReplyTo != nil {
		e.ReplyAddress, e.ReplyId = c.ReplyTo.Address, c.ReplyTo.Id
	}
	if id := c.Identity; id != nil {
		e.HasIdentity, e.IdentitySubject, e.IdentityScopes = true, id.Subject, id.Scopes
		if id.Extra != nil {
			if b, err := json.Marshal(id.Extra); err == nil {
				e.IdentityExtra = b
			}
		}
	}
	return e, nil
}

// Serialize returns the wire form of the result, for remote.
func (r *ActorResult) Serialize() (remote.RootSerialized, error) {
	e := &wire.Envelope{Kind: wire.Kind_KIND_TOOL_RESULT}
	if res := r.Result; res != nil {
		content, err := json.Marshal(res.Content)
		if err != nil {
			return nil, fmt.Errorf("tool result content: %w", err)
		}
		e.HasResult, e.ResultContent, e.ResultIsError, e.ResultMeta = true, content, res.IsError, res.Meta
		if res.StructuredContent != nil {
			if e.ResultStructured, err = json.Marshal(res.StructuredContent); err != nil {
				return nil, fmt.Errorf("tool result structuredContent: %w", err)
			}
		}
	}
	return e, nil
}

// Serialize returns the wire form of the error (its text), for remote.
func (e *ActorError) Serialize() (remote.RootSerialized, error) {
	return &wire.Envelope{Kind: wire.Kind_KIND_TOOL_ERROR, Text: e.Error()}, nil
}

// Serialize returns the wire form of the progress report, for remote.
func (p *ActorProgress) Serialize() (remote.RootSerialized, error) {
	e := &wire.Envelope{Kind: wire.Kind_KIND_TOOL_PROGRESS, Progress: p.Progress, Text: p.Message}
	if p.Total != nil {
		e.HasTotal, e.ProgressTotal = true, *p.Total
	}
	return e, nil
}

// Serialize returns the wire form of the cancellation (the cause as text), for remote.
func (c *ActorCancel) Serialize() (remote.RootSerialized, error) {
	e := &wire.Envelope{Kind: wire.Kind_KIND_TOOL_CANCEL, CallId: c.ID}
	if c.Cause != nil {
		e.Text = c.Cause.Error()
	}
	return e, nil
}

// decodeEnvelope turns a tool-call Envelope back into its Go message.
func decodeEnvelope(e *wire.Envelope) (remote.RootSerializable, error) {
	switch e.Kind {
	case wire.Kind_KIND_TOOL_CALL:
		c := &ActorCall{ID: e.CallId, Tool: e.CallTool, Arguments: e.CallArguments, Meta: e.CallMeta, Progress: e.CallProgress}
		if len(c.Arguments) == 0 {
			c.Arguments = json.RawMessage("{}")
		}
		if len(c.Meta) == 0 {
			c.Meta = nil
		}
		if e.CallDeadlineUnixNano != 0 {
			c.Deadline = time.Unix(0, e.CallDeadlineUnixNano)
		}
		if e.ReplyAddress != "" {
			c.ReplyTo = actor.NewPID(e.ReplyAddress, e.ReplyId)
		}
		if e.HasIdentity {
			c.Identity = &Identity{Subject: e.IdentitySubject, Scopes: e.IdentityScopes}
			if len(e.IdentityExtra) > 0 {
				c.Identity.Extra = json.RawMessage(e.IdentityExtra)
			}
		}
		return c, nil
	case wire.Kind_KIND_TOOL_RESULT:
		r := &ActorResult{}
		if e.HasResult {
			res := &Result{IsError: e.ResultIsError}
			if err := json.Unmarshal(e.ResultContent, &res.Content); err != nil {
				return nil, fmt.Errorf("tool result content: %w", err)
			}
			if len(e.ResultStructured) > 0 {
				res.StructuredContent = json.RawMessage(e.ResultStructured)
			}
			if len(e.ResultMeta) > 0 {
				res.Meta = json.RawMessage(e.ResultMeta)
			}
			r.Result = res
		}
		return r, nil
	case wire.Kind_KIND_TOOL_ERROR:
		return &ActorError{Err: errors.New(e.Text)}, nil
	case wire.Kind_KIND_TOOL_PROGRESS:
		p := &ActorProgress{Progress: e.Progress, Message: e.Text}
		if e.HasTotal {
			total := e.ProgressTotal
			p.Total = &total
		}
		return p, nil
	case wire.Kind_KIND_TOOL_CANCEL:
		c := &ActorCancel{ID: e.CallId}
		if e.Text != "" {
			c.Cause = errors.New(e.Text)
		}
		return c, nil
	}
	return e, nil
}

var (
	_ remote.RootSerializable = (*ActorCall)(nil)
	_ remote.RootSerializable = (*ActorResult)(nil)
	_ remote.RootSerializable = (*ActorError)(nil)
	_ remote.RootSerializable = (*ActorProgress)(nil)
	_ remote.RootSerializable = (*ActorCancel)(nil)
)
