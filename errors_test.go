package semaphore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

func TestErrors_SayWhichSemaphoreWhatWasAskedAndWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(4, semaphore.WithName("db-conns"))
		require.NoError(t, s.Acquire(context.Background(), 4))
		queue(context.Background(), s, 1, 1, 1)
		err := s.AcquireTimeout(1500*time.Millisecond, 2)
		assert.Equal(t, `semaphore "db-conns": acquire 2 units: timed out after 1.5s, queued behind 3 waiters (0 of 4 units available)`, err.Error())
		s.Break(errors.New("shutting down"))
		assert.Equal(t, `semaphore "db-conns": acquire 1 unit: broken: "shutting down"`, s.Acquire(context.Background(), 1).Error())
		assert.Equal(t, `semaphore "db-conns": broken: "shutting down"`, s.Err().Error())
	})
}

func TestErrors_UnnamedSemaphoreIsStillIdentified(t *testing.T) {
	s := semaphore.New(1)
	msg := s.Acquire(context.Background(), 2).Error()
	assert.Regexp(t, `^unnamed semaphore 0x[0-9a-f]+: acquire 2 units: more than the capacity of 1$`, msg)
	assert.Contains(t, s.String(), strings.SplitN(msg, ":", 2)[0])
}

// Messages count in the singular for one: "1 waiter", "1 unit available".
func TestErrors_SayOneInTheSingular(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := semaphore.New(1, semaphore.WithName("one"))
		require.True(t, s.TryAcquire(1))
		queue(context.Background(), s, 1)
		err := s.AcquireTimeout(time.Second, 1)
		assert.Equal(t, `semaphore "one": acquire 1 unit: timed out after 1s, queued behind 1 waiter (0 of 1 unit available)`, err.Error())
		s.Release(1)
		synctest.Wait()
		s.Release(1)
		assert.Equal(t, `semaphore "one" (1 of 1 unit available, 0 waiting)`, s.String())
	})
}

// Errors: every sentinel is distinct under errors.Is.

func TestErrors_SentinelsAreDistinct(t *testing.T) {
	all := []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull,
		semaphore.ErrTooLarge, semaphore.ErrInsufficientUnits, semaphore.ErrDifferentSemaphore}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}
