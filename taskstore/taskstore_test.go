package taskstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgrain/toolgrain/taskstore"
)

// stores runs test against every store of the package, each fresh.
func stores(t *testing.T, test func(t *testing.T, s taskstore.Store)) {
	t.Run("memory", func(t *testing.T) { test(t, taskstore.NewMemory()) })
	t.Run("bolt", func(t *testing.T) {
		b, err := taskstore.OpenBolt(filepath.Join(t.TempDir(), "tasks.db"), taskstore.BoltOptions{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		test(t, b)
	})
}

func record(id string, st taskstore.Status) *taskstore.Record {
	now := time.Date(2026, 7, 28, 10, 30, 0, 123456789, time.UTC)
	return &taskstore.Record{
		ID: id, Owner: "o1", Tool: "slow", Status: st, StatusMessage: "msg",
		CreatedAt: now, UpdatedAt: now.Add(time.Second), TTL: time.Hour, PollInterval: time.Second,
		InputRequests: json.RawMessage(`{"k":{"method":"roots/list"}}`),
		Result:        json.RawMessage(`{"content":[]}`),
		Error:         json.RawMessage(`{"code":-32603,"message":"x"}`),
	}
}

func TestStoreContract(t *testing.T) {
	stores(t, func(t *testing.T, s taskstore.Store) {
		ctx := context.Background()
		if _, err := s.Get(ctx, "nope"); !errors.Is(err, taskstore.ErrNotFound) {
			t.Fatalf("Get(unknown) = %v, want ErrNotFound", err)
		}
		want := record("a", taskstore.Working)
		if err := s.Put(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) || got.TTL != want.TTL ||
			got.PollInterval != want.PollInterval || got.Owner != "o1" || got.Tool != "slow" || got.Status != taskstore.Working ||
			got.StatusMessage != "msg" || string(got.InputRequests) != string(want.InputRequests) ||
			string(got.Result) != string(want.Result) || string(got.Error) != string(want.Error) {
			t.Errorf("Get = %+v, want %+v", got, want)
		}
		if !got.ExpiresAt().Equal(want.CreatedAt.Add(time.Hour)) {
			t.Errorf("ExpiresAt = %v", got.ExpiresAt())
		}
		// Put replaces.
		if err := s.Put(ctx, record("a", taskstore.Completed)); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, "a"); got.Status != taskstore.Completed {
			t.Errorf("after the second Put, status = %s", got.Status)
		}
		_ = s.Put(ctx, record("b", taskstore.Working))
		_ = s.Put(ctx, record("c", taskstore.Failed))
		seen := map[string]bool{}
		if err := s.Scan(ctx, func(r *taskstore.Record) error { seen[r.ID] = true; return nil }); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 3 || !seen["a"] || !seen["b"] || !seen["c"] {
			t.Errorf("Scan saw %v", seen)
		}
		stop := errors.New("stop")
		if err := s.Scan(ctx, func(*taskstore.Record) error { return stop }); !errors.Is(err, stop) {
			t.Errorf("Scan returned %v, want fn's error", err)
		}
		if err := s.Delete(ctx, "a", "c", "never"); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]bool{"a": false, "b": true, "c": false} {
			_, err := s.Get(ctx, id)
			if (err == nil) != want {
				t.Errorf("after Delete, Get(%s) = %v", id, err)
			}
		}
	})
}

func TestStoreConcurrentPuts(t *testing.T) {
	stores(t, func(t *testing.T, s taskstore.Store) {
		ctx := context.Background()
		var wg sync.WaitGroup
		for range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, _ := taskstore.NewID("")
				if err := s.Put(ctx, record(id, taskstore.Working)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		n := 0
		_ = s.Scan(ctx, func(*taskstore.Record) error { n++; return nil })
		if n != 200 {
			t.Errorf("%d records, want 200", n)
		}
	})
}

func TestBoltSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	b, err := taskstore.OpenBolt(path, taskstore.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(context.Background(), record("x", taskstore.Completed)); err != nil {
		t.Fatal(err)
	}
	// The file is the process's: a second open waits, then says who holds it.
	if _, err := taskstore.OpenBolt(path, taskstore.BoltOptions{LockTimeout: 50 * time.Millisecond}); err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Errorf("second open: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = taskstore.OpenBolt(path, taskstore.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.Get(context.Background(), "x")
	if err != nil || got.Status != taskstore.Completed || string(got.Result) != `{"content":[]}` {
		t.Errorf("after reopening: %+v, %v", got, err)
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id, err := taskstore.NewID("")
		if err != nil || len(id) != 26 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") != "" || seen[id] {
			t.Fatalf("NewID = %q, %v", id, err)
		}
		seen[id] = true
		if taskstore.HomeOf(id) != "" {
			t.Fatalf("HomeOf(%q) = %q", id, taskstore.HomeOf(id))
		}
	}
	id, err := taskstore.NewID("node-7")
	if err != nil || !strings.HasPrefix(id, "node-7.") || taskstore.HomeOf(id) != "node-7" {
		t.Errorf("NewID(node-7) = %q, %v; home %q", id, err, taskstore.HomeOf(id))
	}
	tests := []struct {
		give string
		ok   bool
	}{{"", true}, {"a-1", true}, {"UPPER", false}, {"a.b", false}, {strings.Repeat("a", 33), false}}
	for _, tt := range tests {
		if _, err := taskstore.NewID(tt.give); (err == nil) != tt.ok {
			t.Errorf("NewID(%q) error = %v, want ok %v", tt.give, err, tt.ok)
		}
	}
	for _, give := range []string{"x.short", ".aaaaaaaaaaaaaaaaaaaaaaaaaa", "BAD.aaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		if h := taskstore.HomeOf(give); h != "" {
			t.Errorf("HomeOf(%q) = %q, want none", give, h)
		}
	}
}

func TestStatus(t *testing.T) {
	for _, s := range []taskstore.Status{taskstore.Completed, taskstore.Failed, taskstore.Cancelled} {
		if !s.Terminal() || !s.Valid() {
			t.Errorf("%s", s)
		}
	}
	for _, s := range []taskstore.Status{taskstore.Working, taskstore.InputRequired} {
		if s.Terminal() || !s.Valid() {
			t.Errorf("%s", s)
		}
	}
	if taskstore.Status("done").Valid() {
		t.Error("done is not a status")
	}
}
