package e2e_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
)

// routeTool mirrors its region and shard arguments into Mcp-Param headers, and answers with them.
func routeTool(name string) tools.Tool {
	return tools.Tool{
		Name:        name,
		Description: "Routes a query.",
		InputSchema: []byte(`{"type":"object","properties":{
			"region":{"type":"string","x-mcp-header":"Region"},
			"shard":{"type":"integer","x-mcp-header":"Shard"},
			"query":{"type":"string"}}}`),
		Handler: tools.HandlerFunc(func(_ context.Context, req *tools.Request) (*tools.Result, error) {
			return tools.TextResult(string(req.Arguments)), nil
		}),
	}
}

// TestModernHTTPParamHeaders: a modern tools/call over HTTP must carry, in Mcp-Param-{Name}
// headers, the values of the tool's x-mcp-header arguments; 400 and -32020 otherwise.
func TestModernHTTPParamHeaders(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{routeTool("route")}})
	c := e.Session()
	mismatch := func(id, message string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32020,"message":"Header mismatch: ` + message + `"}}`
	}
	ok := func(id, args string) string {
		return modernResult(id, `"content":[{"type":"text","text":"`+strings.ReplaceAll(args, `"`, `\"`)+`"}]`)
	}
	tests := []struct {
		name   string
		args   string
		extra  []string
		status int
		want   string
	}{
		{"both headers", `{"region":"us-west1","shard":3}`, []string{"Mcp-Param-Region", "us-west1", "Mcp-Param-Shard", "3"}, 200,
			ok("1", `{"region":"us-west1","shard":3}`)},
		{"lower-case names", `{"region":"us-west1","shard":3}`, []string{"mcp-param-region", "us-west1", "MCP-PARAM-SHARD", "3.0"}, 200,
			ok("1", `{"region":"us-west1","shard":3}`)},
		{"no annotated argument, no header", `{"query":"q"}`, nil, 200, ok("1", `{"query":"q"}`)},
		// null needs no header; this schema does not allow it, and says so.
		{"null, no header", `{"region":null}`, nil, 200,
			modernResult("1", `"content":[{"type":"text","text":"invalid arguments: region: must be string, got null"}],"isError":true`)},
		{"Base64", `{"region":"Zürich"}`, []string{"Mcp-Param-Region", "=?base64?WsO8cmljaA==?="}, 200, ok("1", `{"region":"Zürich"}`)},
		{"header missing", `{"region":"us-west1"}`, nil, 400,
			mismatch("1", "the Mcp-Param-Region header is required: the body has a value at arguments/region")},
		{"header differs", `{"region":"us-west1"}`, []string{"Mcp-Param-Region", "eu-west1"}, 400,
			mismatch("1", "Mcp-Param-Region header value 'eu-west1' does not match body value 'us-west1'")},
		{"header without a body value", `{"query":"q"}`, []string{"Mcp-Param-Shard", "3"}, 400,
			mismatch("1", "Mcp-Param-Shard header is present but the body has no value at arguments/shard")},
		{"integer differs", `{"shard":3}`, []string{"Mcp-Param-Shard", "4"}, 400,
			mismatch("1", "Mcp-Param-Shard header value '4' does not match body value '3'")},
		{"malformed Base64", `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8?="}, 400,
			mismatch("1", "Mcp-Param-Region: malformed Base64 header value")},
		// The input schema, not the header check, answers arguments of the wrong type.
		{"argument of the wrong type", `{"shard":"3"}`, nil, 200,
			modernResult("1", `"content":[{"type":"text","text":"invalid arguments: shard: must be integer, got string"}],"isError":true`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.For(t).ExpectModern(modernCall("1", "route", tt.args, `{}`), tt.status, tt.want, tt.extra...)
		})
	}

	// The Mcp-Param headers are checked before the version: a request failing both gets -32020.
	body := strings.Replace(modernCall("2", "route", `{"region":"a"}`, `{}`), "2026-07-28", "v999.0.0", 1)
	c.ExpectModern(body, 400, mismatch("2", "the Mcp-Param-Region header is required: the body has a value at arguments/region"),
		"MCP-Protocol-Version", "v999.0.0")

	// A tool added at run time is checked the same way; one without annotations is not.
	if err := e.srv.AddTools(routeTool("late"), tools.Tool{Name: "plain", Handler: routeTool("").Handler}); err != nil {
		t.Fatal(err)
	}
	c.ExpectModern(modernCall("3", "late", `{"region":"a"}`, `{}`), 400,
		mismatch("3", "the Mcp-Param-Region header is required: the body has a value at arguments/region"))
	c.ExpectModern(modernCall("4", "plain", `{"region":"a"}`, `{}`), 200, ok("4", `{"region":"a"}`), "Mcp-Param-Region", "b")
}

// TestLegacyHTTPIgnoresParamHeaders: a 2025-11-25 session has no Mcp-Param headers to check.
func TestLegacyHTTPIgnoresParamHeaders(t *testing.T) {
	t.Parallel()
	e := startHTTP(t, toolgrain.Config{Tools: []tools.Tool{routeTool("route")}})
	c := e.Session()
	c.Initialize()
	r := c.Post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"route","arguments":{"region":"a"}}}`,
		"Mcp-Param-Region", "b")
	if r.Status != 200 || !strings.Contains(r.Body, `"text":"{\"region\":\"a\"}"`) {
		t.Errorf("legacy call: %d %s", r.Status, r.Body)
	}
}

// TestNewServerRejectsBadParamHeader: an x-mcp-header annotation breaking the rules is a
// *tools.ToolSchemaError from NewServer and from AddTools.
func TestNewServerRejectsBadParamHeader(t *testing.T) {
	t.Parallel()
	bad := tools.Tool{Name: "bad", Handler: routeTool("").Handler,
		InputSchema: []byte(`{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string","x-mcp-header":"Id"}}}}`)}
	_, err := toolgrain.NewServer(toolgrain.Config{Tools: []tools.Tool{bad}})
	var schemaErr *tools.ToolSchemaError
	if !errors.As(err, &schemaErr) || schemaErr.Tool != "bad" || schemaErr.Kind != tools.SchemaInput ||
		!strings.Contains(err.Error(), `properties/ids/items: x-mcp-header: allowed only on a property reached from the root through "properties" alone`) {
		t.Errorf("NewServer = %v", err)
	}
	srv, err := toolgrain.NewServer(toolgrain.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.AddTools(bad); !errors.As(err, &schemaErr) {
		t.Errorf("AddTools = %v, want a *tools.ToolSchemaError", err)
	}
}
