package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The hand-written check and scan of an upstream's answers (scanResult: validJSON, utf8.Valid
// and the member walk) against go-json-experiment's jsontext doing the same: its Value.IsValid
// before the same walk ("isvalid"), or one pass of its Decoder, which checks as it reads
// ("decoder"). Both jsontext forms take duplicate names, as encoding/json does.
//
//	go test -run '^$' -bench ScanAnswer -count 8 ./internal/upstream

// scanResultDecoder is scanResult on one pass of a jsontext.Decoder.
func scanResultDecoder(d *jsontext.Decoder, bb *bytes.Buffer, line []byte) (key, result []byte, ok bool) {
	bb.Reset()
	bb.Write(line)
	d.Reset(bb, jsontext.AllowDuplicateNames(true))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, nil, false
	}
	jsonrpc := false
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return nil, nil, false
		}
		val, err := d.ReadValue()
		if err != nil {
			return nil, nil, false
		}
		switch string(name) {
		case `"jsonrpc"`:
			if jsonrpc || string(val) != `"2.0"` {
				return nil, nil, false
			}
			jsonrpc = true
		case `"id"`:
			if key != nil || !plainInt(val) {
				return nil, nil, false
			}
			key = val
		case `"result"`:
			if result != nil || val[0] != '{' {
				return nil, nil, false
			}
			result = val
		default:
			return nil, nil, false
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, nil, false
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, nil, false
	}
	return key, result, jsonrpc && key != nil && result != nil
}

// scanResultIsValid is scanResult with jsontext's check instead of validJSON and utf8.Valid.
func scanResultIsValid(line []byte) (key, result []byte, ok bool) {
	if !jsontext.Value(line).IsValid(jsontext.AllowDuplicateNames(true)) {
		return nil, nil, false
	}
	return walkResult(line)
}

// walkResult is scanResult's walk, after the check.
func walkResult(line []byte) (key, result []byte, ok bool) {
	i := skipWS(line, 0)
	if line[i] != '{' {
		return nil, nil, false
	}
	jsonrpc := false
	i = skipWS(line, i+1)
	for line[i] != '}' {
		ks := i
		i = skipString(line, i)
		name := line[ks:i]
		i = skipWS(line, skipWS(line, i)+1)
		vs := i
		i = skipValue(line, i)
		val := line[vs:i]
		switch string(name) {
		case `"jsonrpc"`:
			if jsonrpc || string(val) != `"2.0"` {
				return nil, nil, false
			}
			jsonrpc = true
		case `"id"`:
			if key != nil || !plainInt(val) {
				return nil, nil, false
			}
			key = val
		case `"result"`:
			if result != nil || val[0] != '{' {
				return nil, nil, false
			}
			result = val
		default:
			return nil, nil, false
		}
		i = skipWS(line, i)
		if line[i] == ',' {
			i = skipWS(line, i+1)
		}
	}
	return key, result, jsonrpc && key != nil && result != nil
}

// answers are upstream answers of three sizes: an echo's, a result of about 1 KB with
// structured content, and one of about 16 KB of text with escapes and non-ASCII.
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

// The three agree on every answer, and on broken copies of them.
func TestScanAnswerAgrees(t *testing.T) {
	d, bb := jsontext.NewDecoder(new(bytes.Buffer)), new(bytes.Buffer)
	for name, line := range answers() {
		cases := [][]byte{line, line[:len(line)-1], append(bytes.Clone(line), 'x'), bytes.Replace(line, []byte(`:`), []byte(`;`), 1)}
		for _, c := range cases {
			k1, r1, ok1 := scanResult(c)
			k2, r2, ok2 := scanResultIsValid(c)
			k3, r3, ok3 := scanResultDecoder(d, bb, c)
			if ok1 != ok2 || ok1 != ok3 || !bytes.Equal(k1, k2) || !bytes.Equal(k1, k3) || !bytes.Equal(r1, r2) || !bytes.Equal(r1, r3) {
				t.Errorf("%s %q: hand-written %v %s, isvalid %v %s, decoder %v %s", name, c, ok1, k1, ok2, k2, ok3, k3)
			}
			if ok1 && !json.Valid(c) {
				t.Errorf("%s: took invalid JSON", name)
			}
		}
	}
}

func BenchmarkScanAnswer(b *testing.B) {
	for _, size := range []string{"echo", "1KB", "16KB", "error"} {
		line := answers()[size]
		b.Run(size+"/hand-written", func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				scanResult(line)
			}
		})
		b.Run(size+"/jsontext-isvalid", func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				scanResultIsValid(line)
			}
		})
		b.Run(size+"/jsontext-decoder", func(b *testing.B) {
			d, bb := jsontext.NewDecoder(new(bytes.Buffer)), new(bytes.Buffer)
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				scanResultDecoder(d, bb, line)
			}
		})
	}
}
