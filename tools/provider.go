package tools

import (
	"context"
	"errors"
)

// Provider is a per-call dependency a tool declares in [Tool.Providers]: a database handle, an
// API client, a credential looked up for the call. The engine resolves a tool's providers, in
// order, before its handler runs, and the handler reads the values from its context.
//
// The only implementation is [*Dependency], made with [NewDependency].
type Provider interface {
	// ProviderName names the provider in errors ([ProviderError.Provider]).
	ProviderName() string

	// resolve computes the provider's value for one call and returns ctx carrying it.
	resolve(ctx context.Context) (context.Context, error)
}

// Dependency is a [Provider] of a value of type T. Declare it once, list it in the Providers of
// every tool that needs it, and read the value in the handler with [Dependency.Get].
//
// A Dependency is immutable and safe for concurrent use.
type Dependency[T any] struct {
	name string
	fn   func(ctx context.Context) (T, error)
}

var _ Provider = (*Dependency[int])(nil)

// errNoProviderFunc is what a Dependency without a function returns when asked for its value.
var errNoProviderFunc = errors.New("dependency has no provider function")

// NewDependency returns a Dependency named name whose value fn computes. fn runs once per call
// of each tool that lists the Dependency, on the call's goroutine and with the call's context,
// before the handler; it may block, and should honour the context. A nil fn is reported by
// [Compile].
func NewDependency[T any](name string, fn func(ctx context.Context) (T, error)) *Dependency[T] {
	return &Dependency[T]{name: name, fn: fn}
}

// ProviderName returns the name given to [NewDependency].
func (d *Dependency[T]) ProviderName() string {
	if d == nil {
		return ""
	}
	return d.name
}

// Get returns the value of d for the current call.
//
// Inside a handler run by the engine, ctx carries the value resolved before the handler started,
// and Get returns it without calling the provider function again. Otherwise — a handler called
// directly, a tool that does not list d — Get calls the provider function with ctx and returns
// its result, with its raw error unchanged: the conversion of provider failures into
// [*ProviderError] happens only when a call runs through the server.
func (d *Dependency[T]) Get(ctx context.Context) (T, error) {
	if v, ok := ctx.Value(providerKey{d}).(*T); ok {
		return *v, nil
	}
	if d.fn == nil {
		var zero T
		return zero, errNoProviderFunc
	}
	return d.fn(ctx)
}

func (d *Dependency[T]) resolve(ctx context.Context) (context.Context, error) {
	if d.fn == nil {
		return nil, errNoProviderFunc
	}
	v, err := d.fn(ctx)
	if err != nil {
		return nil, err
	}
	return context.WithValue(ctx, providerKey{d}, &v), nil
}

// check reports a Dependency that cannot work, for [Compile].
func (d *Dependency[T]) check() error {
	switch {
	case d == nil:
		return errors.New("nil")
	case d.fn == nil:
		return errNoProviderFunc
	default:
		return nil
	}
}

// providerKey is the context key of a resolved provider value; p is the provider itself, so
// every Dependency has its own key.
type providerKey struct{ p Provider }
