package gateway

import (
	"encoding/json"
	"testing"
)

func TestOnlyReserved(t *testing.T) {
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
	} {
		var fast, slow callResult
		if err := decodeResult([]byte(raw), &fast); err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if err := json.Unmarshal([]byte(raw), &slow); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(fast)
		b, _ := json.Marshal(slow)
		if string(a) != string(b) {
			t.Errorf("%s:\n fast %s\n slow %s", raw, a, b)
		}
	}
}
