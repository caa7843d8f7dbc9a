package tools

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// decodeTarget has a field of every kind a typed handler's input tends to have.
type decodeTarget struct {
	Text     string            `json:"text"`
	Count    int               `json:"count"`
	Small    uint8             `json:"small"`
	Ratio    float64           `json:"ratio"`
	On       bool              `json:"on"`
	Tags     []string          `json:"tags"`
	Labels   map[string]string `json:"labels"`
	Limit    *int              `json:"limit,omitempty"`
	Any      any               `json:"any"`
	Raw      json.RawMessage   `json:"raw"`
	Inner    struct{ N int }   `json:"inner"`
	Quoted   int               `json:"quoted,string"`
	Ignored  string            `json:"-"`
	Untagged string
}

var decodeSeeds = []string{
	`{}`,
	`{"text":"hello"}`,
	`{"text":"h\u00e9llo \ud83d\ude00","count":-7,"small":255,"ratio":1e-3,"on":true}`,
	`{"tags":["a","b"],"labels":{"k":"v"},"limit":3,"any":{"x":[1,2.5,"s",null]},"raw":{"a" : 1}}`,
	`{"TEXT":"case","Count":2,"untagged":"u","Untagged":"U"}`,
	`{"text":"first","text":"last"}`,
	`{"text":"bad \xff utf8"}`,
	`{"text":null,"count":null,"tags":null,"limit":null}`,
	`{"inner":{"N":1,"n":2},"quoted":"12"}`,
	`{"small":256}`,
	`{"count":"SECRET"}`,
	`{"count":1.5}`,
	`{"quoted":12}`,
	`{"tags":"x"}`,
	`{"-":"dash","Ignored":"no"}`,
	`{"count":12345678901234567890}`,
	`[]`,
	`null`,
}

// FuzzDecodeArguments: decodeArguments decodes exactly as encoding/json does: the same value
// when encoding/json succeeds, and a DecodeError wrapping encoding/json's own error when it
// fails.
func FuzzDecodeArguments(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		if len(args) == 0 || !json.Valid(args) {
			return // the engine hands a typed handler only arguments that are valid JSON
		}
		var want, got decodeTarget
		wantErr := json.Unmarshal(args, &want)
		err := decodeArguments(&Request{Tool: "x", Arguments: args}, &got)
		if wantErr != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Err.Error() != wantErr.Error() {
				t.Fatalf("%s: got %v, want a DecodeError wrapping %v", args, err, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: got %v, encoding/json decodes it", args, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", args, got, want)
		}
	})
}

// BenchmarkDecodeArguments compares the decoding of a typical argument object by
// decodeArguments and by encoding/json.
func BenchmarkDecodeArguments(b *testing.B) {
	args := json.RawMessage(`{"text":"0123456789abcdef0123456789abcdef","count":42,"on":true}`)
	type in struct {
		Text  string `json:"text"`
		Count int    `json:"count"`
		On    bool   `json:"on"`
	}
	b.Run("decodeArguments", func(b *testing.B) {
		b.ReportAllocs()
		req := &Request{Tool: "x", Arguments: args}
		for b.Loop() {
			var v in
			if err := decodeArguments(req, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v in
			if err := json.Unmarshal(args, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
