package fulltest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore/internal/fulltest"
)

// Under -short both skip, saying that the full form runs the test; without
// it they let the test run.
func TestFaultAndLong_SkipUnderShortOnly(t *testing.T) {
	for name, mark := range map[string]func(testing.TB){"Fault": fulltest.Fault, "Long": fulltest.Long} {
		t.Run(name, func(t *testing.T) {
			var ran bool
			inner := t.Run("skips-under-short", func(t *testing.T) {
				mark(t)
				ran = true
			})
			assert.True(t, inner)
			assert.Equal(t, !testing.Short(), ran, "runs unless -short")
		})
	}
}
