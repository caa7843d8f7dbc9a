package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/internal/demo"
	"github.com/toolgrain/toolgrain/internal/mcptest"
	"github.com/toolgrain/toolgrain/protocol"
)

// fuzzSeeds are stdio conversations (newline-separated messages) for FuzzRequestPath; the
// committed corpus in testdata/fuzz/FuzzRequestPath holds more.
var fuzzSeeds = []string{
	call("1", "echo", `{"text":"hi"}`) + "\n" + call("2", "greet", `{"name":"Ada"}`),
	call("1", "fail", `{"mode":"error"}`) + "\n" + call("2", "fail", `{"mode":"panic"}`) + "\n" +
		call("3", "fail", `{"mode":"bad-output"}`) + "\n" + call("4", "fail", `{"mode":"provider"}`),
	call(`"s"`, "sleep", `{"ms":5}`) + "\n" + mcptest.CancelFor(`"s"`) + "\n" + `{"jsonrpc":"2.0","id":"p","method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1},"_meta":{"progressToken":"t"}}}`,
	call("5", "sleep", longSleep) + "\n" + call("5", "echo", `{"text":"dup"}`),
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"dDE"}}` + "\n" + `[1]` + "\n" + `{"jsonrpc":"2.0",`,
	call("9", "nope", `{}`) + "\n" + `{"jsonrpc":"2.0","id":2,"method":"nope/nope"}` + "\n" + "\x00\xff",
	// A 2025-03-26 session, whose batches are served.
	mcptest.InitializeAt("2025-03-26", `{}`) + "\n" + batch(call("1", "echo", `{"text":"a"}`), `7`, call("2", "fail", `{"mode":"panic"}`)) + "\n" + `[]`,
}

// FuzzRequestPath feeds raw bytes, as one stdio connection, to a real server and checks what comes
// back: every line is one valid JSON-RPC response or notification, no request is answered more
// often than it was sent, no error is an internal one, and the marker of the fail tool's
// internal failures never appears.
func FuzzRequestPath(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(true, []byte(s))
	}
	f.Add(false, []byte(call("1", "echo", `{"text":"before initialize"}`)))
	// A short EndOfInputGrace: calls still running when an input ends (a long sleep) are cancelled
	// after 100 ms instead of 5 s, which no check here depends on.
	srv, err := toolgrain.NewServer(toolgrain.Config{Tools: demo.Tools(), OnError: func(error, *toolgrain.ToolErrorDetails) {},
		Limits: toolgrain.LimitsConfig{EndOfInputGrace: 100 * time.Millisecond}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := srv.Close(); err != nil {
			f.Error(err)
		}
	})
	f.Fuzz(func(t *testing.T, initialize bool, data []byte) {
		var in bytes.Buffer
		if initialize {
			in.WriteString(mcptest.InitRequest + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
		}
		in.Write(data)
		var out bytes.Buffer
		if err := srv.ServeStdio(context.Background(), bytes.NewReader(in.Bytes()), &out); err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
		checkSession(t, in.Bytes(), out.Bytes(), initialize)
	})
}

func checkSession(t *testing.T, input, output []byte, initialized bool) {
	// What was asked: the ids of the lines that could be read, by key; the others count as
	// anonymous, for errors with id null.
	sent := map[string]int{}
	anonymous := 0
	for _, line := range strings.Split(string(input), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.Trim(line, " \t\r\n") == "" {
			continue
		}
		m, items, _ := protocol.DecodeInput([]byte(line))
		if items != nil {
			// A batch: answered element by element, or refused (or empty) with one error.
			anonymous++
			for _, it := range items {
				if it.Msg == nil || it.Msg.ID.IsZero() {
					anonymous++
					continue
				}
				sent[it.Msg.ID.Key()]++
			}
			continue
		}
		if m == nil || m.ID.IsZero() {
			anonymous++
			continue
		}
		sent[m.ID.Key()]++
	}
	answered := map[string]int{}
	sawInit := false
	var lines []string
	for _, line := range strings.Split(strings.TrimSuffix(string(output), "\n"), "\n") {
		var batch []json.RawMessage
		if strings.HasPrefix(line, "[") && json.Unmarshal([]byte(line), &batch) == nil {
			for _, m := range batch {
				lines = append(lines, string(m)) // each a response of the batch's answer
			}
			continue
		}
		lines = append(lines, line)
	}
	for _, line := range lines {
		if line == "" {
			continue
		}
		if strings.Contains(line, demo.Marker) {
			t.Fatalf("internal detail on the wire: %s", line)
		}
		if !utf8.ValidString(line) {
			t.Fatalf("invalid UTF-8 on the wire: %q", line)
		}
		m, werr := protocol.Decode([]byte(line))
		if werr != nil {
			t.Fatalf("the server sent %q, which does not decode: %v", line, werr)
		}
		switch {
		case m.IsNotification():
			if m.Method != protocol.MethodProgress {
				t.Fatalf("unexpected notification %s", line)
			}
			continue
		case !m.IsResponse():
			t.Fatalf("the server sent a request: %s", line)
		}
		if m.Error != nil {
			switch m.Error.Code {
			case protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeMethodNotFound,
				protocol.CodeInvalidParams, protocol.CodeServerBusy:
			default:
				t.Fatalf("error code %d: %s", m.Error.Code, line)
			}
		}
		if m.ID.IsZero() {
			if anonymous--; anonymous < 0 {
				t.Fatalf("more errors with id null than unreadable lines; last: %s", line)
			}
			continue
		}
		k := m.ID.Key()
		if answered[k]++; answered[k] > sent[k] {
			t.Fatalf("id %s answered %d times, sent %d times; last: %s", m.ID, answered[k], sent[k], line)
		}
		if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion"`) {
			sawInit = true
		}
	}
	if initialized && !sawInit {
		t.Fatalf("initialize was not answered:\n%s", output)
	}
}
