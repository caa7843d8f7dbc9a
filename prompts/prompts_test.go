package prompts_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/toolgrain/toolgrain/prompts"
)

var nop = prompts.HandlerFunc(func(context.Context, *prompts.GetRequest) (*prompts.GetResult, error) {
	return &prompts.GetResult{}, nil
})

func TestCheck(t *testing.T) {
	set, err := prompts.Compile([]prompts.Prompt{{
		Name:      "p",
		Arguments: []prompts.Argument{{Name: "a", Required: true}, {Name: "b"}},
		Handler:   nop,
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := set.Lookup("p")
	tests := []struct {
		give    string
		want    map[string]string
		wantErr string
	}{
		{`{"a":"1"}`, map[string]string{"a": "1"}, ""},
		{`{"a":"","b":"2"}`, map[string]string{"a": "", "b": "2"}, ""},
		{``, nil, `argument "a": missing required argument`},
		{`null`, nil, `argument "a": missing required argument`},
		{`{"b":"2"}`, nil, `argument "a": missing required argument`},
		{`{"a":"1","c":"3"}`, nil, `argument "c": unknown argument`},
		{`{"a":1}`, nil, `argument "a": must be a string`},
		{`["a"]`, nil, `arguments must be an object of strings`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := p.Check(json.RawMessage(tt.give))
			if tt.wantErr != "" {
				var ae *prompts.ArgumentError
				if !errors.As(err, &ae) || err.Error() != tt.wantErr {
					t.Fatalf("Check = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Check = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestDefinitionErrors(t *testing.T) {
	tests := []struct {
		name string
		give []prompts.Prompt
		want string
	}{
		{"no name", []prompts.Prompt{{Handler: nop}}, `prompt "": empty name`},
		{"no handler", []prompts.Prompt{{Name: "p"}}, `prompt "p": no handler`},
		{"nil handler func", []prompts.Prompt{{Name: "p", Handler: prompts.HandlerFunc(nil)}}, `prompt "p": no handler`},
		{"argument without name", []prompts.Prompt{{Name: "p", Handler: nop, Arguments: []prompts.Argument{{}}}}, `prompt "p": argument 0 has no name`},
		{"argument twice", []prompts.Prompt{{Name: "p", Handler: nop, Arguments: []prompts.Argument{{Name: "a"}, {Name: "a"}}}}, `prompt "p": argument "a" is declared twice`},
		{"duplicate", []prompts.Prompt{{Name: "p", Handler: nop}, {Name: "p", Handler: nop}}, `prompt "p": duplicate`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := prompts.Compile(tt.give)
			var de *prompts.DefinitionError
			if !errors.As(err, &de) || err.Error() != tt.want {
				t.Fatalf("Compile = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestWithAndWithout(t *testing.T) {
	s1, err := prompts.Compile([]prompts.Prompt{{Name: "a", Handler: nop}})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := s1.With(prompts.Prompt{Name: "b", Handler: nop})
	if err != nil || s2.Len() != 2 || s1.Len() != 1 {
		t.Fatalf("With: %v, lens %d %d", err, s2.Len(), s1.Len())
	}
	s3, n := s2.Without("a", "zzz")
	if n != 1 || s3.Len() != 1 || s3.List()[0].Name() != "b" {
		t.Errorf("Without removed %d", n)
	}
	d := s2.List()[0].Descriptor()
	if d.Name != "a" || d.Arguments != nil {
		t.Errorf("descriptor %+v", d)
	}
}
