package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/internal/mrtr"
	"github.com/toolgrain/toolgrain/internal/principal"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// Multi-round-trip requests (MCP 2026-07-28). A modern request cannot be interrupted by a
// request to the client: when its handler asks for input the client has not given, the engine
// answers the request with an input_required result that lists what it needs and carries a
// sealed requestState, and ends the handler's run. The client retries the request (a new id)
// with its answers; the handler runs again from the start, and its requests for input are
// answered, in order, from the answers of this retry and, through the request state, of every
// earlier round. A handler written for a legacy session (client.Elicit and the like) works
// unchanged: each of its requests gets a key of its own ("elicitation-1", "sampling-2", ...).

// callInput is the multi-round-trip state of one modern tools/call, prompts/get or
// resources/read: the answers at hand, and what the next round's request state is made of.
type callInput struct {
	eng    *Engine
	id     protocol.ID
	caps   *protocol.ClientCapabilities
	bind   mrtr.State // method, target, digest and subject of the request
	round  int        // rounds so far
	answer map[string]json.RawMessage
	state  []byte // the handler's state carried from the previous round
	// args are the request's arguments, whose digest binds a request state to the request: it
	// is computed only when a state is opened or sealed, which most calls never do.
	args json.RawMessage

	mu       sync.Mutex
	consumed map[string]json.RawMessage // answers the handler has read in this run
	keys     autoKeys                   // keys given to requests without one
}

// inputFor reads the input of a modern request: the answers of its inputResponses and the
// sealed requestState of an earlier round, which must verify, be unexpired and belong to this
// very request (method, target, arguments and caller). A failure is the -32602 error to answer.
func (c *connectionActor) inputFor(m *protocol.Message, method, target string, args json.RawMessage, p protocol.InputParams, caller *tools.Identity) (*callInput, *protocol.WireError) {
	answers, werr := protocol.ReadInputResponses(p.InputResponses)
	if werr != nil {
		return nil, werr
	}
	in := &callInput{
		eng:  c.eng,
		id:   m.ID,
		caps: c.modern.env.Capabilities,
		bind: mrtr.State{Method: method, Target: target, Subject: subjectOf(caller)},
		args: args,
	}
	if len(answers) > 0 || p.RequestState != nil {
		in.answer = make(map[string]json.RawMessage, len(answers))
	}
	if p.RequestState != nil {
		in.bind.Digest = mrtr.Digest(args)
		st, err := c.eng.sealer.Open(*p.RequestState)
		if err == nil && !st.Matches(in.bind.Method, in.bind.Target, in.bind.Digest, in.bind.Subject) {
			err = mrtr.ErrMismatch
		}
		if err != nil {
			return nil, protocol.ErrInvalidParams("%s", err.Error())
		}
		in.round, in.state = st.Round, st.Handler
		maps.Copy(in.answer, st.Responses)
	}
	for k, v := range answers {
		if _, replay := in.answer[k]; !replay { // an answer of an earlier round stands
			in.answer[k] = v
		}
	}
	return in, nil
}

// subjectOf is the key a caller's requestState is bound to: a user's and a client's subjects
// apart (internal/principal).
func subjectOf(id *tools.Identity) string { return principal.Key(id) }

// autoKey returns the key of the next request for input made without one (client.Elicit and
// the like): the method's short name and its count in this run, the same in every run of a
// handler that asks in the same order.
func (in *callInput) autoKey(method string) string { return in.keys.next(method) }

// autoKeys gives keys to the requests for input a handler makes without one: the method's short
// name and its count in the run.
type autoKeys struct {
	mu sync.Mutex
	n  map[string]int // per method
}

func (a *autoKeys) next(method string) string {
	name := method
	switch method {
	case protocol.MethodElicitationCreate:
		name = "elicitation"
	case protocol.MethodSamplingCreateMessage:
		name = "sampling"
	case protocol.MethodRootsList:
		name = "roots"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = make(map[string]int)
	}
	a.n[name]++
	return name + "-" + strconv.Itoa(a.n[name])
}

// ask returns the answers to reqs when the client has given them all. Otherwise it has the
// call answered with an input_required result for the missing ones (each of which the request
// must have declared the capability for) and returns client.ErrInputRequired once the call's
// context ends, which the answer brings about.
func (in *callInput) ask(ctx context.Context, p *callPeer, reqs map[string]client.InputRequest) (map[string]json.RawMessage, error) {
	if err := checkKeys(reqs); err != nil {
		return nil, err
	}
	in.mu.Lock()
	out := make(map[string]json.RawMessage, len(reqs))
	var missing map[string]protocol.InputRequest
	for k, r := range reqs {
		if a, ok := in.answer[k]; ok {
			out[k] = a
			continue
		}
		req, err := inputRequestFor(in.caps, r)
		if err != nil {
			in.mu.Unlock()
			return nil, err
		}
		if missing == nil {
			missing = make(map[string]protocol.InputRequest)
		}
		missing[k] = req
	}
	if in.consumed == nil {
		in.consumed = make(map[string]json.RawMessage)
	}
	maps.Copy(in.consumed, out)
	if missing == nil {
		in.mu.Unlock()
		return out, nil
	}
	if in.bind.Digest == "" {
		in.bind.Digest = mrtr.Digest(in.args)
	}
	st := in.bind
	st.Round = in.round + 1
	st.Responses = maps.Clone(in.consumed)
	st.Handler = p.State()
	in.mu.Unlock()

	sealed, err := in.eng.sealer.Seal(&st)
	if err != nil {
		return nil, fmt.Errorf("client: input required: %w", err)
	}
	frame, err := protocol.EncodeResultWith(in.id, &protocol.InputRequiredResult{InputRequests: missing, RequestState: sealed},
		&protocol.Annotation{ResultType: protocol.ResultInputRequired, Meta: in.eng.serverMeta})
	if err != nil {
		return nil, fmt.Errorf("client: input required: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	p.conn.root.Send(p.owner, &inputRequired{frame: frame})
	<-ctx.Done()
	return nil, client.ErrInputRequired
}

// inputRequestFor returns the wire form of r, a request for input the client must have declared
// the capability for in caps.
func inputRequestFor(caps *protocol.ClientCapabilities, r client.InputRequest) (protocol.InputRequest, error) {
	if err := client.CheckCapability(caps, r.Method, r.Params); err != nil {
		return protocol.InputRequest{}, err
	}
	params, err := inputParams(r)
	if err != nil {
		return protocol.InputRequest{}, err
	}
	return protocol.InputRequest{Method: r.Method, Params: params}, nil
}

// inputParams encodes the params of a request for input; a roots listing has {}.
func inputParams(r client.InputRequest) (json.RawMessage, error) {
	if r.Params == nil {
		return json.RawMessage(`{}`), nil
	}
	b, err := json.Marshal(r.Params)
	if err != nil {
		return nil, fmt.Errorf("client: %s params: %w", r.Method, err)
	}
	return b, nil
}

// checkKeys rejects requests for input the protocol cannot carry: an empty key, or a method
// other than elicitation, sampling and roots.
func checkKeys(reqs map[string]client.InputRequest) error {
	for k, r := range reqs {
		if strings.TrimSpace(k) == "" {
			return errors.New("client: a request for input needs a non-empty key")
		}
		switch r.Method {
		case protocol.MethodElicitationCreate, protocol.MethodSamplingCreateMessage, protocol.MethodRootsList:
		default:
			return fmt.Errorf("client: %q is not a request for input (want elicitation, sampling or roots)", r.Method)
		}
	}
	return nil
}
