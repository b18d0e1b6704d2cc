package keyed

import (
	"testing"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/contracttest"
)

// One key's view of the fair limit keeps the core's contract: its calls are
// one flow of the limit, served in the order they come.
func TestInterface_AKeysViewOfTheFairLimitKeepsTheContract(t *testing.T) {
	contracttest.Run(t, func(_ *testing.T, capacity int64) semaphore.Interface {
		f := &flow{limit: newFairLimit(capacity, `limit of keyed "contract"`)}
		f.activate(1, 0)
		return f
	})
}
