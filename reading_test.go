package semaphore_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

func TestReading_ABrokenSemaphoreNobodyHoldsHoldsNothing(t *testing.T) {
	s := semaphore.New(4, semaphore.WithName("db"))
	s.Break(errors.New("closing"))
	r := s.Reading()
	assert.Equal(t, "semaphore", r.Kind)
	assert.Equal(t, "db", r.Name)
	assert.True(t, r.Broken)
	assert.Equal(t, "closing", r.Cause)
	assert.Equal(t, int64(4), r.Capacity)
	assert.Equal(t, int64(0), r.Available, "nothing is available once broken")
	assert.Equal(t, int64(0), r.Held, "nobody holds anything: not capacity - available")
}

func TestReading_HeldCountsConsumedUnitsAndExceedsAShrunkCapacity(t *testing.T) {
	s := semaphore.New(4)
	require.True(t, s.TryAcquire(3))
	s.Consume(3)
	r := s.Reading()
	assert.Equal(t, int64(6), r.Held, "3 held and 3 consumed")
	assert.Equal(t, int64(0), r.Available)
	s.Resize(2)
	r = s.Reading()
	assert.Equal(t, int64(2), r.Capacity)
	assert.Equal(t, int64(6), r.Held)
	s.Release(6)
	r = s.Reading()
	assert.Equal(t, int64(0), r.Held)
	assert.Equal(t, int64(2), r.Available)
	assert.Equal(t, s.Stats().Held, r.Held)
}

func TestReading_TheZeroSemaphoreReadsWithoutPanicking(t *testing.T) {
	var s semaphore.Semaphore
	r := s.Reading()
	assert.Equal(t, int64(0), r.Capacity)
	assert.Equal(t, int64(0), r.Held)
}

func TestStats_HeldIsWhatDrainWaitsFor(t *testing.T) {
	s := semaphore.New(3)
	require.True(t, s.TryAcquire(2))
	s.Break(nil)
	assert.Equal(t, int64(2), s.Stats().Held)
	s.Release(2)
	assert.Equal(t, int64(0), s.Stats().Held)
}
