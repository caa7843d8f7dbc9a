package upstream

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgrain/toolgrain/protocol"
)

// answers are upstream answers of several sizes and kinds.
func answers() map[string][]byte {
	long := strings.Repeat(`lorem ipsum \"dolor\" sit amet, é ü ß \u00e9 `, 350)
	structured := `{"items":[` + strings.Repeat(`{"id":12345,"name":"an item","tags":["a","b"],"ok":true,"score":0.75},`, 13) + `{"id":0}]}`
	return map[string][]byte{
		"echo":  []byte(`{"jsonrpc":"2.0","id":1000123,"result":{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}}`),
		"1KB":   []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a structured answer"}],"structuredContent":` + structured + `}}`),
		"16KB":  []byte(`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"` + long + `"}]}}`),
		"error": []byte(`{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Unknown tool: nope"}}`),
	}
}

// checkScan checks what the scanner reads of line against encoding/json: an answer it takes is
// valid JSON and UTF-8, and protocol.Decode reads the same id and result from it.
func checkScan(t *testing.T, s *answerScanner, line []byte) bool {
	t.Helper()
	key, result, ok := s.scan(line)
	if !ok {
		return false
	}
	if !json.Valid(line) || !utf8.Valid(line) {
		t.Errorf("%q: taken, but not valid JSON and UTF-8", line)
		return true
	}
	m, werr := protocol.Decode(line)
	if werr != nil || m == nil || m.Result == nil || m.ID.Key() != string(key) || !bytes.Equal(m.Result, result) {
		t.Errorf("%q: key %s result %s; protocol.Decode: %+v %v", line, key, result, m, werr)
	}
	return true
}

// The scanner takes well-formed answers, and nothing encoding/json would refuse: every
// prefix and thousands of random changes of the answers.
func TestScanAnswer(t *testing.T) {
	s := newAnswerScanner()
	for name, line := range answers() {
		if got, want := checkScan(t, s, line), name != "error"; got != want {
			t.Errorf("%s: taken %v, want %v", name, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}[]",:\ 0123456789.eE+-tfnulrsaxu` + "\t\n\x01é\xff")
	for _, line := range [][]byte{answers()["echo"], answers()["1KB"], []byte(` { "result" : {"a":[1,{"b":"\u0041"}]} , "id" : 9 , "jsonrpc" : "2.0" } `)} {
		for n := range len(line) {
			checkScan(t, s, line[:n])
		}
		for range 5000 {
			m := bytes.Clone(line)
			for range 1 + r.IntN(3) {
				m[r.IntN(len(m))] = alphabet[r.IntN(len(alphabet))]
			}
			checkScan(t, s, m)
		}
	}
}

func FuzzScanAnswer(f *testing.F) {
	for _, line := range answers() {
		f.Add(line)
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{},"result":{}}`))
	s := newAnswerScanner()
	f.Fuzz(func(t *testing.T, b []byte) { checkScan(t, s, b) })
}

// BenchmarkScanAnswer: the scanner on answers of several sizes (BENCHMARKS.md, "JSON
// scanning", has it against the hand-written check and walk it replaced).
func BenchmarkScanAnswer(b *testing.B) {
	s := newAnswerScanner()
	for _, size := range []string{"echo", "1KB", "16KB", "error"} {
		line := answers()[size]
		b.Run(size, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				s.scan(line)
			}
		})
	}
}

// decode reads an answer as protocol.Decode does, and hands everything else to it.
func TestDecodeLine(t *testing.T) {
	s := newAnswerScanner()
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
		key, _, fast := s.scan(line)
		if fast != c.fast {
			t.Errorf("%s: read by the answer's scanner: %v, want %v", c.line, fast, c.fast)
		}
		got, gerr := s.decode(line)
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
	m, _ := s.decode(line)
	copy(line, bytes.Repeat([]byte("x"), len(line)))
	if string(m.Result) != `{"a":1}` {
		t.Errorf("result %s after the line's buffer changed", m.Result)
	}
}
