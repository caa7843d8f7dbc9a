package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/tools"
)

// Hostile input: every test sends what a broken or malicious client could, checks the exact
// answer where one is due, that the cost stayed bounded, and that the connection still serves.

// heapPeak samples the live heap while a test feeds the server. Each sample collects garbage
// first, so that it measures what is retained, not how far the collector let garbage grow.
type heapPeak struct{ base, peak uint64 }

func newHeapPeak() *heapPeak {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &heapPeak{base: ms.HeapAlloc, peak: ms.HeapAlloc}
}

func (h *heapPeak) sample() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.peak = max(h.peak, ms.HeapAlloc)
}

// check fails the test if the heap grew by more than limit bytes over its start.
func (h *heapPeak) check(t *testing.T, limit uint64, what string) {
	t.Helper()
	if grew := h.peak - min(h.base, h.peak); grew > limit {
		t.Errorf("%s: the heap grew by %d MiB, more than %d MiB", what, grew>>20, limit>>20)
	}
}

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestHostileDeepNesting(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	c.Expect(call("1", "echo", `{"text":"x","deep":`+nested(20000)+`}`),
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: JSON nested deeper than 10000 levels"}}`)
	// Just under the limit the message is read, and the arguments get their feedback.
	c.Expect(call("2", "echo", `{"text":"x","deep":`+nested(9000)+`}`),
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"invalid arguments: deep: unexpected property"}],"isError":true}}`)
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":`+strings.Repeat(`{"a":`, 9000)+`1`+strings.Repeat(`}`, 9000)+`}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`)
	c.Expect(call("4", "echo", `{"text":"ok"}`), echoResult("4", "ok"))
}

func TestHostileHugeStringsAndArrays(t *testing.T) {
	list := tools.Tool{
		Name:        "list",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}}}`),
		Handler:     tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) { return tools.TextResult("ok"), nil }),
	}
	c := startStdio(t, toolgrain.Config{Tools: append(demo.Tools(), list)})
	c.Initialize()
	// 30,000 wrong items: the feedback lists 20 and counts the rest.
	items := strings.TrimSuffix(strings.Repeat("0,", 30000), ",")
	c.Send(call("1", "list", `{"items":[`+items+`]}`))
	got := c.Recv()
	want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"invalid arguments: items/0: must be string, got number; items/1: must be string, got number;`
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "items/19: must be string, got number; and 29980 more") || len(got) > 2048 {
		t.Errorf("feedback for 30,000 bad items (%d bytes): %.300s", len(got), got)
	}
	// A string of 3 MiB fits the 4 MiB default; one of 5 MiB does not, and costs no more
	// than the limit to skip.
	h := newHeapPeak()
	text := strings.Repeat("s", 3<<20)
	c.Expect(call("2", "echo", `{"text":"`+text+`"}`), echoResult("2", text))
	c.Expect(call("3", "echo", `{"text":"`+strings.Repeat("s", 5<<20)+`"}`),
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message exceeds the limit of 4194304 bytes"}}`)
	h.sample()
	h.check(t, 96<<20, "3 and 5 MiB strings")
	c.Expect(call("4", "echo", `{"text":"ok"}`), echoResult("4", "ok"))
}

func TestHostileIDs(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	// Ids of any size are echoed exactly; their cost is bounded by the message size.
	bigInt := "9" + strings.Repeat("0", 100000)
	c.ExpectPing(bigInt)
	bigStr := `"` + strings.Repeat("i", 1<<20) + `"`
	c.Expect(call(bigStr, "echo", `{"text":"big id"}`), echoResult(bigStr, "big id"))
	c.Expect(`{"jsonrpc":"2.0","id":-0,"method":"ping"}`, `{"jsonrpc":"2.0","id":-0,"result":{}}`)

	// Duplicates of an id in flight are refused, whatever their spelling; 5 and "5" differ.
	c.Send(call(`"a"`, "sleep", longSleep))
	c.Expect(call(`"\u0061"`, "echo", `{"text":"x"}`),
		`{"jsonrpc":"2.0","id":"\u0061","error":{"code":-32600,"message":"Invalid Request: id \"\\u0061\" is already in use by a request in flight"}}`)
	c.Send(call("5", "sleep", longSleep))
	c.Expect(call(`"5"`, "echo", `{"text":"string five"}`), echoResult(`"5"`, "string five"))
	for range 1000 {
		c.Expect(call("5", "echo", `{"text":"x"}`),
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: id 5 is already in use by a request in flight"}}`)
	}
	// The originals were undisturbed: cancelled now, they never answer, and their ids are free.
	c.Send(mcptest.CancelFor(`"a"`))
	c.Send(mcptest.CancelFor("5"))
	c.Expect(call(`"a"`, "echo", `{"text":"reused"}`), echoResult(`"a"`, "reused"))
	c.Expect(call("5", "echo", `{"text":"reused"}`), echoResult("5", "reused"))
}

func TestHostileInvalidUTF8(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	c.Expect(call("1", "echo", "{\"text\":\"bad \xff\xfe bytes\"}"),
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request: message is not valid UTF-8"}}`)
	c.Expect("{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\",\"method\":\"ping\"}",
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id string is not valid UTF-8"}}`)
	c.Expect("\xff\xfe\xfd", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset 1"}}`)
	// Escaped, a lone surrogate is valid JSON; it becomes U+FFFD like encoding/json makes it.
	c.Expect(call("2", "echo", `{"text":"\ud800"}`), echoResult("2", "\ufffd"))
	c.Expect(call("3", "echo", `{"text":"ok"}`), echoResult("3", "ok"))
}

func TestHostileNULByte(t *testing.T) {
	t.Parallel()
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	c.Expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"a\x00b\"}}}",
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset 93"}}`)
	c.Expect("\x00", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte offset 1"}}`)
	// Escaped, NUL is an ordinary character, and goes back escaped.
	c.Expect(call("2", "echo", `{"text":"a\u0000b"}`), `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a\u0000b"}]}}`)
	c.Expect(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a\u0000b","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: unknown tool \"a\\x00b\""}}`)
	c.ExpectPing("4")
}

// TestHostileEndlessLine: a line that does not end costs a bounded amount of memory however
// long it runs; when it finally ends it is answered as too large and serving goes on.
func TestHostileEndlessLine(t *testing.T) {
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools(), Limits: toolgrain.LimitsConfig{MaxMessageSize: 4096}})
	c.Initialize()
	h := newHeapPeak()
	chunk := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("e", 64<<10))
	for i := 0; i < 1024; i++ { // 64 MiB with no newline
		if _, err := c.Input().Write(chunk); err != nil {
			t.Fatal(err)
		}
		chunk = chunk[:64<<10] // the rest is all e
		for j := range chunk {
			chunk[j] = 'e'
		}
		if i%64 == 0 {
			h.sample()
		}
	}
	h.sample()
	h.check(t, 16<<20, "64 MiB in one line")
	c.Expect(`"}}}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message exceeds the limit of 4096 bytes"}}`)
	c.ExpectPing("2")
}

// TestHostileNotificationFlood: notifications and stray responses are never answered, cost a
// bounded amount of memory, and do not delay the next request.
func TestHostileNotificationFlood(t *testing.T) {
	n := 100000
	if raceEnabled {
		n = 20000
	}
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	flood := []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/whatever","params":{"pad":"` + strings.Repeat("p", 200) + `"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
		`{"jsonrpc":"2.0","id":77,"result":{}}`,
		`{"jsonrpc":"2.0","id":78,"error":{"code":-1,"message":"no"}}`,
	}
	h := newHeapPeak()
	var batch strings.Builder
	for i := range n {
		batch.WriteString(flood[i%len(flood)])
		batch.WriteByte('\n')
		if batch.Len() > 64<<10 || i == n-1 {
			if _, err := io.WriteString(c.Input(), batch.String()); err != nil {
				t.Fatal(err)
			}
			batch.Reset()
			h.sample()
		}
	}
	c.ExpectPing(`"after the flood"`) // the first line out: nothing answered the flood
	h.check(t, 64<<20, fmt.Sprintf("%d notifications", n))
}

// TestHostileCancelFlood: cancellations of unknown, finished or malformed ids change nothing
// and cost nothing lasting; the call in flight they do not name is undisturbed.
func TestHostileCancelFlood(t *testing.T) {
	n := 100000
	if raceEnabled {
		n = 20000
	}
	c := startStdio(t, toolgrain.Config{Tools: demo.Tools()})
	c.Initialize()
	c.Send(call(`"keep"`, "sleep", longSleep))
	c.Expect(call("1", "echo", `{"text":"done"}`), echoResult("1", "done"))
	h := newHeapPeak()
	var batch strings.Builder
	for i := range n {
		switch i % 4 {
		case 0:
			batch.WriteString(mcptest.CancelFor(fmt.Sprint(1000000 + i))) // unknown
		case 1:
			batch.WriteString(mcptest.CancelFor("1")) // finished
		case 2:
			batch.WriteString(mcptest.CancelFor(`{"no":"id"}`)) // malformed
		case 3:
			batch.WriteString(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"keep\u0000"}}`)
		}
		batch.WriteByte('\n')
		if batch.Len() > 64<<10 || i == n-1 {
			if _, err := io.WriteString(c.Input(), batch.String()); err != nil {
				t.Fatal(err)
			}
			batch.Reset()
			h.sample()
		}
	}
	// "keep" is still in flight: its id is taken.
	c.Expect(call(`"keep"`, "echo", `{"text":"x"}`),
		`{"jsonrpc":"2.0","id":"keep","error":{"code":-32600,"message":"Invalid Request: id \"keep\" is already in use by a request in flight"}}`)
	h.check(t, 64<<20, fmt.Sprintf("%d cancellations", n))
	c.Send(mcptest.CancelFor(`"keep"`))
	c.Expect(call(`"keep"`, "echo", `{"text":"free"}`), echoResult(`"keep"`, "free"))
}
