package resources_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgrain/toolgrain/resources"
)

var nop = resources.Static("text/plain", "x", nil)

func TestTemplateMatching(t *testing.T) {
	set, err := resources.Compile(nil, []resources.Template{
		{URITemplate: "file:///logs/{day}.txt", Name: "log", Reader: nop},
		{URITemplate: "test://template/{id}/data", Name: "data", Reader: nop},
		{URITemplate: "docs://{+path}", Name: "docs", Reader: nop},
		{URITemplate: "repo://{owner}/{name}", Name: "repo", Reader: nop},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		give     string
		wantVars map[string]string // nil: no match
	}{
		{"file:///logs/2026-01-02.txt", map[string]string{"day": "2026-01-02"}},
		{"file:///logs/a/b.txt", nil},
		{"test://template/123/data", map[string]string{"id": "123"}},
		{"test://template/a%2Fb/data", map[string]string{"id": "a/b"}},
		{"test://template//data", nil},
		{"test://template/1/data/more", nil},
		{"docs://guide/intro.md", map[string]string{"path": "guide/intro.md"}},
		{"repo://toolgrain/engine", map[string]string{"owner": "toolgrain", "name": "engine"}},
		{"test://template/%zz/data", nil},
		{"other://x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, req, ok := set.Resolve(tt.give)
			if tt.wantVars == nil {
				if ok {
					t.Fatalf("matched with %v, want no match", req.Vars)
				}
				return
			}
			if !ok || !reflect.DeepEqual(req.Vars, tt.wantVars) || req.URI != tt.give {
				t.Fatalf("Resolve = %v, %v; want %v", ok, req, tt.wantVars)
			}
		})
	}
}

func TestResolvePrefersFixedResources(t *testing.T) {
	fixed := resources.Static("text/plain", "fixed", nil)
	set, err := resources.Compile(
		[]resources.Resource{{URI: "test://template/1/data", Name: "one", Reader: fixed}},
		[]resources.Template{{URITemplate: "test://template/{id}/data", Name: "data", Reader: nop}},
	)
	if err != nil {
		t.Fatal(err)
	}
	r, req, ok := set.Resolve("test://template/1/data")
	if !ok || req.Vars != nil {
		t.Fatalf("Resolve: %v %v", ok, req)
	}
	res, _ := r.Read(context.Background(), req)
	if res.Contents[0].Text != "fixed" {
		t.Errorf("read %q", res.Contents[0].Text)
	}
}

func TestDefinitionErrors(t *testing.T) {
	tests := []struct {
		name string
		res  []resources.Resource
		tpls []resources.Template
		want string
	}{
		{"empty uri", []resources.Resource{{Name: "a", Reader: nop}}, nil, `resource "": empty URI`},
		{"relative uri", []resources.Resource{{URI: "a/b", Name: "a", Reader: nop}}, nil, `resource "a/b": not an absolute URI`},
		{"no name", []resources.Resource{{URI: "x://a", Reader: nop}}, nil, `resource "x://a": empty name`},
		{"no reader", []resources.Resource{{URI: "x://a", Name: "a"}}, nil, `resource "x://a": no reader`},
		{"nil reader func", []resources.Resource{{URI: "x://a", Name: "a", Reader: resources.ReaderFunc(nil)}}, nil, `resource "x://a": no reader`},
		{"duplicate", []resources.Resource{{URI: "x://a", Name: "a", Reader: nop}, {URI: "x://a", Name: "b", Reader: nop}}, nil, `resource "x://a": duplicate`},
		{"operator", nil, []resources.Template{{URITemplate: "x://{?q}", Name: "t", Reader: nop}}, `operator "?"`},
		{"list", nil, []resources.Template{{URITemplate: "x://{a,b}", Name: "t", Reader: nop}}, `one variable, no modifiers`},
		{"adjacent", nil, []resources.Template{{URITemplate: "x://{a}{b}", Name: "t", Reader: nop}}, `separated by literal text`},
		{"unclosed", nil, []resources.Template{{URITemplate: "x://{a", Name: "t", Reader: nop}}, `unclosed`},
		{"repeated", nil, []resources.Template{{URITemplate: "x://{a}/{a}", Name: "t", Reader: nop}}, `appears twice`},
		{"completion of unknown variable", nil, []resources.Template{{URITemplate: "x://{a}", Name: "t", Reader: nop,
			Complete: map[string]resources.CompleteFunc{"b": nil}}}, `completion for unknown variable "b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resources.Compile(tt.res, tt.tpls)
			var de *resources.DefinitionError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Compile = %v, want a DefinitionError containing %q", err, tt.want)
			}
		})
	}
}

func TestWithAndWithout(t *testing.T) {
	a := []resources.Resource{{URI: "x://a", Name: "a", Reader: nop}}
	s1, err := resources.Compile(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := s1.With([]resources.Resource{{URI: "x://b", Name: "b", Reader: nop}}, []resources.Template{{URITemplate: "x://t/{v}", Name: "t", Reader: nop}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.With(a, nil); err == nil {
		t.Error("adding x://a again succeeded")
	}
	s3, n := s2.Without("x://a", "x://t/{v}", "x://none")
	if n != 2 || len(s3.Resources()) != 1 || len(s3.Templates()) != 0 || s3.Resources()[0].URI() != "x://b" {
		t.Errorf("Without removed %d, left %d resources and %d templates", n, len(s3.Resources()), len(s3.Templates()))
	}
	if len(s1.Resources()) != 1 || len(s2.Resources()) != 2 {
		t.Error("an earlier set changed")
	}
}

func TestHelpers(t *testing.T) {
	if got := resources.Blob("x://b", "image/png", []byte{1, 2, 3}).Contents[0]; got.Blob != "AQID" || got.Text != "" {
		t.Errorf("Blob = %+v", got)
	}
}
