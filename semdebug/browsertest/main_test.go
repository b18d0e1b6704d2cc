package browsertest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind. Without the
// browser each test skips and says why (chromium), which scripts/test.sh and
// go test -v print.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
