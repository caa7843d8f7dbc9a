package wire

import "github.com/asynkron/protoactor-go/remote"

// An Envelope is both sides of protoactor-go's remote.RootSerializable hook: the endpoint writer
// sends it as it is, and the endpoint reader turns a tool-call kind back into the Go message of
// package tools (through Decode) before delivering it; other kinds are delivered as Envelopes.

// Decode turns a tool-call Envelope into the Go message of the actor-tool contract. Package
// tools sets it at init; it is not changed afterwards.
var Decode func(*Envelope) (remote.RootSerializable, error)

// Serialize returns e: an Envelope is its own wire form.
func (e *Envelope) Serialize() (remote.RootSerialized, error) { return e, nil }

// Deserialize returns the Go message e carries: a tools message for the tool-call kinds, else e.
func (e *Envelope) Deserialize() (remote.RootSerializable, error) {
	switch e.Kind {
	case Kind_KIND_TOOL_CALL, Kind_KIND_TOOL_RESULT, Kind_KIND_TOOL_ERROR, Kind_KIND_TOOL_PROGRESS, Kind_KIND_TOOL_CANCEL:
		if Decode != nil {
			return Decode(e)
		}
	}
	return e, nil
}

var (
	_ remote.RootSerializable = (*Envelope)(nil)
	_ remote.RootSerialized   = (*Envelope)(nil)
)
