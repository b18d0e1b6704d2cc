package semaphore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind. It serves the
// internal tests too: both test packages build into one binary, which has one
// TestMain.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
