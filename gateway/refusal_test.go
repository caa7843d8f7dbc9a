package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
)

// An upstream's request to the client that the gateway cannot pass on gets an answer that says
// why: the capability the client of the call did not declare, the end of the call it belongs
// to, or the client's own error as the client gave it.
func TestUpstreamRequestRefusals(t *testing.T) {
	t.Parallel()
	asked := filepath.Join(t.TempDir(), "asked")
	f := newFront(t, toolgrain.Config{}, fake("fk", map[string]string{"FAKE_ASKED": asked}))
	ctx := ctxT(t)

	// f.c declared no capability: each request is refused with the capability it needs.
	for _, c := range []struct{ tool, want string }{
		{"fk_sample", `{"code":-32601,"message":"sampling/createMessage refused: the client of this call did not declare the capability sampling"}`},
		{"fk_roots", `{"code":-32601,"message":"roots/list refused: the client of this call did not declare the capability roots"}`},
		{"fk_elicit", `{"code":-32601,"message":"elicitation/create refused: the client of this call did not declare the capability elicitation (form mode)"}`},
	} {
		if got := text(f.call(t, c.tool, `{}`)); got != c.want {
			t.Errorf("%s: the upstream got\n %s\nwant\n %s", c.tool, got, c.want)
		}
	}
	// A client that declared form elicitation only: a URL elicitation is refused.
	c := legacyAsker(t, f)
	res, err := c.CallTool(ctx, "fk_ask_url", json.RawMessage(`{}`))
	if want := `{"code":-32601,"message":"elicitation/create refused: the client of this call did not declare the capability elicitation.url"}`; err != nil || text(res) != want {
		t.Errorf("URL elicitation: %v %+v, want %s", err, res, want)
	}

	// The client's own error reaches the upstream as the client gave it.
	done := make(chan string, 1)
	go func() {
		res, err := c.CallTool(ctx, "fk_elicit", json.RawMessage(`{}`))
		if err != nil {
			done <- err.Error()
			return
		}
		done <- text(res)
	}()
	req := nextRequest(t, c, protocol.MethodElicitationCreate)
	if err := c.Send(protocol.EncodeError(req.ID, &protocol.WireError{Code: -1, Message: "User declined"})); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != `{"code":-1,"message":"User declined"}` {
		t.Errorf("the client's error: the upstream got %s", got)
	}

	// A call cancelled while its elicitation waits for the client: the upstream is told that
	// the call is over (and the client gets nothing more for the call).
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(cctx, "fk_elicit", json.RawMessage(`{}`))
		errc <- err
	}()
	nextRequest(t, c, protocol.MethodElicitationCreate)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	want := `elicitation/create {"code":-32600,"message":"elicitation/create refused: the call it belongs to is over: request cancelled by the client"}`
	mcptest.Eventually(t, "the upstream told that the call is over", func() bool {
		b, _ := os.ReadFile(asked)
		return strings.Contains(string(b), want)
	})
	if b, _ := os.ReadFile(asked); strings.Contains(string(b), "did not answer") {
		t.Errorf("the upstream got:\n%s", b)
	}
}

// nextRequest reads c's messages until a request for method, and returns it.
func nextRequest(t *testing.T, c *toolgrain.InMemoryClient, method string) *protocol.Message {
	t.Helper()
	ctx := ctxT(t)
	for {
		frame, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", method, err)
		}
		if m, _ := protocol.Decode(frame); m != nil && m.Method == method {
			return m
		}
	}
}
