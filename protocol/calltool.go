package protocol

import (
	"encoding/json"
	"strings"
)

// DecodeCallToolParams reads the params of a tools/call request exactly as
// json.Unmarshal(params, &p) would, with p a [CallToolParams], and returns
// the same error when json.Unmarshal would fail. Arguments and Meta are
// slices of params, not copies: params must not be modified afterwards.
//
// The common case (members spelt exactly "name", "arguments" and "_meta",
// without escapes) is read without reflection and without copying; any other
// spelling that json.Unmarshal would match case-insensitively falls back to
// it.
func DecodeCallToolParams(params json.RawMessage) (CallToolParams, error) {
	if !json.Valid(params) {
		return slowCallToolParams(params) // the error json.Unmarshal gives
	}
	return decodeValidCallToolParams(params)
}

// CallToolParams is [DecodeCallToolParams] of m's params, which it need not check again when
// [Decode] read m.
func (m *Message) CallToolParams() (CallToolParams, error) {
	if !m.valid || len(m.Params) == 0 {
		return DecodeCallToolParams(m.Params) // absent params are json.Unmarshal's error
	}
	return decodeValidCallToolParams(m.Params)
}

// decodeValidCallToolParams is DecodeCallToolParams of params that json.Valid accepted.
func decodeValidCallToolParams(params json.RawMessage) (CallToolParams, error) {
	var p CallToolParams
	data := params
	i := skipSpace(data, 0)
	switch data[i] {
	case '{':
	case 'n': // null leaves p unchanged
		return p, nil
	default:
		return slowCallToolParams(params) // an UnmarshalTypeError
	}
	i = skipSpace(data, i+1)
	for data[i] != '}' {
		ks := i
		i = skipString(data, i)
		key := data[ks:i]
		i = skipSpace(data, i)
		i = skipSpace(data, i+1) // ':'
		vs := i
		i = skipValue(data, i)
		val := data[vs:i]
		switch string(key) {
		case `"name"`:
			switch val[0] {
			case '"':
				p.Name = unquote(val)
			case 'n':
			default:
				return slowCallToolParams(params)
			}
		case `"arguments"`:
			p.Arguments = json.RawMessage(val[:len(val):len(val)])
		case `"_meta"`:
			p.Meta = json.RawMessage(val[:len(val):len(val)])
		case `"inputResponses"`, `"requestState"`:
			return slowCallToolParams(params) // a retried modern call: rare
		default:
			if k := unquote(key); strings.EqualFold(k, "name") || strings.EqualFold(k, "arguments") || strings.EqualFold(k, "_meta") ||
				strings.EqualFold(k, "inputResponses") || strings.EqualFold(k, "requestState") {
				return slowCallToolParams(params)
			}
		}
		i = skipSpace(data, i)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return p, nil
}

// slowCallToolParams is json.Unmarshal, for the spellings the fast path leaves to it. (Its own
// function, so that the fast path's result does not escape to the heap.)
func slowCallToolParams(params json.RawMessage) (CallToolParams, error) {
	var p CallToolParams
	err := json.Unmarshal(params, &p)
	return p, err
}
