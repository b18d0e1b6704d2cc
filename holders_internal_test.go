package semaphore

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func holderCount(s *Semaphore) int {
	s.diag.mu.Lock()
	defer s.diag.mu.Unlock()
	return s.diag.holders.Len()
}

func TestHolderTracking_RecordsOfCollectedUnitsAreSwept(t *testing.T) {
	s := New(1, WithHolderTracking())
	for range 10 {
		for range 1000 {
			u, err := s.AcquireUnits(context.Background(), 1)
			require.NoError(t, err)
			u.Release()
		}
		runtime.GC()
	}
	assert.Less(t, holderCount(s), 2000, "the list holds the Units of about the last sweep interval, not all 10000")
	assert.Positive(t, holderCount(s))
}
