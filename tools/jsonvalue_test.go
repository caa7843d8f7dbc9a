package tools

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestDecodeValueMatchesValidator: decodeValue returns what jsonschema.UnmarshalJSON returns.
func TestDecodeValueMatchesValidator(t *testing.T) {
	for _, give := range []string{
		`{}`, `[]`, ` { } `, `null`, `true`, `false`, `0`, `-1.5e3`, `12345678901234567890123456789`,
		`"plain"`, `"esc\"aped\n\u00e9\ud83d\ude00"`, "\"bad \xff utf8\"", `"\u0000"`,
		`{"text":"hi"}`, `{"a":1,"a":2}`, `{"a":{"b":[1,"x",null,true,{"c":[]}]},"d":-0.0}`,
		"{\n\t\"k\" : [ 1 , 2 ] ,\r\n \"\\u006b\" : 3 }", `[[[[]]]]`, `{"":""}`,
	} {
		want, werr := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(give)))
		got, ok := decodeValue([]byte(give))
		if werr != nil || !ok {
			t.Errorf("%q: validator error %v, decodeValue ok %v", give, werr, ok)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %#v, want %#v", give, got, want)
		}
	}
	for _, give := range []string{``, ` `, `{`, `{"a":}`, `[1,]`, `{} {}`, `01`, `"\x"`, `nul`} {
		if _, ok := decodeValue([]byte(give)); ok {
			t.Errorf("%q: accepted", give)
		}
	}
}

func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{`{"text":"hi"}`, `[1,{"a":null}]`, `"\u00e9"`, `-0.5e-3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		got, ok := decodeValue(data)
		if (werr == nil) != ok {
			t.Fatalf("%q: validator error %v, decodeValue ok %v", data, werr, ok)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %#v, want %#v", data, got, want)
		}
	})
}
