package admission_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

func TestReading_ShowsTheCountResourceAndMemoryAmongTheDetails(t *testing.T) {
	c := admission.New(admission.Resources{Count: 4, Memory: 1000}, admission.WithName("reads"))
	p, err := c.Acquire(context.Background(), "scan", 100)
	require.NoError(t, err)
	defer p.Release()
	r := c.Reading()
	assert.Equal(t, "admission controller", r.Kind)
	assert.Equal(t, "reads", r.Name)
	assert.Equal(t, int64(4), r.Capacity)
	assert.Equal(t, int64(1), r.Held)
	assert.Equal(t, int64(3), r.Available)
	assert.Equal(t, uint64(1), r.Acquired)
	assert.Zero(t, r.Unknown, "a controller counts every number")
	assert.Contains(t, r.Details, semaphore.Detail{Name: "memory in use", Value: "100 of 1000 bytes"})
}

// Held is what the permits hold: more than the capacity after a shrinking
// SetLimits, still counted after Break, when nothing is available.
func TestReading_HeldIsWhatPermitsHoldWhenShrunkAndBroken(t *testing.T) {
	c := admission.New(admission.Resources{Count: 3, Memory: 1000}, admission.WithName("reads"))
	var permits []*admission.Permit
	for range 3 {
		p, err := c.Acquire(context.Background(), "scan", 0)
		require.NoError(t, err)
		permits = append(permits, p)
	}
	c.SetLimits(admission.Resources{Count: 1, Memory: 1000})
	r := c.Reading()
	assert.Equal(t, int64(1), r.Capacity)
	assert.Equal(t, int64(3), r.Held)
	assert.Zero(t, r.Available)
	c.Break(errors.New("closing"))
	r = c.Reading()
	assert.True(t, r.Broken)
	assert.Equal(t, "closing", r.Cause, "the cause as Break was given it")
	assert.Equal(t, int64(3), r.Held)
	permits[0].Release()
	assert.Equal(t, int64(2), c.Reading().Held)
	for _, p := range permits[1:] {
		p.Release()
	}
	assert.Zero(t, c.Reading().Held)
}

func TestReading_TellsTheHeadWaitersWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(admission.Resources{Count: 1, Memory: 1000})
		p, err := c.Acquire(context.Background(), "scan", 0)
		require.NoError(t, err)
		done := make(chan error)
		go func() {
			q, err := c.Acquire(context.Background(), "scan", 0)
			if err == nil {
				q.Release()
			}
			done <- err
		}()
		synctest.Wait()
		time.Sleep(3 * time.Second)
		r := c.Reading()
		assert.Equal(t, 1, r.Waiters)
		assert.Equal(t, uint64(1), r.Queued)
		assert.Equal(t, 3*time.Second, r.HeadWait)
		p.Release()
		require.NoError(t, <-done)
		assert.Zero(t, c.Reading().HeadWait)
	})
}

func TestReading_AGroupSumsItsMembers(t *testing.T) {
	g := admission.NewGroup(admission.Resources{Count: 2, Memory: 1000}, admission.WithName("all"))
	a, b := g.Add("a", 1), g.Add("b\n<i>", 1)
	pa, err := a.Acquire(context.Background(), "x", 10)
	require.NoError(t, err)
	defer pa.Release()
	pb, err := b.Acquire(context.Background(), "y", 10)
	require.NoError(t, err)
	defer pb.Release()
	g.Remove(b)
	r := g.Reading()
	assert.Equal(t, "admission group", r.Kind)
	assert.Equal(t, "all", r.Name)
	assert.Equal(t, int64(4), r.Capacity, "each member's count limit is the group's")
	assert.Equal(t, int64(2), r.Held, "a removed member's permits still hold")
	assert.Equal(t, int64(1), r.Available, "a removed member is broken: nothing of it is available")
	assert.Equal(t, uint64(2), r.Acquired)
	assert.False(t, r.Broken, "a group itself never breaks")
	assert.Contains(t, r.Details, semaphore.Detail{Name: `member "a"`, Value: "1 shares, count 1/2, 0 queued"})
	assert.Contains(t, r.Details, semaphore.Detail{Name: `member "b\n<i>"`, Value: "0 shares, count 1/2, 0 queued, removed"})
	assert.Contains(t, r.Details, semaphore.Detail{Name: "bottleneck", Value: "none"})
}
