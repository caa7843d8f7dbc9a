package middleware_test

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgrain/toolgrain"
	"github.com/toolgrain/toolgrain/tools"
	"github.com/toolgrain/toolgrain/tools/middleware"
)

type echoIn struct {
	Text string `json:"text"`
}

// The call log outermost, so that it also records the calls the rate limit refuses. Ten calls
// of one caller go through at once (the burst); the eleventh is refused with a result the
// client is meant to read, which says when to retry.
func Example() {
	core, logs := observer.New(zap.InfoLevel)
	logger := zap.New(core) // the host's logger
	echo := tools.Tool{
		Name:        "echo",
		Description: "Returns the given text.",
		Handler: tools.Func(func(ctx context.Context, in echoIn) (*tools.Result, error) {
			return tools.TextResult(in.Text), nil
		}),
	}
	srv, err := toolgrain.NewServer(toolgrain.Config{
		Tools:  []tools.Tool{echo},
		Logger: logger,
		Middleware: []tools.Middleware{
			middleware.Log(logger), // one zap line per call: tool, duration, outcome; never arguments
			middleware.RateLimit(middleware.RateLimitConfig{Limit: 5, Burst: 10}), // per caller
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client, err := srv.ConnectInMemory()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx := context.Background()
	if _, err := client.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for i := 1; i <= 11; i++ {
		res, err := client.CallTool(ctx, "echo", echoIn{Text: "hi"})
		if err != nil {
			fmt.Println(err)
			return
		}
		if res.IsError {
			fmt.Println(i, strings.HasPrefix(res.Content[0].Text, middleware.RateLimitedText), string(res.Meta) != "")
		}
	}
	for _, e := range logs.FilterMessage("tool call").All()[9:] {
		fmt.Println(e.Level, e.Message, e.ContextMap()["tool"], e.ContextMap()["outcome"])
	}
	// Output:
	// 11 true true
	// info tool call echo ok
	// info tool call echo tool_error
}
