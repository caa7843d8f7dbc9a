// Package doccheck_test checks the module's documentation: every relative link and anchor of
// every Markdown file resolves, every Go code block is held by Go code that compiles (an
// Example for the README and the guides), and every exported identifier of the library has a
// doc comment. Its tests run from the module's root, so that paths read as the documents
// write them.
package doccheck_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m)
}
