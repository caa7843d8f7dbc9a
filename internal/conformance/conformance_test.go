package conformance_test

import (
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
