package browsertest

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs no test without the browser, outside CI: go test then reports
// the package "[no tests to run]" rather than a plain ok, which would read like
// a pass, and says why in one line (shown by go test run in this directory, and
// with -v).
func TestMain(m *testing.M) {
	if chromiumPath() == "" && os.Getenv("CI") != "true" {
		fmt.Println("semdebug/browsertest: the browser test did not run: chromium is not installed (" + installHint + ")")
		flag.Parse()
		if err := flag.Set("test.run", "^$"); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m)
}
