package protocol_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

// TestDecodeCallToolParams: the fast path reads what json.Unmarshal reads, and fails where it
// fails.
func TestDecodeCallToolParams(t *testing.T) {
	for _, give := range []string{
		`{"name":"echo","arguments":{"text":"hi"}}`,
		`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1}}`,
		` { "name" : "e\u0063ho" , "arguments" : null } `,
		`{"name":"a","name":"b"}`, `{"name":"a","name":null}`, `{"arguments":[1,2]}`,
		`{"NAME":"echo"}`, `{"Arguments":{}}`, `{"_Meta":{}}`, `{"argumentſ":{"x":1}}`, `{"n\u0061me":"x"}`,
		`{"other":{"name":"x"},"name":"y"}`, `{}`, `null`, `[]`, `"x"`, `1`, ``, `{`,
		`{"name":1}`, `{"name":true,"arguments":{}}`, `{"name":{"a":1}}`, "{\"name\":\"bad \xff\"}",
	} {
		var want protocol.CallToolParams
		werr := json.Unmarshal([]byte(give), &want)
		got, gerr := protocol.DecodeCallToolParams(json.RawMessage(give))
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%q: json.Unmarshal error %v, DecodeCallToolParams error %v", give, werr, gerr)
			continue
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v, want %+v", give, got, want)
		}
	}
}

func FuzzDecodeCallToolParams(f *testing.F) {
	f.Add([]byte(`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1}}`))
	f.Add([]byte(`{"NaMe":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want protocol.CallToolParams
		werr := json.Unmarshal(data, &want)
		got, gerr := protocol.DecodeCallToolParams(data)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: json.Unmarshal error %v, DecodeCallToolParams error %v", data, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %+v, want %+v", data, got, want)
		}
	})
}
