package admission_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
)

// evicted returns a permit of c that was parked and evicted.
func evicted(t *testing.T, c *admission.Controller, memory int64) *admission.Permit {
	t.Helper()
	p := mustAcquire(t, c, "paged", memory)
	park(t, c, p, &closer{})
	require.True(t, c.EvictOne())
	require.Equal(t, admission.Evicted, p.State())
	return p
}

func TestReadmit_ConcurrentCallsTakeTheBaseExactlyOnce(t *testing.T) {
	c := admission.New(limits(100, 1<<20), admission.WithName("reads"), admission.WithCPUConcurrency(2))
	stop := make(chan struct{})
	defer backgroundN(c, stop, 3).Wait() // contention on the lock widens any gap between check and act
	defer close(stop)
	for i := range 2000 {
		p := evicted(t, c, 10)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		gate := make(chan struct{})
		for j := range errs {
			wg.Go(func() {
				<-gate
				errs[j] = p.Readmit(context.Background())
			})
		}
		close(gate)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				require.ErrorIs(t, err, admission.ErrEvicted, "round %d", i)
			}
		}
		require.Equal(t, limits(1, 10), p.Consumed(), "round %d: the base is held once", i)
		require.Equal(t, int64(1), c.Stats().Held.Count, "round %d", i)
		p.Release()
		require.Zero(t, c.Stats().Held.Count, "round %d", i)
	}
}

func TestReadmit_SecondCallWhileTheFirstWaitsFailsClearly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"))
		p := evicted(t, c, 10)
		holder := mustAcquire(t, c, "holder", 10)
		first := make(chan error, 1)
		go func() { first <- p.Readmit(context.Background()) }()
		synctest.Wait()
		require.Equal(t, admission.WaitingForAdmission, p.State())
		err := p.Readmit(context.Background())
		require.ErrorIs(t, err, admission.ErrEvicted)
		assert.Contains(t, err.Error(), `readmit "paged" (memory 10B): permit inactive or evicted: already being readmitted by another call`)
		assert.ErrorIs(t, p.Consume(limits(0, 1)), admission.ErrEvicted, "not usable until readmitted")
		holder.Release()
		synctest.Wait()
		require.NoError(t, <-first)
		require.NoError(t, p.Readmit(context.Background()), "active now: the same outcome")
		assert.Equal(t, limits(1, 10), c.Stats().Held)
		p.Release()
	})
}

func TestReadmit_ReleaseRacingReadmitLeavesNothingHeld(t *testing.T) {
	c := admission.New(limits(100, 1<<20), admission.WithName("reads"), admission.WithCPUConcurrency(2))
	stop := make(chan struct{})
	defer backgroundN(c, stop, 3).Wait()
	defer close(stop)
	for i := range 2000 {
		p := evicted(t, c, 10)
		gate := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for j := range errs {
			wg.Go(func() {
				<-gate
				errs[j] = p.Readmit(context.Background())
			})
		}
		wg.Go(func() {
			<-gate
			p.Release()
		})
		close(gate)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				require.True(t, errors.Is(err, admission.ErrReleased) || errors.Is(err, admission.ErrEvicted), "round %d: %v", i, err)
			}
		}
		require.Equal(t, admission.Resources{}, p.Consumed(), "round %d: a released permit holds nothing", i)
		st := c.Stats()
		require.Zero(t, st.Held.Count, "round %d", i)
		require.Equal(t, 1, st.CurrentPermits, "round %d: only the churn permit is left", i)
	}
}

func TestReadmit_ReleaseWhileQueuedFailsTheReadmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"))
		p := evicted(t, c, 10)
		holder := mustAcquire(t, c, "holder", 10)
		res := make(chan error, 1)
		go func() { res <- p.Readmit(context.Background()) }()
		synctest.Wait()
		p.Release()
		err := <-res
		require.ErrorIs(t, err, admission.ErrReleased)
		assert.Contains(t, err.Error(), `readmit "paged" (memory 10B): permit released while waiting`)
		holder.Release()
		assert.Equal(t, admission.Resources{}, c.Stats().Held)
		assert.Equal(t, admission.Released, p.State())
	})
}
