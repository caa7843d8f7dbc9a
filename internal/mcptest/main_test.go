package mcptest_test

import (
	"testing"

	"github.com/toolgrain/toolgrain/internal/mcptest"
)

func TestMain(m *testing.M) { mcptest.VerifyTestMain(m) }
