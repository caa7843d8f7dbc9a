package httpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/protocol"
	"github.com/toolgrain/toolgrain/tools"
)

// headerTool is a tool with an x-mcp-header argument of every type, one of them nested.
const headerTool = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"Count"},
	"dry":{"type":"boolean","x-mcp-header":"Dry-Run"},
	"tenant":{"type":"object","properties":{"id":{"type":"string","x-mcp-header":"Tenant"}}},
	"query":{"type":"string"}}}`

func headerParams(t *testing.T, schema string) []tools.HeaderParam {
	t.Helper()
	set, err := tools.Compile([]tools.Tool{{Name: "t", InputSchema: json.RawMessage(schema),
		Handler: tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) { return nil, nil })}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Lookup("t")
	return c.HeaderParams()
}

func TestCheckParamHeaders(t *testing.T) {
	params := headerParams(t, headerTool)
	tests := []struct {
		name    string
		params  []tools.HeaderParam // nil: the tool without annotations
		args    string
		headers []string // name, value, name, value...
		want    string   // "" means no error, else the error's message
	}{
		// The table of "Server Behavior for Custom Headers".
		{"value provided, header matches", params, `{"region":"us-west1"}`, []string{"Mcp-Param-Region", "us-west1"}, ""},
		{"value provided, header differs", params, `{"region":"us-west1"}`, []string{"Mcp-Param-Region", "us-east1"},
			"Header mismatch: Mcp-Param-Region header value 'us-east1' does not match body value 'us-west1'"},
		{"value null, no header", params, `{"region":null}`, nil, ""},
		{"not in arguments, no header", params, `{"query":"q"}`, nil, ""},
		{"no arguments, no header", params, ``, nil, ""},
		{"arguments null, no header", params, `null`, nil, ""},
		{"header omitted, value in body", params, `{"region":"us-west1"}`, nil,
			"Header mismatch: the Mcp-Param-Region header is required: the body has a value at arguments/region"},
		{"header omitted, empty string in body", params, `{"region":""}`, nil,
			"Header mismatch: the Mcp-Param-Region header is required: the body has a value at arguments/region"},
		{"empty header, empty string in body", params, `{"region":""}`, []string{"Mcp-Param-Region", ""}, ""},
		{"header present, value null", params, `{"region":null}`, []string{"Mcp-Param-Region", "us-west1"},
			"Header mismatch: Mcp-Param-Region header is present but the body has no value at arguments/region"},
		{"header present, not in arguments", params, `{}`, []string{"Mcp-Param-Region", "us-west1"},
			"Header mismatch: Mcp-Param-Region header is present but the body has no value at arguments/region"},
		{"header present, no arguments", params, ``, []string{"Mcp-Param-Count", "1"},
			"Header mismatch: Mcp-Param-Count header is present but the body has no value at arguments/count"},
		{"header twice", params, `{"region":"a"}`, []string{"Mcp-Param-Region", "a", "Mcp-Param-Region", "a"},
			"Header mismatch: one Mcp-Param-Region header is allowed"},
		{"other headers ignored", params, `{"query":"q"}`, []string{"Mcp-Param-Other", "x", "Mcp-Param-Query", "q"}, ""},

		// Value encoding.
		{"white space around the value", params, `{"region":"us-west1"}`, []string{"Mcp-Param-Region", " \tus-west1 "}, ""},
		{"Base64", params, `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8=?="}, ""},
		{"Base64 non-ASCII", params, `{"region":"Hello, 世界"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8sIOS4lueVjA==?="}, ""},
		{"Base64 padded spaces", params, `{"region":" padded "}`, []string{"Mcp-Param-Region", "=?base64?IHBhZGRlZCA=?="}, ""},
		{"Base64 newline", params, `{"region":"line1\nline2"}`, []string{"Mcp-Param-Region", "=?base64?bGluZTEKbGluZTI=?="}, ""},
		{"Base64 of the sentinel", params, `{"region":"=?base64?literal?="}`, []string{"Mcp-Param-Region", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="}, ""},
		{"Base64 differs", params, `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8h?="},
			"Header mismatch: Mcp-Param-Region header value 'Hello!' does not match body value 'Hello'"},
		{"Base64 without padding", params, `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8?="},
			"Header mismatch: Mcp-Param-Region: malformed Base64 header value"},
		{"Base64 with invalid characters", params, `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVs!!!bG8=?="},
			"Header mismatch: Mcp-Param-Region: malformed Base64 header value"},
		{"Base64 not UTF-8", params, `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?/w==?="},
			"Header mismatch: Mcp-Param-Region: a Base64 header value must decode to UTF-8"},
		{"no prefix: literal", params, `{"region":"SGVsbG8="}`, []string{"Mcp-Param-Region", "SGVsbG8="}, ""},
		{"no suffix: literal", params, `{"region":"=?base64?SGVsbG8="}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8="}, ""},
		{"invalid characters", params, `{"region":"café"}`, []string{"Mcp-Param-Region", "caf\xc3\xa9"},
			"Header mismatch: Mcp-Param-Region: a header value must be visible ASCII, or Base64-encoded"},
		{"control character", params, `{"region":"a\u0001b"}`, []string{"Mcp-Param-Region", "a\x01b"},
			"Header mismatch: Mcp-Param-Region: a header value must be visible ASCII, or Base64-encoded"},
		{"strings are case-sensitive", params, `{"region":"us-west1"}`, []string{"Mcp-Param-Region", "US-WEST1"},
			"Header mismatch: Mcp-Param-Region header value 'US-WEST1' does not match body value 'us-west1'"},

		// Integers compare numerically.
		{"integer", params, `{"count":42}`, []string{"Mcp-Param-Count", "42"}, ""},
		{"integer header 42.0", params, `{"count":42}`, []string{"Mcp-Param-Count", "42.0"}, ""},
		{"integer body 42.0", params, `{"count":42.0}`, []string{"Mcp-Param-Count", "42"}, ""},
		{"integer body 4.2e1", params, `{"count":4.2e1}`, []string{"Mcp-Param-Count", "42"}, ""},
		{"integer negative", params, `{"count":-7}`, []string{"Mcp-Param-Count", "-7"}, ""},
		{"integer zero", params, `{"count":-0}`, []string{"Mcp-Param-Count", "0"}, ""},
		{"integer largest", params, `{"count":9007199254740991}`, []string{"Mcp-Param-Count", "9007199254740991"}, ""},
		{"integer smallest", params, `{"count":-9007199254740991}`, []string{"Mcp-Param-Count", "-9007199254740991"}, ""},
		{"integer differs", params, `{"count":42}`, []string{"Mcp-Param-Count", "43"},
			"Header mismatch: Mcp-Param-Count header value '43' does not match body value '42'"},
		{"integer header with a fraction", params, `{"count":42}`, []string{"Mcp-Param-Count", "42.5"},
			"Header mismatch: Mcp-Param-Count header value '42.5' does not match body value '42'"},
		{"integer header in hex", params, `{"count":42}`, []string{"Mcp-Param-Count", "0x2a"},
			"Header mismatch: Mcp-Param-Count header value '0x2a' does not match body value '42'"},
		{"integer header not a number", params, `{"count":42}`, []string{"Mcp-Param-Count", "forty-two"},
			"Header mismatch: Mcp-Param-Count header value 'forty-two' does not match body value '42'"},
		{"integer header off by 2^53", params, `{"count":1}`, []string{"Mcp-Param-Count", "9007199254740993"},
			"Header mismatch: Mcp-Param-Count header value '9007199254740993' does not match body value '1'"},
		{"integer beyond 2^53-1", params, `{"count":9007199254740992}`, []string{"Mcp-Param-Count", "9007199254740992"},
			"Header mismatch: Mcp-Param-Count: the body value at arguments/count is beyond ±(2^53−1), the integers a header may carry"},
		{"integer huge exponent", params, `{"count":1e999999999}`, []string{"Mcp-Param-Count", "1"},
			"Header mismatch: Mcp-Param-Count: the body value at arguments/count is beyond ±(2^53−1), the integers a header may carry"},
		{"integer omitted", params, `{"count":0}`, nil,
			"Header mismatch: the Mcp-Param-Count header is required: the body has a value at arguments/count"},
		{"not an integer: the schema's to reject", params, `{"count":42.5}`, []string{"Mcp-Param-Count", "x"}, ""},
		{"a string for an integer: the schema's to reject", params, `{"count":"42"}`, []string{"Mcp-Param-Count", "41"}, ""},

		// Booleans.
		{"true", params, `{"dry":true}`, []string{"Mcp-Param-Dry-Run", "true"}, ""},
		{"false", params, `{"dry":false}`, []string{"Mcp-Param-Dry-Run", "false"}, ""},
		{"boolean differs", params, `{"dry":true}`, []string{"Mcp-Param-Dry-Run", "false"},
			"Header mismatch: Mcp-Param-Dry-Run header value 'false' does not match body value 'true'"},
		{"boolean in capitals", params, `{"dry":true}`, []string{"Mcp-Param-Dry-Run", "True"},
			"Header mismatch: Mcp-Param-Dry-Run header value 'True' does not match body value 'true'"},
		{"boolean as a number", params, `{"dry":false}`, []string{"Mcp-Param-Dry-Run", "0"},
			"Header mismatch: Mcp-Param-Dry-Run header value '0' does not match body value 'false'"},
		{"a string for a boolean: the schema's to reject", params, `{"dry":"yes"}`, nil, ""},

		// Nested paths.
		{"nested", params, `{"tenant":{"id":"acme"}}`, []string{"Mcp-Param-Tenant", "acme"}, ""},
		{"nested differs", params, `{"tenant":{"id":"acme"}}`, []string{"Mcp-Param-Tenant", "other"},
			"Header mismatch: Mcp-Param-Tenant header value 'other' does not match body value 'acme'"},
		{"nested omitted", params, `{"tenant":{"id":"acme"}}`, nil,
			"Header mismatch: the Mcp-Param-Tenant header is required: the body has a value at arguments/tenant/id"},
		{"nested parent null", params, `{"tenant":null}`, nil, ""},
		{"nested parent not an object", params, `{"tenant":"acme"}`, nil, ""},
		{"nested parent empty", params, `{"tenant":{}}`, []string{"Mcp-Param-Tenant", "acme"},
			"Header mismatch: Mcp-Param-Tenant header is present but the body has no value at arguments/tenant/id"},

		// Every argument is checked; a repeated member keeps its last value, as the tool reads it.
		{"all four", params, `{"region":"r","count":1,"dry":true,"tenant":{"id":"t"},"query":"q"}`,
			[]string{"Mcp-Param-Region", "r", "Mcp-Param-Count", "1", "Mcp-Param-Dry-Run", "true", "Mcp-Param-Tenant", "t"}, ""},
		{"last of repeated members", params, `{"region":"a","region":"b"}`, []string{"Mcp-Param-Region", "b"}, ""},
		{"first of repeated members", params, `{"region":"a","region":"b"}`, []string{"Mcp-Param-Region", "a"},
			"Header mismatch: Mcp-Param-Region header value 'a' does not match body value 'b'"},

		// A tool without annotations checks nothing.
		{"no annotations", nil, `{"region":"us-west1"}`, []string{"Mcp-Param-Region", "=?base64?!!?="}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(tt.headers); i += 2 {
				h.Add(tt.headers[i], tt.headers[i+1])
			}
			got := checkParamHeaders(tt.params, json.RawMessage(tt.args), h)
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("got %v, want nil", got)
			case tt.want != "" && got == nil:
				t.Errorf("got nil, want %q", tt.want)
			case got != nil && (got.Code != protocol.CodeHeaderMismatch || got.Message != tt.want):
				t.Errorf("got code %d %q\nwant code %d %q", got.Code, got.Message, protocol.CodeHeaderMismatch, tt.want)
			}
		})
	}
}

// TestCheckParamHeadersNameCase: header names compare case-insensitively, as a request read
// from the wire carries them.
func TestCheckParamHeadersNameCase(t *testing.T) {
	params := headerParams(t, headerTool)
	for _, name := range []string{"mcp-param-region", "MCP-PARAM-REGION", "Mcp-Param-Region", "mCp-pArAm-ReGiOn"} {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(
			"POST /mcp HTTP/1.1\r\nHost: localhost\r\n" + name + ": us-west1\r\nContent-Length: 0\r\n\r\n")))
		if err != nil {
			t.Fatal(err)
		}
		if werr := checkParamHeaders(params, json.RawMessage(`{"region":"us-west1"}`), req.Header); werr != nil {
			t.Errorf("%s: %v", name, werr)
		}
		if werr := checkParamHeaders(params, json.RawMessage(`{"region":"us-east1"}`), req.Header); werr == nil {
			t.Errorf("%s: a different value passed", name)
		}
	}
	// The annotation's own case does not matter either.
	lower := headerParams(t, `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"rEGION"}}}`)
	h := http.Header{}
	h.Set("Mcp-Param-Region", "x")
	if werr := checkParamHeaders(lower, json.RawMessage(`{"region":"x"}`), h); werr != nil {
		t.Error(werr)
	}
}

func TestExactInteger(t *testing.T) {
	tests := []struct {
		give                    string
		n                       int64
		number, integer, isSafe bool
	}{
		{"0", 0, true, true, true},
		{"-0", 0, true, true, true},
		{"0.000", 0, true, true, true},
		{"0e-5", 0, true, true, true},
		{"42", 42, true, true, true},
		{"42.0", 42, true, true, true},
		{"4.2e1", 42, true, true, true},
		{"4200E-2", 42, true, true, true},
		{"420e-1", 42, true, true, true},
		{"-7", -7, true, true, true},
		{"1e15", 1_000_000_000_000_000, true, true, true},
		{"9007199254740991", maxSafeInteger, true, true, true},
		{"-9007199254740991", -maxSafeInteger, true, true, true},
		{"9007199254740992", 0, true, true, false},
		{"99999999999999999", 0, true, true, false},
		{"1e16", 0, true, true, false},
		{"1e999999999999", 0, true, true, false},
		{"42.5", 0, true, false, false},
		{"1e-999999999999", 0, true, false, false},
		{"9007199254740991.5", 0, true, false, false},
		{"", 0, false, false, false},
		{"-", 0, false, false, false},
		{"042", 0, false, false, false},
		{"+42", 0, false, false, false},
		{"42.", 0, false, false, false},
		{".5", 0, false, false, false},
		{"1e", 0, false, false, false},
		{"1e+", 0, false, false, false},
		{"0x2a", 0, false, false, false},
		{" 42", 0, false, false, false},
		{"42 ", 0, false, false, false},
		{"NaN", 0, false, false, false},
	}
	for _, tt := range tests {
		n, number, integer, safe := exactInteger(tt.give)
		if n != tt.n || number != tt.number || integer != tt.integer || safe != tt.isSafe {
			t.Errorf("exactInteger(%q) = %d, %v, %v, %v; want %d, %v, %v, %v",
				tt.give, n, number, integer, safe, tt.n, tt.number, tt.integer, tt.isSafe)
		}
	}
}
