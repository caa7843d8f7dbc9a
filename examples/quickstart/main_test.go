package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

// protoactor starts this goroutine on a dead letter to throttle its logging; it ends by itself
// after one second.
const deadLetterThrottle = "github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(deadLetterThrottle)) }

// The add tool, called by a client in the same process: a valid call, then two calls whose
// arguments fail the schema inferred from AddIn, answered before add runs.
func Example() {
	srv, err := newServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, args := range []string{`{"a":1,"b":2}`, `{"a":"x","b":2}`, `{"b":2}`} {
		res, err := client.CallTool(ctx, "add", json.RawMessage(args))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Content[0].Text, res.IsError)
	}
	// Output:
	// {"sum":3} false
	// invalid arguments: a: must be integer, got string true
	// invalid arguments: a: missing property true
}
