package gateway

import (
	"encoding/json"
	"testing"
)

func TestOnlyReserved(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`{}`: true,
		`{"io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"}}`:                         true,
		`{"io.modelcontextprotocol/serverInfo":{"name":"x"},"io.modelcontextprotocol/related":1}`:   true,
		`{"io.modelcontextprotocol/serverInfo":{"name":"x"},"trace":"t"}`:                           false,
		`{"trace":"io.modelcontextprotocol/x"}`:                                                     false,
		`{"io.modelcontextprotocol/a":{"b":{"c":"d"}},"e":[1,{"f":"g"}]}`:                           false,
		`{"io.modelcontextprotocol/a":"with \"quote\" and , comma","io.modelcontextprotocol/b":[]}`: true,
	} {
		if got := onlyReserved([]byte(in)); got != want {
			t.Errorf("onlyReserved(%s) = %v, want %v", in, got, want)
		}
	}
}

// The fast reading of a tools/call result gives what encoding/json gives, or defers to it.
func TestDecodeResult(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[]}`,
		`{}`,
		` { "content" : [ { "text" : "a" , "type" : "text" } , {"type":"text","text":""} ] , "isError" : true } `,
		`{"resultType":"complete","content":[{"type":"text","text":"x"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`,
		`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1,"s":"a,b}"}}`,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"é\u00e9"}],"isError":false}`,
		`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}},"requestState":"s"}`,
		`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}],"other":[1,2]}`,
		`{"content":[{"type":"text","text":"line one\nline \"two\" \u00e9\ud83d\ude00"}],"isError":false}`,
		`{"content":[{"type":"te\u0078t","text":"escaped type"}]}`,
		`{"isError":true,"isError":false,"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b","type":"text"}]}`,
		`{"content":[{"type":"text"}]}`,
		`{"content":[{"text":"no type"}]}`,
		`{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		`{"content":{"type":"text","text":"not an array"}}`,
		`{"isError":"yes"}`,
	} {
		var fast, slow callResult
		ferr := decodeResult([]byte(raw), &fast)
		serr := json.Unmarshal([]byte(raw), &slow)
		if (ferr == nil) != (serr == nil) {
			t.Errorf("%s: error %v, encoding/json's %v", raw, ferr, serr)
		}
		if serr != nil {
			continue
		}
		a, _ := json.Marshal(fast)
		b, _ := json.Marshal(slow)
		if string(a) != string(b) {
			t.Errorf("%s:\n fast %s\n slow %s", raw, a, b)
		}
	}
}

// BenchmarkReadResult: a tools/call result read by decodeResult (BENCHMARKS.md, "JSON scanning",
// has it against the hand-written scanner it replaced).
func BenchmarkReadResult(b *testing.B) {
	for name, raw := range map[string]string{
		"echo":       `{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}`,
		"escaped":    `{"content":[{"type":"text","text":"line one\nline \"two\""}],"isError":false}`,
		"structured": `{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1,"s":"a,b}","list":[1,2,3,{"k":"v"}]}}`,
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				var res callResult
				if err := decodeResult([]byte(raw), &res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The reader takes text with escapes and structured content itself, and leaves other content
// blocks and input rounds to encoding/json.
func TestReadResultTakes(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		`{"content":[{"type":"text","text":"a \"quoted\"\nline"}],"structuredContent":{"n":[1,{"k":"v"}]}}`: true,
		`{"resultType":"complete","content":[],"isError":true,"_meta":{"a":1}}`:                             true,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`:                               false,
		`{"resultType":"input_required","inputRequests":{},"requestState":"s"}`:                             false,
	} {
		r := resultReaders.Get().(*resultReader)
		var res callResult
		if got := r.read([]byte(raw), &res); got != want {
			t.Errorf("%s: taken %v, want %v", raw, got, want)
		}
		resultReaders.Put(r)
	}
}
