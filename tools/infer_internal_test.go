package tools

import (
	"context"
	"testing"
)

// TestInferredFlat: an inferred schema of simple members takes the fast path of validation,
// as the same schema written by hand does.
func TestInferredFlat(t *testing.T) {
	type addIn struct {
		A    int    `json:"a"`
		B    int    `json:"b"`
		Note string `json:"note,omitempty"`
	}
	type sleepIn struct {
		MS   int64  `json:"ms" jsonschema:"minimum=0,maximum=600000"`
		Mode string `json:"mode" jsonschema:"enum=a,enum=b"`
		Ptr  *int   `json:"ptr"`
	}
	for name, h := range map[string]Handler{
		"add":   Func(func(context.Context, addIn) (*Result, error) { return nil, nil }),
		"sleep": Func(func(context.Context, sleepIn) (*Result, error) { return nil, nil }),
	} {
		set, err := Compile([]Tool{{Name: name, Handler: h}})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := set.Lookup(name)
		if c.input.sch == nil || c.input.flat == nil {
			t.Errorf("%s: inferred schema %s has no fast path", name, c.def.InputSchema)
		}
	}
}
