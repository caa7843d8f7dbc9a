package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/client"
	"github.com/toolgrain/toolgrain/gateway"
	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// modernMeta is the envelope of a modern request that declares caps.
func modernMeta(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// modernCall makes a modern tools/call on c and returns its result.
func modernCall(t *testing.T, c *toolgrain.InMemoryClient, tool, args, caps string, more ...string) map[string]json.RawMessage {
	t.Helper()
	extra := ""
	for _, m := range more {
		extra += "," + m
	}
	raw, err := c.Call(ctxT(t), protocol.MethodToolsCall, json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":%s%s,%s}`, tool, args, extra, modernMeta(caps))))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// A 2026-07-28 client is served statelessly in front of an upstream that speaks 2024-11-05 only,
// over stdio; the upstream's request to the client becomes an input round of the modern
// client's, after which the call is made again upstream, and answered.
func TestModernClientLegacyUpstream(t *testing.T) {
	t.Parallel()
	f := newFront(t, toolgrain.Config{}, fake("old", nil))
	if st := f.gw.Status()[0]; st.ProtocolVersion != "2024-11-05" {
		t.Fatalf("status: %+v", st)
	}
	res := modernCall(t, f.c, "old_echo", `{"text":"modern"}`, `{}`)
	if string(res["resultType"]) != `"complete"` || !strings.Contains(string(res["content"]), `"text":"modern"`) {
		t.Errorf("echo: %v", res)
	}
	res = modernCall(t, f.c, "old_rpcerror", `{}`, `{}`)
	if string(res["isError"]) != "true" || !strings.Contains(string(res["content"]), toolgrain.FailedText) {
		t.Errorf("rpcerror: %v", res)
	}

	caps := `{"elicitation":{}}`
	res = modernCall(t, f.c, "old_elicit", `{}`, caps)
	if string(res["resultType"]) != `"input_required"` {
		t.Fatalf("first round: %v", res)
	}
	var reqs map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(res["inputRequests"], &reqs); err != nil || len(reqs) != 1 {
		t.Fatalf("input requests: %s", res["inputRequests"])
	}
	answers := map[string]json.RawMessage{}
	for key, r := range reqs {
		if r.Method != protocol.MethodElicitationCreate || !strings.Contains(string(r.Params), "Your name?") {
			t.Errorf("input request %s: %+v", key, r)
		}
		answers[key] = json.RawMessage(`{"action":"accept","content":{"name":"Grace"}}`)
	}
	resp, _ := json.Marshal(answers)
	res = modernCall(t, f.c, "old_elicit", `{}`, caps, `"inputResponses":`+string(resp), `"requestState":`+string(res["requestState"]))
	if string(res["resultType"]) != `"complete"` || !strings.Contains(string(res["content"]), `Grace`) {
		t.Errorf("second round: %v", res)
	}
	// Without the capability, the upstream is told that the client cannot be asked.
	res = modernCall(t, f.c, "old_elicit", `{}`, `{}`)
	if !strings.Contains(string(res["content"]), "elicitation/create refused") {
		t.Errorf("without the capability: %v", res)
	}
}

// asker is an upstream whose tool ask elicits its argument's name from the client of its call.
func asker(t *testing.T) *toolgrain.Server {
	t.Helper()
	srv, err := toolgrain.NewServer(toolgrain.Config{Name: "asker", Tools: []tools.Tool{{
		Name: "ask", Description: "Asks the user.", InputSchema: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`),
		Handler: tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
			var in struct{ Who string }
			_ = json.Unmarshal(req.Arguments, &in)
			res, err := client.Elicit(ctx, &protocol.ElicitParams{Message: "Are you " + in.Who + "?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"me":{"type":"string"}}}`)})
			if err != nil {
				return nil, err
			}
			return tools.TextResult(in.Who + ":" + string(res.Content)), nil
		}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// legacyAsker is a legacy client of f's server that declares elicitation and answers each
// elicitation with the name in its message.
func legacyAsker(t *testing.T, f *front) *toolgrain.InMemoryClient {
	t.Helper()
	c, err := f.srv.ConnectInMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxT(t)
	if _, err := c.Call(ctx, protocol.MethodInitialize, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"asker","version":"1"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify(protocol.MethodInitialized, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// answerElicitations answers every elicitation c receives with the name its message asks about,
// until ctx ends.
func answerElicitations(ctx context.Context, c *toolgrain.InMemoryClient, seen *atomic.Int32) {
	for {
		frame, err := c.Receive(ctx)
		if err != nil {
			return
		}
		m, _ := protocol.Decode(frame)
		if m == nil || m.Method != protocol.MethodElicitationCreate {
			continue
		}
		var p protocol.ElicitParams
		_ = json.Unmarshal(m.Params, &p)
		who := strings.TrimSuffix(strings.TrimPrefix(p.Message, "Are you "), "?")
		seen.Add(1)
		answer, _ := protocol.EncodeResult(m.ID, map[string]any{"action": "accept", "content": map[string]string{"me": who}})
		_ = c.Send(answer)
	}
}

// The upstream's elicitation reaches the client whose call caused it, with several clients
// calling at once: over HTTP in either era of the upstream (its request on the call's own
// stream; or its input_required round, which the gateway turns into the client's request).
func TestElicitationRoutedToItsClient(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"legacy", "modern"} {
		t.Run(proto, func(t *testing.T) {
			up := asker(t)
			ts, _ := httpUpstream(t, up)
			f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "a", Protocol: proto, Source: gateway.HTTP{URL: ts.URL + "/mcp"}})
			ctx, cancel := context.WithCancel(ctxT(t))
			defer cancel()
			var wg sync.WaitGroup
			var seen atomic.Int32
			for i := range 4 {
				c := legacyAsker(t, f)
				go answerElicitations(ctx, c, &seen)
				for j := range 3 {
					who := fmt.Sprintf("client%d-call%d", i, j)
					wg.Add(1)
					go func() {
						defer wg.Done()
						res, err := c.CallTool(ctx, "a_ask", map[string]string{"who": who})
						if err != nil {
							t.Error(err)
							return
						}
						if got, want := text(res), who+`:{"me":"`+who+`"}`; got != want {
							t.Errorf("got %q, want %q", got, want)
						}
					}()
				}
			}
			wg.Wait()
			if seen.Load() != 12 {
				t.Errorf("elicitations: %d", seen.Load())
			}
		})
	}
}

// A 2025-11-25 session client in front of a 2026-07-28 upstream, and a 2026-07-28 client in
// front of it too: the upstream's input rounds become the session client's requests, or the
// modern client's own rounds.
func TestBothErasInFrontOfModernUpstream(t *testing.T) {
	t.Parallel()
	up := asker(t)
	f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "a", Source: gateway.InProcess{Server: up}})
	if st := f.gw.Status()[0]; st.ProtocolVersion != protocol.LatestModernVersion {
		t.Fatalf("status: %+v", st)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	c := legacyAsker(t, f)
	var seen atomic.Int32
	go answerElicitations(ctx, c, &seen)
	res, err := c.CallTool(ctx, "a_ask", map[string]string{"who": "ada"})
	if err != nil || text(res) != `ada:{"me":"ada"}` {
		t.Errorf("legacy client: %+v %v", res, err)
	}

	// The modern client: the upstream's round becomes the client's.
	caps := `{"elicitation":{}}`
	r := modernCall(t, f.c, "a_ask", `{"who":"bob"}`, caps)
	if string(r["resultType"]) != `"input_required"` {
		t.Fatalf("first round: %v", r)
	}
	var reqs map[string]json.RawMessage
	_ = json.Unmarshal(r["inputRequests"], &reqs)
	answers := map[string]json.RawMessage{}
	for key, req := range reqs {
		if !strings.Contains(string(req), "Are you bob?") {
			t.Errorf("request %s: %s", key, req)
		}
		answers[key] = json.RawMessage(`{"action":"accept","content":{"me":"bob"}}`)
	}
	resp, _ := json.Marshal(answers)
	r = modernCall(t, f.c, "a_ask", `{"who":"bob"}`, caps, `"inputResponses":`+string(resp), `"requestState":`+string(r["requestState"]))
	if string(r["resultType"]) != `"complete"` || !strings.Contains(string(r["content"]), `bob:{\"me\":\"bob\"}`) {
		t.Errorf("second round: %v", r)
	}
}

// OAuth client credentials against the upstream's authorization server: the gateway gets its
// own token (once, cached), and the upstream accepts nothing else.
func TestHTTPOAuthClientCredentials(t *testing.T) {
	var issued atomic.Int32
	var as *httptest.Server
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": as.URL, "token_endpoint": as.URL + "/token"})
		case "/token":
			id, secret, _ := r.BasicAuth()
			_ = r.ParseForm()
			if id != "gateway" || secret != "s3cret" || r.Form.Get("grant_type") != "client_credentials" || !strings.HasSuffix(r.Form.Get("resource"), "/mcp") {
				w.WriteHeader(http.StatusUnauthorized)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client"})
				return
			}
			issued.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-for-gateway", "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	defer as.Close()
	up := inner(t)
	upstreamHandler := up.Handler()
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-for-gateway" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		upstreamHandler.ServeHTTP(w, r)
	}))
	defer us.Close()
	t.Setenv("GW_SECRET", "s3cret")
	f := newFront(t, toolgrain.Config{}, gateway.Mount{Name: "web", Source: gateway.HTTP{URL: us.URL + "/mcp",
		OAuth: &gateway.OAuth{Issuer: as.URL, ClientID: "gateway", ClientSecret: "${env:GW_SECRET}"}}})
	for range 3 {
		if got := text(f.call(t, "web_echo", `{"text":"authorized"}`)); got != "authorized" {
			t.Errorf("echo: %q", got)
		}
	}
	if n := issued.Load(); n != 1 {
		t.Errorf("tokens issued: %d", n)
	}
}
