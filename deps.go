//go:build tools

package toolgrain

import (
	_ "github.com/asynkron/protoactor-go/actor"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "go.uber.org/goleak"
	_ "go.uber.org/zap"
	_ "go.uber.org/zap/exp/zapslog"
)
