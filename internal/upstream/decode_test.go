package upstream

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

// validJSON says what encoding/json's Valid says, on valid and broken JSON alike.
func TestValidJSON(t *testing.T) {
	cases := []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e+3`, `-12.0E-1`, `true`, `false`, `null`, ` {"a" : [1, {"b": null}] } `,
		`"\u00e9\n\"\\\/\b\f\r\t"`, `"é"`, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`,
		``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`, `{1:2}`,
		`01`, `1.`, `.5`, `1e`, `1e+`, `-`, `+1`, `0x10`, `tru`, `nul`, `True`, `"a`, `"\x"`, `"\u12"`, `"\u12G4"`,
		"\"a\x01\"", "\"\t\"", `{"a":1}}`, `[1]]`, `1 2`, `"a" "b"`, `{"a":[}`, `{"a":{]}`, `"\`, `[`, `[1`,
	}
	for _, c := range cases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", c, got, want)
		}
	}
	// Every prefix and every one-byte change of valid messages.
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}[]",:\ 0123456789.eE+-tfnulrsaxu` + "\t\n\x01é")
	for _, c := range cases[:14] {
		for n := range len(c) {
			p := []byte(c[:n])
			if got, want := validJSON(p), json.Valid(p); got != want {
				t.Errorf("validJSON(%q) = %v, json.Valid %v", p, got, want)
			}
		}
		for range 2000 {
			m := []byte(c)
			if len(m) == 0 {
				continue
			}
			for range 1 + r.IntN(3) {
				m[r.IntN(len(m))] = alphabet[r.IntN(len(alphabet))]
			}
			if got, want := validJSON(m), json.Valid(m); got != want {
				t.Errorf("validJSON(%q) = %v, json.Valid %v", m, got, want)
			}
		}
	}
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if validJSON([]byte(deep)) {
		t.Error("validJSON took nesting deeper than maxDepth")
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c\u0041"}]}`, `-1.5e10`, `"\\"`, `[true,false,null]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) >= maxDepth {
			t.Skip()
		}
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// decodeLine reads an answer as protocol.Decode does, and hands everything else to it.
func TestDecodeLine(t *testing.T) {
	for _, c := range []struct {
		line string
		fast bool // read by the answer's own scanner
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`, true},
		{` { "result" : {} , "id" : 9 , "jsonrpc" : "2.0" } `, true},
		{`{"jsonrpc":"2.0","id":0,"result":{}}`, true},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, false},
		{`{"jsonrpc":"2.0","id":-3,"result":{"a":[1,{"b":"}"}]}}`, true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{},"result":{}}`, false},
		{`{"jsonrpc":"1.0","id":1,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":[]}`, false},
		{`{"jsonrpc":"2.0","id":1.5,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":-0,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":007,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":"s","result":{}}`, false},
		{`{"jsonrpc":"2.0","id":1e3,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{}`, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\"}}", false},
		{`[{"jsonrpc":"2.0","id":1,"result":{}}]`, false},
	} {
		line := []byte(c.line)
		key, _, fast := scanResult(line)
		if fast != c.fast {
			t.Errorf("%s: read by the answer's scanner: %v, want %v", c.line, fast, c.fast)
		}
		got, gerr := decodeLine(line)
		want, werr := protocol.Decode(line)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Code != werr.Code) {
			t.Errorf("%s: error %v, protocol.Decode's %v", c.line, gerr, werr)
		}
		if (got == nil) != (want == nil) {
			t.Errorf("%s: message %v, protocol.Decode's %v", c.line, got, want)
			continue
		}
		if got == nil {
			continue
		}
		if fast && string(key) != want.ID.Key() {
			t.Errorf("%s: key %s, the id's %s", c.line, key, want.ID.Key())
		}
		if got.ID != want.ID || got.Method != want.Method || !bytes.Equal(got.Result, want.Result) || !bytes.Equal(got.Params, want.Params) || (got.Error == nil) != (want.Error == nil) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.line, got, want)
		}
	}
	// The message owns its bytes: the reader's buffer is reused.
	line := []byte(`{"jsonrpc":"2.0","id":1,"result":{"a":1}}`)
	m, _ := decodeLine(line)
	copy(line, bytes.Repeat([]byte("x"), len(line)))
	if string(m.Result) != `{"a":1}` {
		t.Errorf("result %s after the line's buffer changed", m.Result)
	}
}
