package semaphore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

func TestHolderTracking_UntrackedSemaphoreUnitsDoNotAllocate(t *testing.T) {
	s := semaphore.New(1)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		u, _ := s.AcquireUnits(ctx, 1)
		u.Release()
		u, _ = s.TryAcquireUnits(1)
		u.Release()
	})
	assert.Zero(t, allocs, "without tracking a Units that does not escape stays on the stack")
}

func TestContextWithHolderLabel_EmptyLabelShowsTheSiteOnly(t *testing.T) {
	s := semaphore.New(1, semaphore.WithHolderTracking())
	u, err := s.AcquireUnits(semaphore.ContextWithHolderLabel(context.Background(), ""), 1)
	site := above()
	require.NoError(t, err)
	defer u.Release()
	assert.True(t, strings.HasSuffix(headline(s), "(oldest: "+site+")"), headline(s))
}
