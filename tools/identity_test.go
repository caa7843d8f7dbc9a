package tools_test

import (
	"context"
	"testing"

	"github.com/toolgrain/toolgrain/tools"
)

func TestIdentityContext(t *testing.T) {
	ctx := context.Background()
	if id := tools.IdentityFromContext(ctx); id != nil {
		t.Fatalf("IdentityFromContext(background) = %v", id)
	}
	if got := tools.WithIdentity(ctx, nil); got != ctx {
		t.Error("WithIdentity(ctx, nil) should return ctx unchanged")
	}
	want := &tools.Identity{Subject: "u1", Scopes: []string{"a", "b"}}
	got := tools.IdentityFromContext(tools.WithIdentity(ctx, want))
	if got != want {
		t.Fatalf("IdentityFromContext = %v, want %v", got, want)
	}
	tests := []struct {
		id    *tools.Identity
		scope string
		want  bool
	}{
		{want, "a", true},
		{want, "c", false},
		{nil, "a", false},
	}
	for _, tt := range tests {
		if got := tt.id.HasScope(tt.scope); got != tt.want {
			t.Errorf("%v.HasScope(%q) = %v, want %v", tt.id, tt.scope, got, tt.want)
		}
	}
}
