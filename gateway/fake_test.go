package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fake upstream: this test binary, run with GATEWAY_FAKE_UPSTREAM set, serves a small MCP
// server on its standard input and output, written by hand so that every misbehaviour a
// gateway must absorb can be produced on demand. It speaks the initialize era only, at the
// revision FAKE_VERSION (2024-11-05 unless set), and refuses server/discover.
//
// Tools: echo {text}; public (an isError result); rpcerror (a JSON-RPC error whose message holds
// a secret); badout and goodout (output schema {n: integer}; badout breaks it); slow (answers
// only once cancelled: a late answer, as go-sdk gives); crash (the process exits mid-call);
// progress (two progress notifications, then the answer); log (a log message, then the answer);
// elicit, ask_url (a URL elicitation), sample and roots (ask the client, answer with what it said; with
// FAKE_ASKED set, each answer the upstream gets is also appended to that file, one line, method
// then answer, even when its call is over). With FAKE_META_TAGS set, echo, public and goodout
// declare tags in their _meta, some of them bad.

const fakeSecret = "SECRET-upstream-detail"

func runFake() {
	if f := os.Getenv("FAKE_FAIL_UNLESS"); f != "" {
		if _, err := os.Stat(f); err != nil {
			fmt.Fprintln(os.Stderr, "fake: not yet")
			os.Exit(1)
		}
	}
	if f := os.Getenv("FAKE_PIDFILE"); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	version := os.Getenv("FAKE_VERSION")
	if version == "" {
		version = "2024-11-05"
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	write := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
		mu.Unlock()
	}
	type msg struct {
		ID     json.RawMessage `json:"id,omitempty"`
		Method string          `json:"method,omitempty"`
		Params json.RawMessage `json:"params,omitempty"`
		Result json.RawMessage `json:"result,omitempty"`
		Error  json.RawMessage `json:"error,omitempty"`
	}
	result := func(id json.RawMessage, r any) { write(map[string]any{"jsonrpc": "2.0", "id": id, "result": r}) }
	failWith := func(id json.RawMessage, code int, text string) {
		write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": text}})
	}
	textResult := func(s string) map[string]any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	var cmu sync.Mutex
	cancelled := map[string]chan struct{}{}
	answers := map[string]chan json.RawMessage{}
	nextID := 0
	ask := func(method string, params any) json.RawMessage {
		cmu.Lock()
		nextID++
		id := "f" + strconv.Itoa(nextID)
		ch := make(chan json.RawMessage, 1)
		answers[`"`+id+`"`] = ch
		cmu.Unlock()
		write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		ans := <-ch
		if f := os.Getenv("FAKE_ASKED"); f != "" {
			if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				fmt.Fprintf(fh, "%s %s\n", method, ans)
				fh.Close()
			}
		}
		return ans
	}
	schema := map[string]any{"type": "object"}
	outSchema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []string{"n"}}
	toolList := []any{
		map[string]any{"name": "echo", "description": "echo", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}}},
		map[string]any{"name": "public", "description": "a public error", "inputSchema": schema},
		map[string]any{"name": "rpcerror", "description": "a JSON-RPC error", "inputSchema": schema},
		map[string]any{"name": "badout", "description": "bad output", "inputSchema": schema, "outputSchema": outSchema},
		map[string]any{"name": "goodout", "description": "good output", "inputSchema": schema, "outputSchema": outSchema},
		map[string]any{"name": "slow", "description": "answers once cancelled", "inputSchema": schema},
		map[string]any{"name": "crash", "description": "exits", "inputSchema": schema},
		map[string]any{"name": "progress", "description": "progress", "inputSchema": schema},
		map[string]any{"name": "log", "description": "logs", "inputSchema": schema},
		map[string]any{"name": "elicit", "description": "asks the user", "inputSchema": schema},
		map[string]any{"name": "ask_url", "description": "sends the user to a URL", "inputSchema": schema},
		map[string]any{"name": "sample", "description": "asks the client's model", "inputSchema": schema},
		map[string]any{"name": "roots", "description": "lists the client's roots", "inputSchema": schema},
	}
	if os.Getenv("FAKE_META_TAGS") != "" {
		// Tags declared in _meta: echo's good and bad ones, public's member not an array,
		// goodout's _meta without tags.
		toolList[0].(map[string]any)["_meta"] = map[string]any{"io.github.toolgrain/tags": []string{"beta", "a b", strings.Repeat("x", 100), "ok.1"}, "other": true}
		toolList[1].(map[string]any)["_meta"] = map[string]any{"io.github.toolgrain/tags": "beta"}
		toolList[4].(map[string]any)["_meta"] = map[string]any{"unrelated": 1}
	}
	if os.Getenv("FAKE_ONE_TOOL") != "" {
		toolList = toolList[:1]
	}
	call := func(m msg, stop chan struct{}) {
		var p struct {
			Name string `json:"name"`
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
			Arguments map[string]any `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		switch p.Name {
		case "echo":
			result(m.ID, textResult(fmt.Sprint(p.Arguments["text"])))
		case "public":
			r := textResult("public failure message")
			r["isError"] = true
			result(m.ID, r)
		case "rpcerror":
			failWith(m.ID, -32000, "database down: "+fakeSecret)
		case "badout":
			r := textResult(`{"n":"x"}`)
			r["structuredContent"] = map[string]any{"n": "x"}
			result(m.ID, r)
		case "goodout":
			r := textResult(`{"n":1}`)
			r["structuredContent"] = map[string]any{"n": 1}
			result(m.ID, r)
		case "slow":
			<-stop
			result(m.ID, textResult("late"))
		case "crash":
			os.Exit(3)
		case "progress":
			for i := 1; i <= 2; i++ {
				write(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i, "total": 2}})
			}
			result(m.ID, textResult("done"))
		case "log":
			write(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "warning", "logger": "fake", "data": "from upstream"}})
			result(m.ID, textResult("logged"))
		case "elicit":
			ans := ask("elicitation/create", map[string]any{"message": "Your name?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			result(m.ID, textResult(string(ans)))
		case "ask_url":
			ans := ask("elicitation/create", map[string]any{"mode": "url", "message": "Sign in", "url": "https://example.com/login", "elicitationId": "e1"})
			result(m.ID, textResult(string(ans)))
		case "sample":
			ans := ask("sampling/createMessage", map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "hi"}}}, "maxTokens": 10})
			result(m.ID, textResult(string(ans)))
		case "roots":
			result(m.ID, textResult(string(ask("roots/list", map[string]any{}))))
		default:
			failWith(m.ID, -32602, "unknown tool "+p.Name)
		}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<22)
	for in.Scan() {
		var m msg
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Method == "" && len(m.ID) > 0: // an answer to one of ours
			cmu.Lock()
			ch := answers[string(m.ID)]
			delete(answers, string(m.ID))
			cmu.Unlock()
			if ch != nil {
				if len(m.Error) > 0 {
					ch <- m.Error
				} else {
					ch <- m.Result
				}
			}
		case m.Method == "initialize":
			result(m.ID, map[string]any{"protocolVersion": version, "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}, "logging": map[string]any{}},
				"serverInfo": map[string]any{"name": "fake", "version": "1"}})
		case m.Method == "notifications/initialized":
		case m.Method == "notifications/cancelled":
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			cmu.Lock()
			if ch := cancelled[string(p.RequestID)]; ch != nil {
				close(ch)
				delete(cancelled, string(p.RequestID))
			}
			cmu.Unlock()
		case m.Method == "tools/list":
			result(m.ID, map[string]any{"tools": toolList})
		case m.Method == "ping":
			result(m.ID, map[string]any{})
		case m.Method == "tools/call":
			// The call's cancellation is known before it runs: one that arrives at once
			// still reaches it.
			stop := make(chan struct{})
			cmu.Lock()
			cancelled[string(m.ID)] = stop
			cmu.Unlock()
			go call(m, stop)
		case len(m.ID) > 0:
			failWith(m.ID, -32601, "Method not found: "+m.Method)
		}
	}
	time.Sleep(10 * time.Millisecond)
}
