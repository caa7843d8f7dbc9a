package middleware

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/time/rate"

	"github.com/toolgrain/toolgrain/tools"
)

// TestLimitersPerCaller: each caller has its own bucket; a refused call says when to retry and
// takes no token.
func TestLimitersPerCaller(t *testing.T) {
	l := newLimiters(RateLimitConfig{Limit: rate.Every(time.Second), Burst: 2, MaxCallers: 10})
	now := time.Unix(1000, 0)
	tests := []struct {
		at       time.Duration
		caller   string
		wantOK   bool
		wantWait time.Duration
	}{
		{0, "alice", true, 0},
		{0, "alice", true, 0},
		{0, "alice", false, time.Second},
		{0, "bob", true, 0},
		{0, "", true, 0},
		{250 * time.Millisecond, "alice", false, 750 * time.Millisecond},
		{time.Second, "alice", true, 0}, // the refusals took nothing
		{time.Second, "alice", false, time.Second},
	}
	for i, tt := range tests {
		wait, ok := l.allow(tt.caller, now.Add(tt.at))
		if ok != tt.wantOK || wait != tt.wantWait {
			t.Errorf("call %d (%s at %v): got (%v, %v), want (%v, %v)", i, tt.caller, tt.at, wait, ok, tt.wantWait, tt.wantOK)
		}
	}
}

// TestLimitersBounded: at most MaxCallers limiters are kept; the least recently seen caller's
// goes first, and that caller starts again with a full burst.
func TestLimitersBounded(t *testing.T) {
	l := newLimiters(RateLimitConfig{Limit: rate.Every(time.Hour), Burst: 1, MaxCallers: 3})
	now := time.Unix(1000, 0)
	for i := range 1000 {
		if _, ok := l.allow(fmt.Sprint("caller-", i), now); !ok {
			t.Fatalf("caller-%d refused on its first call", i)
		}
		if n := l.callers(); n > 3 {
			t.Fatalf("%d limiters kept, want at most 3", n)
		}
	}
	if _, ok := l.allow("caller-999", now); ok {
		t.Error("caller-999, still kept, was allowed a second call")
	}
	l.allow("caller-998", now) // recently seen: caller-997 is now the oldest
	l.allow("new", now)
	if _, ok := l.allow("caller-998", now); ok {
		t.Error("caller-998 lost its limiter though caller-997 was seen less recently")
	}
	if _, ok := l.allow("caller-997", now); !ok {
		t.Error("caller-997's limiter was not the one dropped")
	}
}

func TestRefusedResult(t *testing.T) {
	tests := []struct {
		give     time.Duration
		wantText string
		wantMeta string
	}{
		{750 * time.Millisecond, "Rate limit exceeded for this caller; retry in 750ms", `{"retryAfterMs":750}`},
		{1500*time.Millisecond + 10, "Rate limit exceeded for this caller; retry in 1.501s", `{"retryAfterMs":1501}`},
		{-1, "Rate limit exceeded for this caller; no further calls are allowed", ``},
	}
	for _, tt := range tests {
		r := refused(tt.give)
		if !r.IsError || len(r.Content) != 1 || r.Content[0].Text != tt.wantText || string(r.Meta) != tt.wantMeta {
			t.Errorf("refused(%v) = %+v %s, want %q %s", tt.give, r.Content, r.Meta, tt.wantText, tt.wantMeta)
		}
	}
}

// TestRateLimitZeroLimit: a zero limit allows the burst and then nothing, ever.
func TestRateLimitZeroLimit(t *testing.T) {
	h := RateLimit(RateLimitConfig{Limit: 0, Burst: 1})(tools.HandlerFunc(func(context.Context, *tools.Request) (*tools.Result, error) {
		return tools.TextResult("ran"), nil
	}))
	req := &tools.Request{Tool: "t", Identity: &tools.Identity{Subject: "s"}}
	if r, _ := h.Handle(context.Background(), req); r.IsError {
		t.Fatalf("first call refused: %v", r.Content)
	}
	r, err := h.Handle(context.Background(), req)
	if err != nil || !r.IsError || !strings.HasPrefix(r.Content[0].Text, RateLimitedText) {
		t.Errorf("second call: %+v, %v", r, err)
	}
}

// TestLog: one line per call with tool, duration and outcome, at info or warn; never the
// arguments, the _meta, the result or the error's text. A panic goes on after its line.
func TestLog(t *testing.T) {
	const secret = "SECRET-argument"
	tests := []struct {
		name      string
		handler   func(ctx context.Context) (*tools.Result, error)
		cancel    bool
		wantOut   string
		wantLevel zapcore.Level
		wantPanic bool
	}{
		{"ok", func(context.Context) (*tools.Result, error) { return tools.TextResult(secret), nil }, false, OutcomeOK, zapcore.InfoLevel, false},
		{"public error", func(context.Context) (*tools.Result, error) { return tools.ErrorResult(secret), nil }, false, OutcomeToolError, zapcore.InfoLevel, false},
		{"error", func(context.Context) (*tools.Result, error) { return nil, errors.New(secret) }, false, OutcomeFailed, zapcore.WarnLevel, false},
		{"nothing", func(context.Context) (*tools.Result, error) { return nil, nil }, false, OutcomeFailed, zapcore.WarnLevel, false},
		{"panic", func(context.Context) (*tools.Result, error) { panic(secret) }, false, OutcomePanic, zapcore.WarnLevel, true},
		{"cancelled", func(ctx context.Context) (*tools.Result, error) { <-ctx.Done(); return tools.TextResult(secret), nil }, true, OutcomeCancelled, zapcore.InfoLevel, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			h := Log(zap.New(core))(tools.HandlerFunc(func(ctx context.Context, _ *tools.Request) (*tools.Result, error) {
				return tt.handler(ctx)
			}))
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancel {
				cancel()
			}
			defer cancel()
			func() {
				defer func() {
					if v := recover(); (v != nil) != tt.wantPanic {
						t.Errorf("panic %v, want one: %v", v, tt.wantPanic)
					}
				}()
				_, _ = h.Handle(ctx, &tools.Request{Tool: "lookup", Arguments: []byte(`{"q":"` + secret + `"}`), Meta: []byte(`{"k":"` + secret + `"}`),
					Identity: &tools.Identity{Subject: secret}})
			}()
			entries := logs.AllUntimed()
			if len(entries) != 1 {
				t.Fatalf("%d lines, want 1", len(entries))
			}
			e := entries[0]
			fields := e.ContextMap()
			if e.Message != "tool call" || e.Level != tt.wantLevel || fields["tool"] != "lookup" || fields["outcome"] != tt.wantOut || len(fields) != 3 {
				t.Errorf("got %s %q %v, want %s \"tool call\" tool=lookup outcome=%s and a duration", e.Level, e.Message, fields, tt.wantLevel, tt.wantOut)
			}
			if _, ok := fields["duration"].(time.Duration); !ok {
				t.Errorf("duration %v", fields["duration"])
			}
			if strings.Contains(fmt.Sprint(fields), secret) {
				t.Errorf("the line holds the secret: %v", fields)
			}
		})
	}
}

// TestRateLimitClientApartFromUser: a client acting on its own behalf, whose client_id is a
// user's subject, has a limit of its own: it cannot use up the user's.
func TestRateLimitClientApartFromUser(t *testing.T) {
	h := RateLimit(RateLimitConfig{Limit: rate.Every(time.Hour), Burst: 1})(tools.HandlerFunc(
		func(context.Context, *tools.Request) (*tools.Result, error) { return tools.TextResult("ran"), nil }))
	call := func(id *tools.Identity) bool {
		res, err := h.Handle(context.Background(), &tools.Request{Identity: id})
		return err == nil && !res.IsError
	}
	client := &tools.Identity{Subject: "alice", Claims: map[string][]string{"client_id": {"alice"}}}
	user := &tools.Identity{Subject: "alice", Claims: map[string][]string{"sub": {"alice"}, "client_id": {"web-app"}}}
	if !call(client) || call(client) {
		t.Fatal("the client's own limit")
	}
	if !call(user) {
		t.Error("the client used up the user's limit")
	}
}
