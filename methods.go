package toolgrain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/toolgrain/toolgrain/internal/engine"
	"github.com/toolgrain/toolgrain/protocol"
)

// Method is a JSON-RPC method beyond the MCP specification's, served by [Config].Methods: a
// request for Name runs Handler. Both are required.
type Method struct {
	// Name is the method, with a namespace prefix: "acme/reindex". It must not be a method of
	// the specification (in any revision), nor in one of its namespaces (tools/, resources/,
	// notifications/, ...); protocol.CheckMethodName has the rules, and a name that breaks
	// them is an error from NewServer.
	Name string
	// Handler serves the method; see [TypedMethod].
	Handler MethodHandler
}

// MethodHandler serves a custom method; [TypedMethod] makes one from a typed function. The
// zero value serves nothing (NewServer refuses a Method without a handler).
type MethodHandler struct{ m *engine.Method }

// TypedMethod returns the handler that serves a custom method with fn, as the typed tools do
// (tools.Func): the request's params are decoded into P with encoding/json (absent params, or
// null, are P's zero value; P = json.RawMessage takes them as they are), fn runs, and its R is
// the result, marshalled with encoding/json, which must encode as a JSON object.
//
// Its calls follow the error model, in both protocol eras and over every transport:
//
//   - params that do not decode into P get -32602 "Invalid params: ..." naming the member and
//     the type it must have, and fn does not run;
//   - an error fn returns, a panic, and a result that is not a JSON object are unexpected
//     failures: the client gets -32603 "Internal error" and nothing more, and OnError the
//     original (a panic's with its stack), whose details name the method and the request id;
//   - fn's context is cancelled when the client cancels the request (notifications/cancelled,
//     or closing a modern HTTP request's stream), the connection closes or the server shuts
//     down, and nothing at all is sent after a cancellation;
//   - a request counts under MaxCallsPerConnection and MaxCalls as a tools/call does, and over
//     a limit is refused unprocessed with -31000.
//
// The context carries the request's client (package client: log messages, and in a legacy
// session requests to the client; a modern request has no input_required rounds here, so
// those fail with client.ErrNoStream), the caller's identity (tools.IdentityFromContext) and,
// when the request carried a progressToken, its progress sink (tools.ReportProgress).
func TypedMethod[P, R any](fn func(ctx context.Context, params P) (R, error)) MethodHandler {
	if fn == nil {
		return MethodHandler{}
	}
	return MethodHandler{m: &engine.Method{
		Decode: func(raw json.RawMessage) (any, *protocol.WireError) {
			var p P
			if len(raw) == 0 || string(raw) == "null" {
				return p, nil
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, paramsError(err)
			}
			return p, nil
		},
		Run: func(ctx context.Context, params any) (any, error) {
			res, err := fn(ctx, params.(P))
			if err != nil {
				return nil, err
			}
			raw, err := json.Marshal(res)
			if err != nil {
				return nil, fmt.Errorf("encode result: %w", err)
			}
			if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '{' {
				return nil, fmt.Errorf("the result %T does not encode as a JSON object: %.40s", res, raw)
			}
			return json.RawMessage(raw), nil
		},
	}}
}

// paramsError is the -32602 of params that do not decode: the member and the type it must
// have, from encoding/json; the text of any other decoding error (a type's own UnmarshalJSON)
// stays private.
func paramsError(err error) *protocol.WireError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := "params"
		if te.Field != "" {
			where = te.Field
		}
		return protocol.ErrInvalidParams("%s: must be %s, got %s", where, jsonKind(te.Type), te.Value)
	}
	return protocol.ErrInvalidParams("params do not match what the method takes")
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "of another type"
}

// engineMethods checks the custom methods and extensions of cfg and returns them as the engine
// takes them.
func engineMethods(cfg *Config) (map[string]*engine.Method, map[string]json.RawMessage, error) {
	var errs []error
	var methods map[string]*engine.Method
	for _, m := range cfg.Methods {
		if err := protocol.CheckMethodName(m.Name); err != nil {
			errs = append(errs, fmt.Errorf("toolgrain: method %q: %w", m.Name, err))
			continue
		}
		if m.Handler.m == nil {
			errs = append(errs, fmt.Errorf("toolgrain: method %q: no handler", m.Name))
			continue
		}
		if _, dup := methods[m.Name]; dup {
			errs = append(errs, fmt.Errorf("toolgrain: method %q: declared twice", m.Name))
			continue
		}
		if methods == nil {
			methods = make(map[string]*engine.Method, len(cfg.Methods))
		}
		methods[m.Name] = m.Handler.m
	}
	var exts map[string]json.RawMessage
	for id, settings := range cfg.Extensions {
		err := protocol.CheckExtensionID(id)
		switch {
		case err != nil:
		case id == protocol.ExtensionTasks:
			err = errors.New("declared by the engine itself when tasks are on (Config.Tasks)")
		case len(settings) == 0:
			settings = json.RawMessage(`{}`)
		case !isObject(settings):
			err = errors.New("its settings must be a JSON object")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("toolgrain: extension %q: %w", id, err))
			continue
		}
		if exts == nil {
			exts = make(map[string]json.RawMessage, len(cfg.Extensions))
		}
		var b bytes.Buffer
		_ = json.Compact(&b, settings) // valid: isObject decoded it
		exts[id] = b.Bytes()
	}
	return methods, exts, errors.Join(errs...)
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
