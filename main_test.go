package toolgrain_test

import (
	"testing"

	"github.com/toolgrain/toolgrain/internal/mcptest"
)

// The root's tests are its Examples, which godoc shows; the end-to-end tests are in package
// e2e and the documentation checks in internal/doccheck.

func TestMain(m *testing.M) { mcptest.VerifyTestMain(m) }
