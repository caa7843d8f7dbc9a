package tools

import (
	"context"
	"errors"
	"fmt"
)

// Middleware wraps the handler of every tool call of a server: it returns a [Handler] that may
// act before and after calling next, or answer without calling it. The root package's
// Config.Middleware lists them; [Compile] takes them too.
//
// Order and place. The first middleware of a list is the outermost: with [a, b], a call runs
// a, then b, then the tool. A middleware runs after the call's arguments and _meta were
// validated (a call with invalid input never reaches it: its feedback is sent at once) and
// around everything the tool does for the call: its [Provider] values are resolved inside next,
// and the output checks ([Compiled.Run]) apply to what the outermost middleware returns. It
// wraps every call in both protocol eras and on every transport, of Go handlers and
// actor-backed tools ([ActorHandler]: next sends the call to the actor and waits for its
// reply) alike, calls that run as tasks included.
//
// What it sees. req is the call's [*Request]: the tool's name, the validated arguments, the
// client's _meta and the authenticated [Identity] (nil without auth); ctx is the handler's
// context, cancelled as [Handler] describes, which carries the identity, the progress sink and
// the client (package client) as well. A middleware must not modify req; it may pass next a
// copy with other arguments, which are then not validated again.
//
// The error model holds through it:
//
//   - a [*Result] it returns reaches the client as a handler's would; [ErrorResult] is the way
//     to refuse a call with a message the client sees (a rate limit, a missing permission);
//   - an error it returns, or a panic, is an unexpected failure: the client sees only "Tool
//     execution failed", and the server's OnError gets the error as it is (a panic as a
//     [*PanicError]);
//   - after the call was cancelled nothing is sent, whatever it returns.
//
// A middleware is called once per tool when the tools are compiled, and the handler it returns
// is called concurrently by every call of that tool: it must be safe for concurrent use. A nil
// Middleware, or one that returns a nil Handler, is a construction error.
type Middleware func(next Handler) Handler

// chain wraps h in mw, the first outermost.
func chain(h Handler, mw []Middleware) (wrapped Handler, err error) {
	defer func() {
		if v := recover(); v != nil {
			wrapped, err = nil, fmt.Errorf("middleware panicked: %v", v)
		}
	}()
	for i := len(mw) - 1; i >= 0; i-- {
		if h = mw[i](h); isNilHandler(h) {
			return nil, fmt.Errorf("middleware %d returned a nil handler", i)
		}
	}
	return h, nil
}

// checkMiddleware reports a nil middleware.
func checkMiddleware(mw []Middleware) error {
	var errs []error
	for i, m := range mw {
		if m == nil {
			errs = append(errs, fmt.Errorf("middleware %d: nil", i))
		}
	}
	return errors.Join(errs...)
}

// handle is what a middleware's next does for the tool: it resolves the providers in order,
// then calls the handler.
func (c *Compiled) handle(ctx context.Context, req *Request) (*Result, error) {
	for _, p := range c.def.Providers {
		next, err := p.resolve(ctx)
		if err != nil {
			return nil, &ProviderError{Tool: c.def.Name, Provider: p.ProviderName(), Err: err}
		}
		ctx = next
	}
	return c.def.Handler.Handle(ctx, req)
}

// Wrapped reports whether the tool's calls pass through middleware.
func (c *Compiled) Wrapped() bool { return c.call != nil }
