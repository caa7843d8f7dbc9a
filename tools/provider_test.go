package tools_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/toolgrain/toolgrain/tools"
)

func TestRunProviderFailure(t *testing.T) {
	errDown := errors.New("SECRET-internal-detail: database down")
	db := tools.NewDependency("db", func(context.Context) (string, error) { return "", errDown })
	var called atomic.Bool
	res, err := run(t, tools.Tool{
		Providers: []tools.Provider{db},
		Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
			called.Store(true)
			return tools.TextResult("ok"), nil
		}),
	})
	var provErr *tools.ProviderError
	if !errors.As(err, &provErr) || res != nil {
		t.Fatalf("got (%v, %v), want only a *ProviderError", res, err)
	}
	if provErr.Tool != "x" || provErr.Provider != "db" || !errors.Is(err, errDown) {
		t.Errorf("got %+v", provErr)
	}
	if want := `tool "x": provider "db": SECRET-internal-detail: database down`; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if called.Load() {
		t.Error("the handler ran although a provider failed")
	}
}

func TestRunProviderPanic(t *testing.T) {
	db := tools.NewDependency("db", func(context.Context) (int, error) { panic("provider panic") })
	_, err := run(t, tools.Tool{Providers: []tools.Provider{db}, Handler: okHandler})
	var panicErr *tools.PanicError
	if !errors.As(err, &panicErr) || panicErr.Value != "provider panic" {
		t.Errorf("got %v, want a *PanicError", err)
	}
}

// Providers are resolved once per call, in order; later providers and the handler see the
// values of earlier ones without calling their functions again.
func TestRunResolvesProvidersOnceInOrder(t *testing.T) {
	var dsnCalls, dbCalls atomic.Int32
	dsn := tools.NewDependency("dsn", func(context.Context) (string, error) {
		dsnCalls.Add(1)
		return "postgres://db", nil
	})
	db := tools.NewDependency("db", func(ctx context.Context) (string, error) {
		dbCalls.Add(1)
		d, err := dsn.Get(ctx)
		return "conn(" + d + ")", err
	})
	c := compileOne(t, tools.Tool{
		Name:      "x",
		Providers: []tools.Provider{dsn, db},
		Handler: tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
			conn, err := db.Get(ctx)
			if err != nil {
				return nil, err
			}
			again, _ := db.Get(ctx)
			return tools.TextResult(conn + " " + again), nil
		}),
	})
	for range 2 {
		res, err := c.Run(context.Background(), &tools.Request{Tool: "x", Arguments: raw(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := res.Content[0].Text, "conn(postgres://db) conn(postgres://db)"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if dsnCalls.Load() != 2 || dbCalls.Load() != 2 {
		t.Errorf("provider functions ran %d and %d times for 2 calls, want once per call each", dsnCalls.Load(), dbCalls.Load())
	}
}

// Outside the server, Get calls the provider function and returns its raw error.
func TestDependencyGetOutsideEngine(t *testing.T) {
	errDown := errors.New("database down")
	db := tools.NewDependency("db", func(context.Context) (int, error) { return 0, errDown })
	_, err := db.Get(context.Background())
	if err != errDown {
		t.Errorf("got %v, want the provider's own error", err)
	}
	var provErr *tools.ProviderError
	if errors.As(err, &provErr) {
		t.Error("outside the server the error must not be converted")
	}

	n := tools.NewDependency("n", func(context.Context) (int, error) { return 42, nil })
	if v, err := n.Get(context.Background()); v != 42 || err != nil {
		t.Errorf("got (%v, %v), want (42, nil)", v, err)
	}
	if n.ProviderName() != "n" {
		t.Errorf("ProviderName() = %q", n.ProviderName())
	}
}

// A typed handler called directly returns its raw error as well.
func TestHandlerCalledDirectly(t *testing.T) {
	errBoom := errors.New("boom")
	h := tools.Func(func(context.Context, struct{}) (*tools.Result, error) { return nil, errBoom })
	if _, err := h.Handle(context.Background(), &tools.Request{Tool: "x"}); err != errBoom {
		t.Errorf("got %v, want the raw error", err)
	}
}
