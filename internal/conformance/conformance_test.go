package conformance_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolgrain/toolgrain/internal/conformance"
	"github.com/toolgrain/toolgrain/prompts"
	"github.com/toolgrain/toolgrain/resources"
	"github.com/toolgrain/toolgrain/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFixturesCompile: the fixture set is valid, every tool and prompt has the description the
// suite requires, and the names are the ones its scenarios call.
func TestFixturesCompile(t *testing.T) {
	set, err := tools.Compile(conformance.Tools())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
		"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
		"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
		"json_schema_2020_12_tool", "test_reconnection"} {
		c, ok := set.Lookup(name)
		if !ok || c.Descriptor().Description == "" {
			t.Errorf("tool %s missing or without a description", name)
		}
	}
	res, err := resources.Compile(conformance.Resources(), conformance.Templates())
	if err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"test://static-text", "test://static-binary", "test://watched-resource", "test://template/123/data"} {
		if _, _, ok := res.Resolve(uri); !ok {
			t.Errorf("resource %s not served", uri)
		}
	}
	ps, err := prompts.Compile(conformance.Prompts())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps.List() {
		if p.Descriptor().Description == "" {
			t.Errorf("prompt %s has no description", p.Name())
		}
	}
	if ps.Len() != 4 {
		t.Errorf("%d prompts, want 4", ps.Len())
	}
}

// TestHeaderFixture: the tool http-custom-header-server-validation exercises — the first listed
// whose top-level properties carry x-mcp-header, and in it the first of type string — is
// test_x_mcp_header's region, mirrored into Mcp-Param-Region; the scenario calls it with only
// that argument, which must succeed.
func TestHeaderFixture(t *testing.T) {
	var triggers conformance.Triggers
	set, err := tools.Compile(append(conformance.Tools(), conformance.ModernTools(&triggers)...))
	if err != nil {
		t.Fatal(err)
	}
	var picked *tools.Compiled
	for _, c := range set.List() {
		var schema struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(c.Descriptor().InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		for _, p := range schema.Properties {
			if _, ok := p["x-mcp-header"]; ok && picked == nil {
				picked = c
			}
		}
	}
	if picked == nil || picked.Name() != "test_x_mcp_header" {
		t.Fatalf("the scenario picks %v, want test_x_mcp_header", picked)
	}
	want := []tools.HeaderParam{{Name: "Region", Path: []string{"region"}, Type: "string"}}
	if got := picked.HeaderParams(); !reflect.DeepEqual(got, want) {
		t.Errorf("HeaderParams() = %+v, want %+v", got, want)
	}
	args, feedback := picked.ValidateInput(json.RawMessage(`{"region":"=?base64?SGVsbG8="}`))
	if feedback != nil {
		t.Fatalf("feedback: %+v", feedback)
	}
	res, err := picked.Run(context.Background(), &tools.Request{Tool: picked.Name(), Arguments: args})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "region==?base64?SGVsbG8=" {
		t.Errorf("Run = %+v, %v", res, err)
	}
}
