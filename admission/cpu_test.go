package admission_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
)

func TestCPUMarks_ParkedPermitsMarksDoNotCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(10, 1000), admission.WithName("reads"), admission.WithCPUConcurrency(1))
		p := mustAcquire(t, c, "paged", 10)
		done := p.NeedCPU() // the documented pattern: a mark held for the whole of Do
		pk := park(t, c, p, &closer{})
		assert.Zero(t, c.Stats().NeedCPUPermits, "a parked permit's mark does not count")
		q := start(context.Background(), c, "other", 10)
		r, ok := ready(q)
		require.True(t, ok, "a parked permit must not hold admission back for CPU")
		require.NoError(t, r.err)
		assert.False(t, pk.Evicted())
		r.p.Release()

		_, resumed := pk.Resume()
		require.True(t, resumed)
		assert.Equal(t, admission.ActiveNeedCPU, p.State())
		assert.Equal(t, 1, c.Stats().NeedCPUPermits, "resumed: the mark counts again")
		blocked := start(context.Background(), c, "blocked", 10)
		_, ok = ready(blocked)
		require.False(t, ok, "the resumed permit needs CPU again")
		done()
		synctest.Wait()
		r, ok = ready(blocked)
		require.True(t, ok)
		r.p.Release()
		p.Release()
	})
}

func TestCPUMarks_ParkingAMarkedPermitLetsCPUBlockedWaitersIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(10, 1000), admission.WithName("reads"))
		p := mustAcquire(t, c, "paged", 10)
		done := p.NeedCPU()
		q := start(context.Background(), c, "waiting", 10)
		_, ok := ready(q)
		require.False(t, ok)
		park(t, c, p, &closer{})
		synctest.Wait()
		r, ok := ready(q)
		require.True(t, ok, "Park dropped the only CPU mark: the waiter is admitted")
		r.p.Release()
		done()
		p.Release()
	})
}

func TestCPUMarks_EvictedPermitWithAMarkIsReadmittedAndCountsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 1000), admission.WithName("reads"), admission.WithCPUConcurrency(1))
		p := mustAcquire(t, c, "paged", 10)
		done := p.NeedCPU()
		pk := park(t, c, p, &closer{})
		other := start(context.Background(), c, "other", 10) // needs the only count: evicts p
		r, ok := ready(other)
		require.True(t, ok, "eviction helps: the queue is held by count, not by the parked mark")
		require.NoError(t, r.err)
		require.True(t, pk.Evicted())
		assert.Equal(t, admission.Evicted, p.State())
		assert.Zero(t, c.Stats().NeedCPUPermits)
		r.p.Release()

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, p.Readmit(ctx), "an evicted permit's own mark must not block its readmission")
		assert.Equal(t, admission.ActiveNeedCPU, p.State())
		assert.Equal(t, 1, c.Stats().NeedCPUPermits, "readmitted: the mark counts again")
		done()
		assert.Zero(t, c.Stats().NeedCPUPermits)
		p.Release()
	})
}

func TestCPUMarks_AwaitTakenWhileParkedCountsFromResume(t *testing.T) {
	c := admission.New(limits(10, 1000), admission.WithName("reads"))
	p := mustAcquire(t, c, "paged", 10)
	pk := park(t, c, p, &closer{})
	done := p.NeedCPU()
	wait := p.Await()
	st := c.Stats()
	assert.Zero(t, st.NeedCPUPermits)
	assert.Zero(t, st.AwaitingPermits)
	_, ok := pk.Resume()
	require.True(t, ok)
	st = c.Stats()
	assert.Equal(t, 1, st.NeedCPUPermits)
	assert.Equal(t, 1, st.AwaitingPermits)
	assert.Equal(t, admission.ActiveAwait, p.State())
	park(t, c, p, &closer{})
	wait()
	done() // released while parked: nothing to take off the counts
	st = c.Stats()
	assert.Zero(t, st.NeedCPUPermits)
	assert.Zero(t, st.AwaitingPermits)
	p.Release()
	assert.Zero(t, c.Stats().NeedCPUPermits)
}
