package protocol_test

import (
	"encoding/json"
	"fmt"
	"mime"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
)

// acceptsOracle is Accepts as it was before its fast path: every range through
// mime.ParseMediaType.
func acceptsOracle(accept []string, mediaType string) bool {
	if len(accept) == 0 {
		return true
	}
	typ, _, _ := strings.Cut(mediaType, "/")
	for _, header := range accept {
		for _, r := range strings.Split(header, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(r))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(q, 64); err == nil && v <= 0 {
					continue
				}
			}
			if mt == mediaType || mt == "*/*" || mt == typ+"/*" {
				return true
			}
		}
	}
	return false
}

// FuzzAccepts: Accepts answers as every range parsed by mime.ParseMediaType would.
func FuzzAccepts(f *testing.F) {
	for _, s := range []string{
		"application/json, text/event-stream", "APPLICATION/JSON", "text/*", "*/*;q=0",
		"application/json;q=0, */*", "application/jsoK", " application/json ,", "",
		"text/event-stream;q=0.5", "application/*", "application / json", "Application/*",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		for _, mt := range []string{protocol.MediaTypeJSON, protocol.MediaTypeEventStream} {
			if got, want := protocol.Accepts([]string{header}, mt), acceptsOracle([]string{header}, mt); got != want {
				t.Fatalf("Accepts(%q, %s) = %v, mime.ParseMediaType says %v", header, mt, got, want)
			}
		}
	})
}

func BenchmarkAccepts(b *testing.B) {
	accept := []string{"application/json, text/event-stream"}
	b.ReportAllocs()
	for b.Loop() {
		protocol.Accepts(accept, protocol.MediaTypeJSON)
		protocol.Accepts(accept, protocol.MediaTypeEventStream)
	}
}

// FuzzMetaProgressToken: MetaProgressToken answers as decoding into a RequestMeta does.
func FuzzMetaProgressToken(f *testing.F) {
	for _, s := range []string{
		`{"progressToken":1}`, `{"progressToken":"a","x":{"progressToken":2}}`, `{"ProgressToken":3}`,
		`{"progressToken":1,"progressToken":"b"}`, `{"progress\u0054oken":4}`, `{"progreſſToken":5}`,
		`null`, `[]`, `{"progressToken":null}`, ` { "progressToken" : 7 } `, `{"a":`, `"s"`, ``,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"t"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, meta string) {
		var m protocol.RequestMeta
		var want json.RawMessage
		if json.Unmarshal([]byte(meta), &m) == nil {
			want = m.ProgressToken
		}
		if got := protocol.MetaProgressToken(json.RawMessage(meta)); string(got) != string(want) {
			t.Fatalf("MetaProgressToken(%q) = %q, encoding/json says %q", meta, got, want)
		}
	})
}

// FuzzMessageParams: what a decoded message's CallToolParams and Envelope give, without
// checking its params again, is what DecodeCallToolParams and ReadEnvelope give.
func FuzzMessageParams(f *testing.F) {
	for _, s := range []string{
		`{"name":"echo","arguments":{"text":"hi"}}`, `null`, `[]`, `{"name":1}`, `{"Name":"x"}`,
		`{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":""}}`, `"s"`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
		if params == "" {
			line = `{"jsonrpc":"2.0","id":1,"method":"tools/call"}` // no params at all
		}
		m, werr := protocol.Decode([]byte(line))
		if werr != nil {
			return
		}
		got, gerr := m.CallToolParams()
		want, werr2 := protocol.DecodeCallToolParams(m.Params)
		if !reflect.DeepEqual(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr2) {
			t.Fatalf("%s: CallToolParams %+v, %v; DecodeCallToolParams %+v, %v", params, got, gerr, want, werr2)
		}
		genv, gwerr := m.Envelope()
		wenv, wwerr := protocol.ReadEnvelope(m.Params)
		if !reflect.DeepEqual(genv, wenv) || !reflect.DeepEqual(gwerr, wwerr) {
			t.Fatalf("%s: Envelope %+v, %v; ReadEnvelope %+v, %v", params, genv, gwerr, wenv, wwerr)
		}
	})
}

// TestEncodeResultWithMatchesAnnotate: a tools/call result encoded with an annotation is the
// result encoded alone, then annotated.
func TestEncodeResultWithMatchesAnnotate(t *testing.T) {
	results := []*protocol.CallToolResult{
		{Content: []protocol.Content{protocol.TextContent("hi")}},
		{Content: []protocol.Content{protocol.TextContent(strings.Repeat("x", 2000))}, IsError: true},
		{Content: []protocol.Content{}, StructuredContent: json.RawMessage(`{"a":1}`), Meta: json.RawMessage(`{"k":"v"}`)},
	}
	anns := []*protocol.Annotation{
		{}, {ResultType: "input_required"}, {Meta: []byte(`"io.modelcontextprotocol/serverInfo":{"name":"s"}`)},
		{Cache: &protocol.CacheHint{TTLMs: 5, Scope: protocol.CachePrivate}, Meta: []byte(`"x":1`)},
	}
	for _, r := range results {
		for _, a := range anns {
			plain, err := protocol.EncodeResult(protocol.NewIntID(7), r)
			if err != nil {
				t.Fatal(err)
			}
			start := len(`{"jsonrpc":"2.0","id":7,"result":`)
			obj, err := a.Annotate(plain[start : len(plain)-1])
			if err != nil {
				t.Fatal(err)
			}
			want := string(plain[:start]) + string(obj) + "}"
			for _, give := range []any{r, *r} {
				got, err := protocol.EncodeResultWith(protocol.NewIntID(7), give, a)
				if err != nil || string(got) != want {
					t.Errorf("EncodeResultWith = %s, %v\nwant %s", got, err, want)
				}
			}
		}
	}
}
