// Package middleware has ready-made [tools.Middleware] for a server's Config.Middleware: a
// per-caller rate limit ([RateLimit]) and a structured call log ([Log]). Each is safe for
// concurrent use and keeps the error model: what it refuses is a public error result the
// client is meant to read, and it never turns a failure into text a client sees.
//
// A typical list, the log outermost so that it also records the calls the limit refuses:
//
//	Middleware: []tools.Middleware{
//		middleware.Log(logger),
//		middleware.RateLimit(middleware.RateLimitConfig{Limit: 5, Burst: 10}),
//	},
package middleware

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/time/rate"

	"github.com/toolgrain/toolgrain/internal/principal"
	"github.com/toolgrain/toolgrain/tools"
)

// DefaultMaxCallers is the number of callers whose limiters a [RateLimit] keeps when
// [RateLimitConfig.MaxCallers] is zero.
const DefaultMaxCallers = 10_000

// RateLimitedText starts the text of the result of a call a [RateLimit] refuses; " retry in
// <duration>" follows when the limit says when a call will be allowed again.
const RateLimitedText = "Rate limit exceeded for this caller;"

// RetryAfterKey is the member of the _meta of a refused call's result that holds, in
// milliseconds, how long the caller should wait before its next call.
const RetryAfterKey = "retryAfterMs"

// RateLimitConfig configures [RateLimit].
type RateLimitConfig struct {
	// Limit is the number of calls per second each caller may make over time; rate.Every(d)
	// is one call every d. rate.Inf means no limit. Zero or negative allows no call beyond
	// Burst, ever.
	Limit rate.Limit
	// Burst is the number of calls a caller may make at once, before Limit paces them. Zero
	// means 1.
	Burst int
	// MaxCallers bounds the callers whose limiters are kept: past it, the limiter of the caller
	// seen least recently is dropped, and that caller starts again with a full Burst. Zero or
	// negative means DefaultMaxCallers.
	MaxCallers int
}

// RateLimit returns a middleware that limits each caller's tool calls with a token bucket of
// golang.org/x/time/rate: Limit calls per second, bursts of Burst, counted over every tool of
// the server.
//
// A caller is the Subject of the call's authenticated [tools.Identity] (HTTP with auth), a
// client acting on its own behalf (its client_id claim is the subject) apart from a user of
// that subject; calls
// without an identity (stdio, HTTP without auth) are one caller, the anonymous one, and share
// one limit. A call over the limit does not run: it gets a public error result (isError) whose
// text is [RateLimitedText] followed by " retry in <duration>" (rounded up to the millisecond)
// and whose _meta holds [RetryAfterKey] in milliseconds; it is not an unexpected failure, so
// OnError does not hear of it. A refused call takes no token: a caller who retries after the
// given time is let through.
//
// The limiters of at most MaxCallers callers are kept in memory, so a stream of new subjects
// cannot make it grow without bound.
func RateLimit(cfg RateLimitConfig) tools.Middleware {
	l := newLimiters(cfg)
	return func(next tools.Handler) tools.Handler {
		return tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (*tools.Result, error) {
			caller := principal.Key(req.Identity) // a user's and a client's subjects apart
			if wait, ok := l.allow(caller, time.Now()); !ok {
				return refused(wait), nil
			}
			return next.Handle(ctx, req)
		})
	}
}

// limiters are the token buckets of the callers seen most recently, oldest at the back.
type limiters struct {
	cfg      RateLimitConfig
	mu       sync.Mutex
	byCaller map[string]*list.Element // of *callerLimit
	order    *list.List
}

func newLimiters(cfg RateLimitConfig) *limiters {
	if cfg.Burst <= 0 {
		cfg.Burst = 1
	}
	if cfg.MaxCallers <= 0 {
		cfg.MaxCallers = DefaultMaxCallers
	}
	return &limiters{cfg: cfg, byCaller: make(map[string]*list.Element), order: list.New()}
}

type callerLimit struct {
	caller string
	lim    *rate.Limiter
}

// allow takes a token of caller's bucket at now, or says how long until one is there (-1:
// never).
func (l *limiters) allow(caller string, now time.Time) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lim *rate.Limiter
	if e, found := l.byCaller[caller]; found {
		l.order.MoveToFront(e)
		lim = e.Value.(*callerLimit).lim
	} else {
		if l.order.Len() >= l.cfg.MaxCallers {
			oldest := l.order.Back()
			l.order.Remove(oldest)
			delete(l.byCaller, oldest.Value.(*callerLimit).caller)
		}
		lim = rate.NewLimiter(l.cfg.Limit, l.cfg.Burst)
		l.byCaller[caller] = l.order.PushFront(&callerLimit{caller: caller, lim: lim})
	}
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return -1, false
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused call takes no token
		if d == rate.InfDuration {
			return -1, false
		}
		return d, false
	}
	return 0, true
}

// callers returns the number of limiters kept, for tests.
func (l *limiters) callers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byCaller)
}

// refused is the result of a call over the limit.
func refused(wait time.Duration) *tools.Result {
	if wait < 0 {
		return tools.ErrorResult(RateLimitedText + " no further calls are allowed")
	}
	wait = (wait + time.Millisecond - 1).Truncate(time.Millisecond)
	r := tools.ErrorResult(fmt.Sprintf("%s retry in %s", RateLimitedText, wait))
	r.Meta, _ = json.Marshal(map[string]int64{RetryAfterKey: wait.Milliseconds()})
	return r
}

// Outcomes of a call, as [Log] names them.
const (
	OutcomeOK        = "ok"         // a result
	OutcomeToolError = "tool_error" // a public error result (isError): validation happened before
	OutcomeFailed    = "failed"     // an error: an unexpected failure, reported to OnError
	OutcomePanic     = "panic"      // a panic: an unexpected failure, reported to OnError
	OutcomeCancelled = "cancelled"  // the call's context ended first: nothing is sent
)

// Log returns a middleware that writes one structured line per tool call on logger, which
// should be the server's Config.Logger: message "tool call", with the fields tool (its name),
// duration (from the middleware's start to its end) and outcome (OutcomeOK, OutcomeToolError,
// OutcomeFailed, OutcomePanic or OutcomeCancelled). Failures and panics are logged at warn
// level, the rest at info. It never logs the arguments, the _meta, the result or the error's
// text (the error goes to OnError, which has it privately), nor the caller. A panic goes on
// after the line is written. A nil logger logs nothing.
//
// The calls it logs are those that reach it: validation feedback is sent before any
// middleware runs, and a middleware before it in the list can answer without calling it.
func Log(logger *zap.Logger) tools.Middleware {
	if logger == nil {
		logger = zap.NewNop()
	}
	return func(next tools.Handler) tools.Handler {
		return tools.HandlerFunc(func(ctx context.Context, req *tools.Request) (res *tools.Result, err error) {
			start := time.Now()
			outcome := OutcomePanic
			defer func() {
				// Also on a panic, which goes on unrecovered: the engine reports it.
				if outcome != OutcomePanic && ctx.Err() != nil {
					outcome = OutcomeCancelled
				}
				level := zapcore.InfoLevel
				if outcome == OutcomeFailed || outcome == OutcomePanic {
					level = zapcore.WarnLevel
				}
				if ce := logger.Check(level, "tool call"); ce != nil {
					ce.Write(zap.String("tool", req.Tool), zap.Duration("duration", time.Since(start)), zap.String("outcome", outcome))
				}
			}()
			res, err = next.Handle(ctx, req)
			switch {
			case err != nil, res == nil: // no result and no error is an unexpected failure too
				outcome = OutcomeFailed
			case res != nil && res.IsError:
				outcome = OutcomeToolError
			default:
				outcome = OutcomeOK
			}
			return res, err
		})
	}
}
