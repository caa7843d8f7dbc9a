package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/toolgrain/toolgrain/protocol"
)

// ErrInputRequired is returned by [Input] (and by [Elicit], [CreateMessage] and [ListRoots])
// when a call served in the modern era (MCP 2026-07-28) needs an answer the client has not given
// yet: the engine has answered the request with an input_required result, and this run of the
// handler is over. The handler should return at once; whatever it returns is discarded. When
// the client retries the request with its answers, the handler runs again from the start and
// the same requests return the answers.
var ErrInputRequired = errors.New("client: input required: the request was answered input_required and will be retried")

// InputRequest is one request for input from the client: an elicitation, a sampling request or
// a roots listing. Make one with [ElicitInput], [SamplingInput] or [RootsInput].
type InputRequest struct {
	// Method is protocol.MethodElicitationCreate, protocol.MethodSamplingCreateMessage or
	// protocol.MethodRootsList.
	Method string
	// Params are the request's params: *protocol.ElicitParams, *protocol.CreateMessageParams,
	// or nil for roots.
	Params any
}

// ElicitInput asks the user for input (elicitation/create); see [Elicit].
func ElicitInput(p *protocol.ElicitParams) InputRequest {
	return InputRequest{Method: protocol.MethodElicitationCreate, Params: p}
}

// SamplingInput asks the client's LLM for a completion (sampling/createMessage); see
// [CreateMessage].
func SamplingInput(p *protocol.CreateMessageParams) InputRequest {
	return InputRequest{Method: protocol.MethodSamplingCreateMessage, Params: p}
}

// RootsInput asks for the client's roots (roots/list); see [ListRoots].
func RootsInput() InputRequest { return InputRequest{Method: protocol.MethodRootsList} }

// InputResponse is the client's answer to one [InputRequest], kept raw until read with the
// method that fits its request.
type InputResponse struct {
	Method string
	Result json.RawMessage
}

// Elicit reads the answer to an elicitation.
func (r InputResponse) Elicit() (*protocol.ElicitResult, error) {
	var res protocol.ElicitResult
	if err := r.decode(protocol.MethodElicitationCreate, &res); err != nil {
		return nil, err
	}
	if res.Action == "" {
		return nil, fmt.Errorf("client: %s: malformed result from the client: no action", r.Method)
	}
	return &res, nil
}

// Message reads the answer to a sampling request.
func (r InputResponse) Message() (*protocol.CreateMessageResult, error) {
	var res protocol.CreateMessageResult
	if err := r.decode(protocol.MethodSamplingCreateMessage, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Roots reads the answer to a roots listing.
func (r InputResponse) Roots() (*protocol.ListRootsResult, error) {
	var res protocol.ListRootsResult
	if err := r.decode(protocol.MethodRootsList, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (r InputResponse) decode(method string, out any) error {
	if r.Method != method {
		return fmt.Errorf("client: the answer to a %s request read as %s", r.Method, method)
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("client: %s: malformed result from the client: %w", method, err)
	}
	return nil
}

// InputPeer is implemented by a [Peer] that asks for several inputs at once and carries a
// handler's state from one round of a multi-round-trip request to the next. The engine's peers
// implement it.
type InputPeer interface {
	Peer
	// Input asks the client for every request of reqs and returns the answers by key; see
	// [Input].
	Input(ctx context.Context, reqs map[string]InputRequest) (map[string]json.RawMessage, error)
	// State returns the handler's state; see [State].
	State() []byte
	// SetState sets it; see [SetState].
	SetState(state []byte)
}

// Input asks the client for several inputs at once and returns its answers by the keys of reqs
// (which name the requests on the wire, and must be unique within the request). It is the
// one API for both protocol eras:
//
//   - In a legacy session (MCP 2025-11-25 and earlier) every request is sent to the client as
//     a request of its own, at once, and Input returns when all are answered. A client that
//     answers one with a JSON-RPC error makes Input return that [*protocol.WireError].
//   - In the modern era (MCP 2026-07-28) the engine cannot ask the client anything in the
//     middle of a request. Answers the client already gave (on a retry of this request) are
//     returned at once; for the others the engine answers the request with an input_required
//     result listing them, and Input returns [ErrInputRequired]: the handler must return. The
//     client retries the request with its answers, and the handler runs again from the start,
//     so the work it does before Input must be safe to repeat (or be carried over with
//     [SetState]). A handler may call Input any number of times, for as many rounds as it
//     needs; the answers of earlier rounds are carried in the request state, so that every
//     earlier call of Input returns the same answers again.
//
// Every request needs the capability the client declared (for this request, in the modern era;
// at initialize in a legacy session): without it Input sends nothing and returns a
// [*CapabilityError]. A handler that cannot proceed returns that error (see CapabilityError).
// Input returns [ErrNoClient] outside the engine and [ErrCallFinished] once the call is over.
func Input(ctx context.Context, reqs map[string]InputRequest) (map[string]InputResponse, error) {
	p, ok := PeerFrom(ctx)
	if !ok {
		return nil, ErrNoClient
	}
	if len(reqs) == 0 {
		return map[string]InputResponse{}, nil
	}
	var raw map[string]json.RawMessage
	var err error
	if ip, ok := p.(InputPeer); ok {
		raw, err = ip.Input(ctx, reqs)
	} else {
		raw, err = requestEach(ctx, p, reqs)
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]InputResponse, len(reqs))
	for k, r := range reqs {
		out[k] = InputResponse{Method: r.Method, Result: raw[k]}
	}
	return out, nil
}

// requestEach asks a peer without Input for each request in turn, in key order.
func requestEach(ctx context.Context, p Peer, reqs map[string]InputRequest) (map[string]json.RawMessage, error) {
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(map[string]json.RawMessage, len(reqs))
	for _, k := range keys {
		res, err := p.Request(ctx, reqs[k].Method, reqs[k].Params)
		if err != nil {
			return nil, err
		}
		out[k] = res
	}
	return out, nil
}

// State returns the handler's state: what it last gave [SetState], in this run or (in the modern
// era) in an earlier round of the same request, carried in the request state. It is nil until
// then, and outside the engine.
func State(ctx context.Context) []byte {
	if p, ok := PeerFrom(ctx); ok {
		if ip, ok := p.(InputPeer); ok {
			return ip.State()
		}
	}
	return nil
}

// SetState sets the handler's state, which [State] returns from then on. In the modern era it is
// carried, integrity-protected, to the next round of the request when the handler's [Input]
// needs one, so that work done before Input (an identifier made, a lookup) need not be done
// again. It is bounded (with the answers carried) by 64 KiB; a larger state makes the next
// round fail. It returns [ErrNoClient] outside the engine.
func SetState(ctx context.Context, state []byte) error {
	p, ok := PeerFrom(ctx)
	if !ok {
		return ErrNoClient
	}
	ip, ok := p.(InputPeer)
	if !ok {
		return ErrNoClient
	}
	ip.SetState(state)
	return nil
}
