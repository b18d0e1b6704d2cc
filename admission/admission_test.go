package admission_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type result struct {
	p   *admission.Permit
	err error
}

// start runs Acquire on its own goroutine and waits, in the bubble, until it has
// been admitted or has queued.
func start(ctx context.Context, c *admission.Controller, op string, memory int64, opts ...admission.PermitOption) <-chan result {
	out := make(chan result, 1)
	go func() {
		p, err := c.Acquire(ctx, op, memory, opts...)
		out <- result{p, err}
	}()
	synctest.Wait()
	return out
}

func ready(ch <-chan result) (result, bool) {
	select {
	case r := <-ch:
		return r, true
	default:
		return result{}, false
	}
}

func mustAcquire(t *testing.T, c *admission.Controller, op string, memory int64) *admission.Permit {
	t.Helper()
	p, err := c.Acquire(context.Background(), op, memory)
	require.NoError(t, err)
	return p
}

// closer records that a parked value was closed.
type closer struct{ closed atomic.Bool }

func (c *closer) Close() error { c.closed.Store(true); return nil }

// park parks p and requires that it worked.
func park(t testing.TB, c *admission.Controller, p *admission.Permit, value io.Closer, opts ...admission.ParkOption) *admission.Parked {
	t.Helper()
	pk, err := c.Park(p, value, opts...)
	require.NoError(t, err)
	return pk
}

func limits(count, memory int64) admission.Resources {
	return admission.Resources{Count: count, Memory: memory}
}

func TestResources_Arithmetic(t *testing.T) {
	a, b := limits(3, 100), limits(1, 150)
	assert.Equal(t, limits(4, 250), a.Add(b))
	assert.Equal(t, limits(2, -50), a.Sub(b), "availability may go negative")
	assert.True(t, a.Covers(limits(3, 100)))
	assert.False(t, a.Covers(b))
	assert.True(t, admission.Resources{}.IsZero())
	assert.Equal(t, "count=2 memory=6144K", limits(2, 6<<20).String(), "units from 10x up, as in the reference dump")
	assert.Equal(t, "count=0 memory=26M", limits(0, 26<<20).String())
}

func TestAcquire_AdmitsAtOnceAndReleaseReturnsEverything(t *testing.T) {
	c := admission.New(limits(2, 100), admission.WithName("reads"))
	p := mustAcquire(t, c, "scan", 40)
	assert.Equal(t, admission.Active, p.State())
	assert.Equal(t, "scan", p.Op())
	assert.Equal(t, limits(1, 40), p.Consumed())
	require.NoError(t, p.Consume(limits(0, 10)))
	assert.Equal(t, limits(1, 50), c.Stats().Held)
	p.Release()
	p.Release() // idempotent
	st := c.Stats()
	assert.Equal(t, admission.Resources{}, st.Held)
	assert.Equal(t, uint64(1), st.AcquiredImmediately)
	assert.Equal(t, 0, st.CurrentPermits)
}

func TestAcquire_FittingNewcomerWaitsBehindANonFittingWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(3, 100), admission.WithName("reads"))
		holder := mustAcquire(t, c, "big", 80)
		large := start(context.Background(), c, "large", 50)
		small := start(context.Background(), c, "small", 10)
		_, ok := ready(small)
		assert.False(t, ok, "10 bytes fit, but the newcomer must not overtake the queued request")
		assert.Equal(t, 2, c.Stats().Waiters)
		holder.Release()
		synctest.Wait()
		l, ok1 := ready(large)
		s, ok2 := ready(small)
		require.True(t, ok1 && ok2, "both are admitted, in order, once the memory is back")
		l.p.Release()
		s.p.Release()
		assert.Equal(t, uint64(1), c.Stats().QueuedBecauseMemory)
	})
}

func TestAcquire_CPUBlockedAdmissionFollowsNeedCPUAndAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(10, 1000), admission.WithName("reads"))
		p := mustAcquire(t, c, "first", 10)
		doneCPU := p.NeedCPU()
		assert.Equal(t, admission.ActiveNeedCPU, p.State())

		second := start(context.Background(), c, "second", 10)
		_, ok := ready(second)
		require.False(t, ok, "one permit needs CPU: admission waits")
		assert.Equal(t, uint64(1), c.Stats().QueuedBecauseCPU)

		doneAwait := p.Await()
		assert.Equal(t, admission.ActiveAwait, p.State())
		synctest.Wait()
		r, ok := ready(second)
		require.True(t, ok, "awaiting I/O, the first no longer blocks admission")

		doneAwait()
		doneAwait() // idempotent
		third := start(context.Background(), c, "third", 10)
		_, ok = ready(third)
		require.False(t, ok, "the await ended: blocked again")

		doneCPU()
		synctest.Wait()
		r3, ok := ready(third)
		require.True(t, ok, "need_cpu ended: admitted")
		assert.Equal(t, admission.Active, p.State())

		blocker := r3.p.NeedCPU()
		fourth := start(context.Background(), c, "fourth", 10)
		c.SetCPUConcurrency(2)
		synctest.Wait()
		r4, ok := ready(fourth)
		require.True(t, ok, "raising the CPU concurrency admits")
		blocker()
		for _, q := range []*admission.Permit{p, r.p, r3.p, r4.p} {
			q.Release()
		}
		st := c.Stats()
		assert.Zero(t, st.NeedCPUPermits)
		assert.Zero(t, st.AwaitingPermits)
	})
}

func TestAcquire_AlwaysAdmitsOneWhenNoCountIsInUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(4, 100), admission.WithName("reads"))
		tracker := c.Track("buffers")
		require.NoError(t, tracker.Consume(limits(0, 150)))
		assert.Equal(t, int64(-50), c.Stats().Limits.Memory-c.Stats().Held.Memory)

		p := mustAcquire(t, c, "first", 30)
		assert.Equal(t, admission.Active, p.State(), "memory is negative but no count is in use: admitted")

		second := start(context.Background(), c, "second", 30)
		_, ok := ready(second)
		assert.False(t, ok, "with one admitted, memory must suffice again")
		p.Release()
		synctest.Wait()
		r, ok := ready(second)
		require.True(t, ok)
		r.p.Release()
		tracker.Release()
	})
}

func TestPark_EvictedExactlyWhenAQueuedRequestNeedsItsResources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"))
		idle := mustAcquire(t, c, "paged", 60)
		value := &closer{}
		var reason atomic.Value
		pk := park(t, c, idle, value, admission.OnEvict(func(r admission.EvictReason) { reason.Store(r) }))
		assert.Equal(t, admission.Inactive, idle.State())
		assert.Equal(t, 1, c.Stats().Inactive)
		assert.False(t, pk.Evicted(), "nobody waits: parked permits are kept")

		p := mustAcquire(t, c, "next", 10)
		assert.True(t, pk.Evicted(), "count was exhausted: the parked permit made room")
		assert.True(t, value.closed.Load(), "its value was closed")
		assert.Equal(t, admission.EvictedForAdmission, reason.Load())
		assert.Equal(t, admission.Evicted, idle.State())
		v, ok := pk.Resume()
		assert.Nil(t, v)
		assert.False(t, ok)
		assert.Equal(t, uint64(1), c.Stats().PermitEvictions)
		p.Release()
		idle.Release()
	})
}

func TestPark_NeverEvictedWhenEvictionCannotLetTheHeadIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(2, 100), admission.WithName("reads"))
		busy := mustAcquire(t, c, "busy", 10)
		idle := mustAcquire(t, c, "paged", 10)
		pk := park(t, c, idle, &closer{})
		huge := start(context.Background(), c, "huge", 500)
		_, ok := ready(huge)
		require.False(t, ok)
		assert.False(t, pk.Evicted(), "500 bytes never fit while busy holds count: evicting would only waste work")
		busy.Release()
		synctest.Wait()
		assert.True(t, pk.Evicted(), "with busy gone, evicting leaves no count in use: always admit one")
		r, ok := ready(huge)
		require.True(t, ok)
		r.p.Release()
		idle.Release()
	})
}

func TestPark_NeverEvictedWhenOnlyCPUHoldsTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(5, 100), admission.WithName("reads"))
		busy := mustAcquire(t, c, "busy", 10)
		idle := mustAcquire(t, c, "paged", 10)
		done := busy.NeedCPU()
		pk := park(t, c, idle, &closer{})
		waiting := start(context.Background(), c, "waiting", 10)
		_, ok := ready(waiting)
		require.False(t, ok)
		assert.False(t, pk.Evicted(), "evicting cannot help a CPU-bound queue")
		done()
		synctest.Wait()
		r, ok := ready(waiting)
		require.True(t, ok)
		v, resumed := pk.Resume()
		assert.True(t, resumed)
		assert.NotNil(t, v)
		assert.Equal(t, admission.Active, idle.State())
		for _, p := range []*admission.Permit{busy, idle, r.p} {
			p.Release()
		}
		assert.Zero(t, c.Stats().PermitEvictions)
	})
}

func TestPark_RegisteringWhileSomeoneWaitsEvictsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"))
		p := mustAcquire(t, c, "paged", 10)
		waiting := start(context.Background(), c, "waiting", 10)
		pk := park(t, c, p, &closer{})
		synctest.Wait()
		assert.True(t, pk.Evicted())
		r, ok := ready(waiting)
		require.True(t, ok)
		r.p.Release()
		p.Release()
	})
}

func TestReadmit_RestoresBaseResources(t *testing.T) {
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	p := mustAcquire(t, c, "paged", 40)
	pk := park(t, c, p, &closer{})
	require.True(t, c.EvictOne())
	assert.True(t, pk.Evicted())
	assert.Equal(t, admission.Resources{}, c.Stats().Held, "eviction released the base")
	assert.ErrorIs(t, p.Consume(limits(0, 1)), admission.ErrEvicted, "an evicted permit cannot be used")

	require.NoError(t, p.Readmit(context.Background()))
	assert.Equal(t, admission.Active, p.State())
	assert.Equal(t, limits(1, 40), c.Stats().Held, "readmission took the base again")
	require.NoError(t, p.Readmit(context.Background()), "readmitting an active permit does nothing")
	assert.Equal(t, limits(1, 40), c.Stats().Held)
	p.Release()
	assert.Equal(t, admission.Resources{}, c.Stats().Held)
	assert.False(t, c.EvictOne())
}

func TestPark_TTLEvictsAfterTheTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(2, 100), admission.WithName("reads"))
		p := mustAcquire(t, c, "paged", 10)
		reasons := make(chan admission.EvictReason, 1)
		pk := park(t, c, p, &closer{}, admission.WithTTL(time.Minute), admission.OnEvict(func(r admission.EvictReason) { reasons <- r }))
		time.Sleep(59 * time.Second)
		assert.False(t, pk.Evicted())
		time.Sleep(time.Second)
		synctest.Wait()
		assert.True(t, pk.Evicted())
		assert.Equal(t, admission.EvictedByTTL, <-reasons)
		assert.Equal(t, uint64(1), c.Stats().TimeEvictions)
		p.Release()
	})
}

func TestEvictWhere_EvictsMatchingOperations(t *testing.T) {
	c := admission.New(limits(5, 100), admission.WithName("reads"))
	var pks []*admission.Parked
	var permits []*admission.Permit
	for _, op := range []string{"a", "b", "a"} {
		p := mustAcquire(t, c, op, 1)
		permits = append(permits, p)
		pks = append(pks, park(t, c, p, &closer{}))
	}
	assert.Equal(t, 2, c.EvictWhere(func(op string) bool { return op == "a" }))
	assert.True(t, pks[0].Evicted())
	assert.False(t, pks[1].Evicted())
	assert.True(t, pks[2].Evicted())
	assert.Equal(t, 1, c.Stats().Inactive)

	c.Break(nil)
	assert.True(t, pks[1].Evicted(), "Break evicted the last parked permit")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := c.Drain(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "evicted permits are still held until released")
	require.ErrorIs(t, err, semaphore.ErrTimedOut)
	for _, p := range permits {
		p.Release()
	}
	require.NoError(t, c.Drain(context.Background()))
}

func TestAcquire_QueueLengthShedsTheExtraRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		c := admission.New(limits(1, 100), admission.WithName("reads"), admission.WithMaxWaiters(2),
			admission.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		p := mustAcquire(t, c, "holder", 10)
		first := start(context.Background(), c, "q1", 10)
		second := start(context.Background(), c, "q2", 10)
		_, err := c.Acquire(context.Background(), "q3", 10)
		require.ErrorIs(t, err, semaphore.ErrQueueFull)
		assert.Contains(t, err.Error(), `admission "reads": admit "q3" (memory 10B): `+semaphore.ErrQueueFull.Error()+` (2 queued;`)
		assert.Equal(t, uint64(1), c.Stats().Rejected)
		assert.Zero(t, c.Stats().Shed, "refused at once, never queued")
		assert.Contains(t, logs.String(), "wait queue overload", "a dump was logged")

		p.Release()
		synctest.Wait()
		r1, ok := ready(first)
		require.True(t, ok, "the queued ones are admitted in order")
		r1.p.Release()
		synctest.Wait()
		r2, ok := ready(second)
		require.True(t, ok)
		r2.p.Release()
	})
}

func TestAcquire_PreemptiveSheddingWithFactorOneShedsEveryQueuedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"), admission.WithShedFactor(1.0))
		p := mustAcquire(t, c, "holder", 10)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		queued := start(ctx, c, "queued", 10)
		exempt := start(ctx, c, "exempt", 10, admission.NotShed())
		noDeadline := start(context.Background(), c, "no-deadline", 10)
		time.Sleep(time.Second)
		p.Release()
		synctest.Wait()
		r, ok := ready(queued)
		require.True(t, ok)
		require.ErrorIs(t, r.err, semaphore.ErrShed)
		assert.Contains(t, r.err.Error(), "shed at the head of the queue: 59s of its 1m0s left")
		e, ok := ready(exempt)
		require.True(t, ok)
		require.NoError(t, e.err, "NotShed is admitted instead")
		e.p.Release()
		synctest.Wait()
		n, ok := ready(noDeadline)
		require.True(t, ok)
		require.NoError(t, n.err, "no deadline, no budget to judge")
		n.p.Release()
		assert.Equal(t, uint64(1), c.Stats().Shed)

		direct, err := c.Acquire(ctx, "direct", 10)
		require.NoError(t, err, "a request admitted at once is never shed")
		direct.Release()
	})
}

func TestRequestMemory_SerializeLimitBlessesOnePermitAndQueuesTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(10, 100), admission.WithName("reads"), admission.WithSerializeLimit(2))
		a := mustAcquire(t, c, "a", 10)
		b := mustAcquire(t, c, "b", 10)
		require.NoError(t, a.RequestMemory(context.Background(), 100), "below the limit: granted (120 used)")
		require.NoError(t, b.RequestMemory(context.Background(), 100), "crosses 200: granted, and b is blessed")

		waiting := make(chan error, 1)
		go func() { waiting <- a.RequestMemory(context.Background(), 10) }()
		synctest.Wait()
		assert.Equal(t, admission.WaitingForMemory, a.State(), "past the limit only the blessed permit grows")
		require.NoError(t, b.RequestMemory(context.Background(), 10), "the blessed one keeps going")
		assert.Equal(t, uint64(1), c.Stats().QueuedForMemory)

		newcomer := start(context.Background(), c, "new", 1)
		_, ok := ready(newcomer)
		assert.False(t, ok, "past the serialize limit nothing is admitted")

		b.Release() // 110 used: below the serialize limit, the waiting request is served
		synctest.Wait()
		require.NoError(t, <-waiting)
		_, ok = ready(newcomer)
		require.False(t, ok, "120 of 100 bytes in use: still no memory for a newcomer")
		a.Release()
		synctest.Wait()
		r, ok := ready(newcomer)
		require.True(t, ok)
		r.p.Release()
		assert.Equal(t, admission.Resources{}, c.Stats().Held)
	})
}

func TestPark_MemoryRequestOfAParkedPermitFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(10, 100), admission.WithName("reads"), admission.WithSerializeLimit(1))
		a := mustAcquire(t, c, "a", 10)
		b := mustAcquire(t, c, "b", 10)
		require.NoError(t, b.RequestMemory(context.Background(), 100)) // b blessed
		waiting := make(chan error, 1)
		go func() { waiting <- a.RequestMemory(context.Background(), 10) }()
		synctest.Wait()
		park(t, c, a, &closer{})
		assert.ErrorIs(t, <-waiting, admission.ErrEvicted)
		park(t, c, b, &closer{}) // loses the blessing
		a.Release()
		b.Release()
		require.NoError(t, c.Drain(context.Background()))
	})
}

func TestConsume_KillLimitFailsOncePerPermit(t *testing.T) {
	c := admission.New(limits(10, 100), admission.WithName("reads"), admission.WithKillLimit(2))
	a := mustAcquire(t, c, "a", 50)
	b := mustAcquire(t, c, "b", 50)
	require.NoError(t, a.Consume(limits(0, 100)), "200 in use: at the limit, not past it")
	err := a.Consume(limits(0, 1))
	require.ErrorIs(t, err, admission.ErrMemoryLimit)
	assert.Contains(t, err.Error(), `consume "a" (memory 1B): memory kill limit reached (200B in use of 200B)`)
	assert.ErrorIs(t, a.Consume(limits(0, 1)), admission.ErrMemoryLimit)
	assert.ErrorIs(t, b.Consume(limits(0, 5)), admission.ErrMemoryLimit)
	assert.ErrorIs(t, b.RequestMemory(context.Background(), 5), admission.ErrMemoryLimit)
	assert.Equal(t, uint64(2), c.Stats().Killed, "counted once per permit")
	assert.Equal(t, int64(200), c.Stats().Held.Memory, "consumption never passed the limit")
	a.Return(limits(0, 100))
	assert.Panics(t, func() { a.Return(limits(0, 1)) }, "returning more than consumed is detected")
	assert.PanicsWithValue(t, `admission "reads": Permit("a").Return(count=0 memory=-1B): negative resources`, func() { a.Return(limits(0, -1)) })
	a.Release()
	b.Release()
}

func TestSetLimits_RaisingAdmitsAWaiterQueuedAtNegativeAvailability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(2, 100), admission.WithName("reads"))
		p := mustAcquire(t, c, "a", 50)
		require.NoError(t, p.Consume(limits(0, 100)))
		waiting := start(context.Background(), c, "b", 50)
		_, ok := ready(waiting)
		require.False(t, ok, "memory is at -50")
		c.SetLimits(limits(2, 300))
		synctest.Wait()
		r, ok := ready(waiting)
		require.True(t, ok)
		c.SetLimits(limits(1, 10))
		assert.Equal(t, limits(2, 200), c.Stats().Held, "permits keep what they hold")
		r.p.Release()
		p.Release()
	})
}

func TestAcquire_ContextErrorsAndTheHeadLeaving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		c := admission.New(limits(2, 100), admission.WithName("reads"), admission.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		p := mustAcquire(t, c, "holder", 80)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		head := start(ctx, c, "head", 50)
		behind := start(context.Background(), c, "behind", 10)
		time.Sleep(time.Second)
		synctest.Wait()
		r, ok := ready(head)
		require.True(t, ok)
		require.ErrorIs(t, r.err, context.DeadlineExceeded)
		require.ErrorIs(t, r.err, semaphore.ErrTimedOut)
		assert.Contains(t, r.err.Error(), `admit "head" (memory 50B): `+semaphore.ErrTimedOut.Error()+` after 1s, queued behind 0`)
		b, ok := ready(behind)
		require.True(t, ok, "the head left: the one behind fits")
		assert.Contains(t, logs.String(), "timed out")
		assert.Equal(t, uint64(1), c.Stats().TimedOut)

		done, stop := context.WithCancel(context.Background())
		stop()
		_, err := c.Acquire(done, "late", 1)
		assert.ErrorIs(t, err, context.Canceled)
		b.p.Release()
		p.Release()
	})
}

func TestDo_ReleasesOnEveryPath(t *testing.T) {
	c := admission.New(limits(1, 100), admission.WithName("reads"))
	boom := errors.New("boom")
	err := c.Do(context.Background(), "op", 10, func(ctx context.Context, p *admission.Permit) error {
		assert.Equal(t, limits(1, 10), p.Consumed())
		return boom
	})
	assert.ErrorIs(t, err, boom)
	assert.Panics(t, func() {
		_ = c.Do(context.Background(), "op", 10, func(context.Context, *admission.Permit) error { panic("in fn") })
	})
	assert.Equal(t, admission.Resources{}, c.Stats().Held)
	assert.Zero(t, c.Stats().CurrentPermits)
}

func TestBreak_FailsWaitersAndNewRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"))
		p := mustAcquire(t, c, "holder", 10)
		waiting := start(context.Background(), c, "waiting", 10)
		cause := errors.New("node shutting down")
		c.Break(cause)
		synctest.Wait()
		r, ok := ready(waiting)
		require.True(t, ok)
		assert.ErrorIs(t, r.err, semaphore.ErrBroken)
		assert.ErrorIs(t, r.err, cause)
		_, err := c.Acquire(context.Background(), "late", 1)
		assert.ErrorIs(t, err, cause)
		p.Release()
	})
}

func TestBreakThenDrain_WaitsForEveryPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"))
		p := mustAcquire(t, c, "holder", 10)
		idle := c.Track("idle")
		waiting := start(context.Background(), c, "waiting", 10)
		c.Break(nil)
		drained := make(chan error, 1)
		go func() { drained <- c.Drain(context.Background()) }()
		synctest.Wait()
		r, ok := ready(waiting)
		require.True(t, ok)
		assert.ErrorIs(t, r.err, semaphore.ErrBroken)
		select {
		case <-drained:
			t.Fatal("Drain returned while permits are held")
		default:
		}
		_, err := c.Acquire(context.Background(), "late", 1)
		assert.ErrorIs(t, err, semaphore.ErrBroken)
		p.Release()
		synctest.Wait()
		select {
		case <-drained:
			t.Fatal("Drain returned while the tracking permit is held")
		default:
		}
		idle.Release()
		require.NoError(t, <-drained)

		c2 := admission.New(limits(1, 1), admission.WithName("other"))
		held := mustAcquire(t, c2, "held", 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = c2.Drain(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.Equal(t, `admission "other": drain: 1 permit still held: context deadline exceeded`, err.Error())
		_, ok = semaphore.OutcomeOf(err)
		assert.False(t, ok, "Drain ends no request")
		held.Release()
	})
}

func TestDrain_DoesNotStopAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(1, 100), admission.WithName("reads"))
		require.NoError(t, c.Drain(context.Background()), "nothing held: at once")
		p := mustAcquire(t, c, "first", 10)
		drained := make(chan error, 1)
		go func() { drained <- c.Drain(context.Background()) }()
		synctest.Wait()
		waiting := start(context.Background(), c, "second", 10)
		synctest.Wait()
		p.Release()
		synctest.Wait()
		r, ok := ready(waiting)
		require.True(t, ok, "admitted while Drain waits")
		require.NoError(t, r.err)
		select {
		case <-drained:
			t.Fatal("Drain returned while the second permit is held")
		default:
		}
		r.p.Release()
		require.NoError(t, <-drained)
		_, err := c.Acquire(context.Background(), "after", 1)
		require.NoError(t, err, "Drain left the controller admitting")
	})
}

func TestDrain_CancelledSaysHowManyPermitsAreHeld(t *testing.T) {
	c := admission.New(limits(2, 100), admission.WithName("reads"))
	a, b := mustAcquire(t, c, "a", 1), mustAcquire(t, c, "b", 1)
	cause := errors.New("gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	err := c.Drain(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, cause)
	assert.NotErrorIs(t, err, semaphore.ErrTimedOut)
	assert.Equal(t, `admission "reads": drain: 2 permits still held: context canceled: "gave up"`, err.Error())
	a.Release()
	b.Release()
	require.NoError(t, c.Drain(context.Background()))
}

func TestDiagnostics_NameTheBottleneckAndGroupPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(limits(2, 64<<20), admission.WithName("reads"))
		a := mustAcquire(t, c, "scan", 40<<20)
		b := mustAcquire(t, c, "get", 1<<20)
		done := b.NeedCPU()
		q1 := start(context.Background(), c, "get", 1<<20)
		q2 := start(context.Background(), c, "scan", 2<<20)
		dump := c.Diagnostics(2)
		lines := strings.Split(dump, "\n")
		assert.Equal(t, `Controller "reads" with 2/2 count and 41M/64M memory resources, dumping permit diagnostics:`, lines[0])
		assert.Equal(t, "Identified bottleneck(s): CPU, concurrency", lines[1])
		assert.Equal(t, "permits count   memory  op/state", lines[2])
		assert.Equal(t, `1       1       40M     "scan"/active`, lines[3])
		assert.Equal(t, `1       1       1024K   "get"/active/need_cpu`, lines[4])
		assert.Equal(t, "2       0       0B      permits omitted for brevity", lines[5])
		assert.Equal(t, "4       2       41M     total", lines[6])
		assert.Equal(t, "Stats:", lines[7])
		assert.Contains(t, dump, "queued_for_admission: 2\n")
		assert.Contains(t, dump, "need_cpu_permits: 1\n")
		assert.Contains(t, c.Diagnostics(0), `"get"/waiting_for_admission`)
		done()
		a.Release()
		b.Release()
		synctest.Wait()
		for _, ch := range []<-chan result{q1, q2} {
			r := <-ch
			require.NoError(t, r.err)
			r.p.Release()
		}
	})
}

func TestDiagnostics_AutomaticDumpsAreRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		c := admission.New(limits(1, 100), admission.WithName("reads"), admission.WithMaxWaiters(1),
			admission.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), admission.WithDumpInterval(time.Minute))
		p := mustAcquire(t, c, "holder", 10)
		q := start(context.Background(), c, "q", 10)
		for range 5 {
			_, err := c.Acquire(context.Background(), "shed", 10)
			require.ErrorIs(t, err, semaphore.ErrQueueFull)
		}
		assert.Equal(t, 1, strings.Count(logs.String(), `msg="admission: wait queue overload"`), "one dump per interval")
		time.Sleep(time.Minute)
		_, err := c.Acquire(context.Background(), "shed", 10)
		require.ErrorIs(t, err, semaphore.ErrQueueFull)
		assert.Equal(t, 2, strings.Count(logs.String(), `msg="admission: wait queue overload"`))
		assert.Contains(t, logs.String(), `Trigger permit: count=0, memory=0B, op=\"shed\"`)
		p.Release()
		synctest.Wait()
		(<-q).p.Release()
	})
}

func TestNew_PanicsOnInvalidOptions(t *testing.T) {
	assert.PanicsWithValue(t, `admission "x": WithCPUConcurrency(0): must be at least 1`, func() {
		admission.New(limits(1, 1), admission.WithName("x"), admission.WithCPUConcurrency(0))
	})
	assert.Panics(t, func() { admission.New(limits(-1, 1), admission.WithName("x")) })
	assert.Panics(t, func() { admission.New(limits(1, 1), admission.WithName("x"), admission.WithKillLimit(-1)) })
	c := admission.New(limits(1, 1), admission.WithName("x"))
	assert.Panics(t, func() { _, _ = c.Acquire(context.Background(), "op", -1) })
	assert.Panics(t, func() { c.SetCPUConcurrency(0) })
}

func TestState_Names(t *testing.T) {
	for s, name := range map[admission.State]string{
		admission.WaitingForAdmission: "waiting_for_admission", admission.WaitingForMemory: "waiting_for_memory",
		admission.Active: "active", admission.ActiveNeedCPU: "active/need_cpu", admission.ActiveAwait: "active/await",
		admission.Inactive: "inactive", admission.Evicted: "evicted", admission.Aborted: "aborted",
	} {
		assert.Equal(t, name, s.String())
	}
}

// Err and Stats.Broken report the break as a semaphore's do: nil and false until
// Break, then an error that names the controller and matches semaphore.ErrBroken
// and the cause.
func TestErr_ReportsTheBreakLikeTheSemaphores(t *testing.T) {
	c := admission.New(admission.Resources{Count: 1}, admission.WithName("reads"))
	require.NoError(t, c.Err())
	assert.False(t, c.Stats().Broken)
	cause := errors.New("shutting down")
	c.Break(cause)
	err := c.Err()
	require.ErrorIs(t, err, semaphore.ErrBroken)
	require.ErrorIs(t, err, cause)
	assert.Equal(t, `admission "reads": broken: "shutting down"`, err.Error())
	assert.True(t, c.Stats().Broken)
	var zero admission.Controller
	assert.Panics(t, func() { _ = zero.Err() })
}

// Stats counts each admission, each permit and each reason for queuing exactly
// once: a sequence of known calls gives known counters.
func TestStats_CountsEachPermitAdmissionAndQueueReasonOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := admission.New(admission.Resources{Count: 1, Memory: 100}, admission.WithName("reads"))
		first, err := c.Acquire(context.Background(), "a", 10)
		require.NoError(t, err)
		tracked := c.Track("t")
		done := make(chan *admission.Permit, 1)
		go func() {
			p, err := c.Acquire(context.Background(), "b", 10)
			if err == nil {
				done <- p
			}
		}()
		synctest.Wait()
		st := c.Stats()
		assert.Equal(t, uint64(1), st.Acquired)
		assert.Equal(t, uint64(1), st.AcquiredImmediately)
		assert.Equal(t, uint64(1), st.QueuedForAdmission)
		assert.Equal(t, uint64(1), st.QueuedBecauseCount)
		assert.Zero(t, st.QueuedBecauseMemory)
		assert.Equal(t, uint64(3), st.TotalPermits, "two Acquires and a Track")
		first.Release()
		second := <-done
		st = c.Stats()
		assert.Equal(t, uint64(2), st.Acquired)
		assert.Equal(t, uint64(1), st.AcquiredImmediately)
		assert.Equal(t, uint64(3), st.TotalPermits)
		second.Release()
		tracked.Release()
	})
}
