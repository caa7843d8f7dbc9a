package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolgrain/toolgrain/tools"
)

// A host actor answers the calls of an actor-backed tool. Outside a server, Handle calls it
// directly and returns its raw outcome, which makes the actor easy to test on its own.
func ExampleNewActorHandler() {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer system.Shutdown()
	greeter := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *tools.ActorCall:
			var in struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(m.Arguments, &in); err != nil {
				ctx.Respond(&tools.ActorError{Err: err}) // private: the client sees a generic failure
				return
			}
			ctx.Respond(&tools.ActorResult{Result: tools.TextResult("Hello, " + in.Name + "!")})
		case *tools.ActorCancel:
			// The call m.ID is over for the engine.
		}
	}))
	defer system.Root.Stop(greeter)

	h := tools.NewActorHandler(system, greeter)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := h.Handle(ctx, &tools.Request{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output: Hello, Ada!
}
