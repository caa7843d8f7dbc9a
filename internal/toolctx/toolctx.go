// Package toolctx holds the context keys that package tools and the engine (package actors)
// share without either exporting them.
package toolctx

// ActorDispatch is the context key under which the engine puts, in the context of a call of an
// actor-backed tool that runs through middleware, the function that sends the call to the
// tool's actor from the request actor: a func(context.Context, *tools.Request)
// (*tools.Result, error). tools.ActorHandler.Handle uses it when it is there.
type ActorDispatch struct{}
