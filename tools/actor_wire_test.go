package tools

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/toolgrain/toolgrain/internal/wire"
	"github.com/toolgrain/toolgrain/protocol"
)

// crossWire does what remote does to a message: Serialize, marshal, unmarshal, Deserialize.
func crossWire(t *testing.T, msg remote.RootSerializable) any {
	t.Helper()
	ser, err := msg.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(ser.(proto.Message))
	if err != nil {
		t.Fatal(err)
	}
	var e wire.Envelope
	if err := proto.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	out, err := e.Deserialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestActorContractCrossesTheWire(t *testing.T) {
	total := 10.0
	deadline := time.Unix(1_800_000_000, 123456789)
	tests := []struct {
		name string
		give remote.RootSerializable
		want any
	}{
		{"call", &ActorCall{ID: "127.0.0.1:7001/toolgrain$1/c$2/$3", Tool: "work", Arguments: json.RawMessage(`{"s":"é \"q\" \u2028"}`),
			Meta: json.RawMessage(`{"progressToken":1}`), Identity: &Identity{Subject: "u", Scopes: []string{"a", "b"}, Extra: map[string]int{"n": 1}},
			Deadline: deadline, Progress: true, ReplyTo: actor.NewPID("127.0.0.1:7001", "toolgrain$1/c$2/$3")},
			&ActorCall{ID: "127.0.0.1:7001/toolgrain$1/c$2/$3", Tool: "work", Arguments: json.RawMessage(`{"s":"é \"q\" \u2028"}`),
				Meta: json.RawMessage(`{"progressToken":1}`), Identity: &Identity{Subject: "u", Scopes: []string{"a", "b"}, Extra: json.RawMessage(`{"n":1}`)},
				Deadline: deadline, Progress: true, ReplyTo: actor.NewPID("127.0.0.1:7001", "toolgrain$1/c$2/$3")}},
		{"call_bare", &ActorCall{ID: "x", Tool: "t", Arguments: json.RawMessage(`{}`)}, &ActorCall{ID: "x", Tool: "t", Arguments: json.RawMessage(`{}`)}},
		{"result", &ActorResult{Result: &Result{Content: []protocol.Content{protocol.TextContent("hi")}, StructuredContent: map[string]string{"a": "b"}, Meta: json.RawMessage(`{"m":1}`)}},
			&ActorResult{Result: &Result{Content: []protocol.Content{protocol.TextContent("hi")}, StructuredContent: json.RawMessage(`{"a":"b"}`), Meta: json.RawMessage(`{"m":1}`)}}},
		{"public_error_result", &ActorResult{Result: ErrorResult("no")}, &ActorResult{Result: ErrorResult("no")}},
		{"nil_result", &ActorResult{}, &ActorResult{}},
		{"error", &ActorError{Err: errors.New("disk on fire")}, &ActorError{Err: errors.New("disk on fire")}},
		{"progress", &ActorProgress{Progress: 3, Total: &total, Message: "m"}, &ActorProgress{Progress: 3, Total: &total, Message: "m"}},
		{"progress_no_total", &ActorProgress{Progress: 1}, &ActorProgress{Progress: 1}},
		{"cancel", &ActorCancel{ID: "x", Cause: errors.New("client cancelled")}, &ActorCancel{ID: "x", Cause: errors.New("client cancelled")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := crossWire(t, tt.give)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("crossed as %#v\nwant %#v", got, tt.want)
			}
		})
	}
}
