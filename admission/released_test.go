package admission_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

func TestRelease_IsTerminalAtEveryEntryPoint(t *testing.T) {
	c := admission.New(limits(2, 100), admission.WithName("reads"), admission.WithCPUConcurrency(1))
	p := mustAcquire(t, c, "scan", 10)
	require.NoError(t, p.Consume(limits(0, 5)))
	p.Release()
	assert.Equal(t, admission.Released, p.State())
	assert.Equal(t, admission.Resources{}, p.Consumed())

	err := p.Consume(limits(0, 1))
	require.ErrorIs(t, err, admission.ErrReleased)
	assert.Equal(t, `admission "reads": consume "scan" (memory 1B): permit released`, err.Error())
	assert.ErrorIs(t, p.RequestMemory(context.Background(), 1), admission.ErrReleased)
	pk, err := c.Park(p, &closer{})
	assert.Nil(t, pk)
	assert.ErrorIs(t, err, admission.ErrReleased)
	assert.ErrorIs(t, p.Readmit(context.Background()), admission.ErrReleased)
	p.Return(limits(0, 5)) // Release already gave it back: nothing to do, no panic
	p.ReleaseBase()
	p.Release()

	st := c.Stats()
	assert.Equal(t, admission.Resources{}, st.Held, "nothing was taken after Release")
	assert.Zero(t, st.CurrentPermits)
	assert.Equal(t, admission.Released, p.State())
}

func TestNeedCPU_AfterReleaseCountsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(4, 100), admission.WithName("reads"), admission.WithCPUConcurrency(1))
		p := mustAcquire(t, c, "late", 10)
		p.Release()
		done := p.NeedCPU() // a goroutine that outlived Do
		wait := p.Await()
		assert.Zero(t, c.Stats().NeedCPUPermits)
		assert.Zero(t, c.Stats().AwaitingPermits)
		q := start(context.Background(), c, "next", 10)
		r, ok := ready(q)
		require.True(t, ok, "a released permit's mark must not hold admission")
		require.NoError(t, r.err)
		wait()
		done()
		r.p.Release()
		assert.Zero(t, c.Stats().NeedCPUPermits)
	})
}

func TestNeedCPU_MarkTakenBeforeReleaseIsDroppedByRelease(t *testing.T) {
	c := admission.New(limits(4, 100), admission.WithName("reads"))
	p := mustAcquire(t, c, "scan", 10)
	done := p.NeedCPU()
	wait := p.Await()
	assert.Equal(t, 1, c.Stats().AwaitingPermits)
	p.Release()
	assert.Zero(t, c.Stats().NeedCPUPermits)
	assert.Zero(t, c.Stats().AwaitingPermits)
	wait()
	done()
	assert.Zero(t, c.Stats().NeedCPUPermits, "the late done functions do nothing")
	assert.Zero(t, c.Stats().AwaitingPermits)
	q := mustAcquire(t, c, "next", 10)
	q.Release()
}

func TestRequestMemory_ReleaseFailsEveryPendingRequestAndNothingLeaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(10, 100), admission.WithName("reads"), admission.WithSerializeLimit(1))
		a := mustAcquire(t, c, "a", 10)
		b := mustAcquire(t, c, "b", 10)
		require.NoError(t, b.RequestMemory(context.Background(), 100), "crosses the limit: b is blessed")
		results := make(chan error, 3)
		for range 3 {
			go func() { results <- a.RequestMemory(context.Background(), 10) }()
		}
		synctest.Wait()
		assert.Equal(t, 3, c.Stats().MemoryWaiters, "several requests of one permit may wait")
		assert.Equal(t, admission.WaitingForMemory, a.State())
		a.Release()
		synctest.Wait()
		for range 3 {
			err := <-results
			require.ErrorIs(t, err, admission.ErrReleased)
			assert.Contains(t, err.Error(), `request memory "a" (memory 10B): permit released while waiting`)
		}
		b.Release()
		synctest.Wait()
		st := c.Stats()
		assert.Equal(t, admission.Resources{}, st.Held, "no request was granted to the released permit")
		assert.Zero(t, st.MemoryWaiters)
	})
}

func TestPark_FailsEveryPendingMemoryRequestAndNothingIsGrantedWhileParked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(10, 100), admission.WithName("reads"), admission.WithSerializeLimit(1))
		a := mustAcquire(t, c, "a", 10)
		b := mustAcquire(t, c, "b", 10)
		require.NoError(t, b.RequestMemory(context.Background(), 100))
		results := make(chan error, 2)
		for range 2 {
			go func() { results <- a.RequestMemory(context.Background(), 10) }()
		}
		synctest.Wait()
		pk := park(t, c, a, &closer{})
		for range 2 {
			require.ErrorIs(t, <-results, admission.ErrEvicted)
		}
		b.Release() // below the limit: a grant to a parked permit would happen now
		synctest.Wait()
		assert.Equal(t, admission.Inactive, a.State(), "still parked")
		assert.Equal(t, limits(1, 10), c.Stats().Held, "only a's base")
		_, ok := pk.Resume()
		require.True(t, ok)
		a.Release()
		assert.Equal(t, admission.Resources{}, c.Stats().Held)
	})
}

func TestRequestMemory_SeveralPendingRequestsOfOnePermitAreGrantedInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(10, 100), admission.WithName("reads"), admission.WithSerializeLimit(1))
		a := mustAcquire(t, c, "a", 10)
		b := mustAcquire(t, c, "b", 10)
		require.NoError(t, b.RequestMemory(context.Background(), 100))
		first, second := make(chan error, 1), make(chan error, 1)
		go func() { first <- a.RequestMemory(context.Background(), 10) }()
		synctest.Wait()
		go func() { second <- a.RequestMemory(context.Background(), 20) }()
		synctest.Wait()
		b.Release() // 20 in use: both fit below the limit of 100
		synctest.Wait()
		require.NoError(t, <-first)
		require.NoError(t, <-second)
		assert.Equal(t, admission.Active, a.State(), "active once no request is pending")
		assert.Equal(t, limits(1, 40), a.Consumed())
		a.Release()
		assert.Equal(t, admission.Resources{}, c.Stats().Held)
	})
}

func TestPark_FailsForAPermitThatIsNotActive(t *testing.T) {
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	p := mustAcquire(t, c, "paged", 10)
	value := &closer{}
	park(t, c, p, value)
	_, err := c.Park(p, &closer{})
	require.ErrorIs(t, err, admission.ErrEvicted, "already parked")
	assert.Contains(t, err.Error(), `park "paged" (memory 10B): permit inactive or evicted: the permit is inactive, not active`)
	require.True(t, c.EvictOne())
	_, err = c.Park(p, &closer{})
	require.ErrorIs(t, err, admission.ErrEvicted, "evicted")
	assert.True(t, value.closed.Load())
	p.Release()
	other := admission.New(limits(1, 1), admission.WithName("other"))
	q := mustAcquire(t, other, "q", 1)
	assert.PanicsWithValue(t, `admission "reads": Park("q"): the permit belongs to controller "other"`, func() { _, _ = c.Park(q, nil) })
	q.Release()
}

func TestBreak_NamesEachWaitersOwnRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"), admission.WithSerializeLimit(1))
		a := mustAcquire(t, c, "a", 10)
		require.NoError(t, a.RequestMemory(context.Background(), 100)) // blessed, past the limit
		b := c.Track("b")
		mem := make(chan error, 1)
		go func() { mem <- b.RequestMemory(context.Background(), 7) }()
		queued := start(context.Background(), c, "q", 5)
		c.Break(nil)
		synctest.Wait()
		err := <-mem
		require.ErrorIs(t, err, semaphore.ErrBroken)
		assert.Equal(t, `admission "reads": request memory "b" (memory 7B): `+semaphore.ErrBroken.Error(), err.Error())
		r := <-queued
		assert.Equal(t, `admission "reads": admit "q" (memory 5B): `+semaphore.ErrBroken.Error(), r.err.Error())
		a.Release()
		b.Release()
	})
}
